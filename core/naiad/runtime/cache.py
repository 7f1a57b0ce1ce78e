"""The on-disk caches: compiled kernels and autotuning choices.

Location: ``$NAIAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/naiad``, else ``~/.cache/naiad``.

Layout::

    <root>/kernels/<key[:2]>/<key>/<name>.<stage>   one file per stage (text or bytes)
    <root>/kernels/<key[:2]>/<key>/meta.json        written last: name, binary stage, metadata,
                                                      each stage's file, kind and sha256, and the
                                                      readable key components
    <root>/autotune/<key>.json                        a tuned config and its timings

Every file is written to a temporary name in its final directory and moved into place with
``os.replace`` (atomic on POSIX and Windows), so concurrent processes never see a half-written
file; ``meta.json`` lists checksums, so an entry whose files are truncated, garbage or from a
different writer fails verification and is recompiled (and overwritten), never a crash.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger("naiad.cache")

FORMAT = 1
_naiad_source_hash: str | None = None
_warned_unwritable = False


class CacheWarning(UserWarning):
    """The on-disk cache could not be written; naiad goes on without it."""


def cache_dir() -> Path:
    """The cache root, from the environment at the time of the call."""
    explicit = os.environ.get("NAIAD_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "naiad"


def naiad_source_hash() -> str:
    """sha256 of every Python source file of the ``naiad`` package (computed once per process):
    any change to the compiler invalidates every cached kernel."""
    global _naiad_source_hash
    if _naiad_source_hash is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
        _naiad_source_hash = h.hexdigest()
    return _naiad_source_hash


# -- what identifies a kernel's source: see fingerprint.py -------------------------------------
from .fingerprint import function_fingerprint, stable_repr  # noqa: E402,F401  (re-exported)


def digest_of(components: dict[str, Any]) -> str:
    """sha256 hex of a JSON rendering of plain components (sorted keys)."""
    text = json.dumps(components, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# -- atomic file writes -------------------------------------------------------------------------
def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory + os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _warn_unwritable(exc: OSError) -> None:
    global _warned_unwritable
    if not _warned_unwritable:
        _warned_unwritable = True
        warnings.warn(f"naiad: cannot write the cache under {cache_dir()} ({exc}); compiled "
                      f"kernels will not be reused across processes", CacheWarning, stacklevel=4)


# -- kernels ------------------------------------------------------------------------------------
def _safe_stage_name(stage: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in stage)


def kernel_dir(key: str) -> Path:
    return cache_dir() / "kernels" / key[:2] / key


def load_kernel(key: str) -> dict | None:
    """``{"name", "asm", "binary_stage", "metadata"}`` of a verified entry, or None (absent or
    corrupt; a corrupt entry is logged and will be overwritten by the next store)."""
    directory = kernel_dir(key)
    meta_path = directory / "meta.json"
    try:
        raw = meta_path.read_bytes()
    except OSError:
        return None
    try:
        meta = json.loads(raw)
        if meta.get("format") != FORMAT or meta.get("key") != key:
            raise ValueError("format or key mismatch")
        asm = {}
        for stage, info in meta["stages"].items():
            data = (directory / info["file"]).read_bytes()
            if hashlib.sha256(data).hexdigest() != info["sha256"]:
                raise ValueError(f"checksum mismatch in {info['file']}")
            asm[stage] = data.decode("utf-8") if info["kind"] == "text" else data
        return {"name": meta["name"], "asm": asm, "binary_stage": meta["binary_stage"],
                "metadata": meta["metadata"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        log.info("naiad: corrupt cache entry %s (%s); recompiling", directory, exc)
        return None


def store_kernel(key: str, name: str, asm: dict, binary_stage: str, metadata: dict,
                 described: dict | None = None) -> bool:
    """Write one compiled kernel. Returns False (and stores nothing) when an artifact is neither
    text nor bytes or the metadata is not JSON (tuples come back as lists); warns once when the
    directory is not writable."""
    stages = {}
    payload = {}
    for stage, artifact in asm.items():
        if isinstance(artifact, str):
            data, kind = artifact.encode("utf-8"), "text"
        elif isinstance(artifact, (bytes, bytearray, memoryview)):
            data, kind = bytes(artifact), "bytes"
        else:
            return False
        fname = f"{_safe_stage_name(name)}.{_safe_stage_name(stage)}"
        stages[stage] = {"file": fname, "kind": kind, "sha256": hashlib.sha256(data).hexdigest()}
        payload[fname] = data
    meta = {"format": FORMAT, "key": key, "name": name, "binary_stage": binary_stage,
            "metadata": metadata, "stages": stages, "key_components": described or {}}
    try:
        meta_bytes = json.dumps(meta, indent=1, sort_keys=True).encode()
    except (TypeError, ValueError):  # metadata that JSON cannot hold: memory cache only
        return False
    directory = kernel_dir(key)
    try:
        for fname, data in payload.items():
            atomic_write(directory / fname, data)
        atomic_write(directory / "meta.json", meta_bytes)
    except OSError as exc:
        _warn_unwritable(exc)
        return False
    return True


# -- autotuning ---------------------------------------------------------------------------------
def autotune_path(key: str) -> Path:
    return cache_dir() / "autotune" / f"{key}.json"


def load_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def store_json(path: Path, value: dict) -> bool:
    try:
        atomic_write(path, json.dumps(value, indent=1, sort_keys=True, default=str).encode())
    except OSError as exc:
        _warn_unwritable(exc)
        return False
    return True
