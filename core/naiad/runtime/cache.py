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
Directories are private (0700) and what is read back is checked for who could have written it,
what kind of file it is and how large (:mod:`naiad.runtime.cache_safety`).
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

from . import cache_safety as _safety
from .fingerprint import (  # noqa: F401  (re-exported)
    fingerprint_of, function_fingerprint, stable_repr)

log = logging.getLogger("naiad.cache")

FORMAT = 1
_naiad_source_hash: str | None = None
_warned_unwritable = False


class CacheWarning(UserWarning):
    """The on-disk cache could not be written, or is not trusted (another user could have
    written it); naiad goes on without it."""


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


def digest_of(components: dict[str, Any]) -> str:
    """sha256 hex of a JSON rendering of plain components (sorted keys)."""
    text = json.dumps(components, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# -- trust and atomic file writes -----------------------------------------------------------------
_warned_unsafe: set[str] = set()


def _trusted(target: Path) -> tuple[bool, bytes | None]:
    """``(usable, HMAC secret or None)`` for reading or writing ``target`` below the cache root:
    not usable (and a warning, once per reason) when another user could have written there or
    the HMAC secret is unsafe (see :mod:`naiad.runtime.cache_safety`)."""
    try:
        _safety.check_directories(cache_dir(), target)
        key_path = _safety.hmac_key_path()
        return True, (_safety.hmac_key(key_path) if key_path is not None else None)
    except (_safety.UnsafeCacheError, OSError) as exc:
        reason = str(exc)
        if reason not in _warned_unsafe:
            _warned_unsafe.add(reason)
            warnings.warn(f"naiad: not using the on-disk cache: {reason}. Another user could "
                          f"have placed code there; make the cache directory yours and private "
                          f"(chmod 700) or point NAIAD_CACHE_DIR elsewhere", CacheWarning,
                          stacklevel=4)
        log.warning("naiad: cache not used: %s", reason)
        return False, None


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file (mode 0600) in the same directory +
    os.replace; missing directories below the cache root are created 0700."""
    root = cache_dir()
    if path.parent == root or root in path.parents:
        _safety.make_private_dirs(root, path.parent)
    else:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    """``{"name", "asm", "binary_stage", "metadata"}`` of a verified entry, or None (absent,
    corrupt, invalid or untrusted; such an entry is logged and overwritten by the next store)."""
    directory = kernel_dir(key)
    usable, secret = _trusted(directory)
    if not usable:
        return None
    try:
        raw = _safety.read_regular_file(directory / "meta.json", _safety.MAX_JSON_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.info("naiad: unreadable cache entry %s (%s); recompiling", directory, exc)
        return None
    try:
        meta = _safety.loads_bounded(raw)
        _safety.validate_meta(meta, key, FORMAT)
        if secret is not None:
            _safety.verify(meta, secret)
        if meta.get("key_components") and digest_of(meta["key_components"]) != key:
            raise ValueError("key_components do not hash to the key")
        asm = {}
        for stage, info in meta["stages"].items():
            data = _safety.read_regular_file(directory / info["file"])
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
    text nor bytes or the metadata is not JSON (tuples come back as lists), or the cache is not
    trusted; warns once when the directory is not writable."""
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
    directory = kernel_dir(key)
    usable, secret = _trusted(directory)
    if not usable:
        return False
    try:
        meta = json.loads(json.dumps(meta))    # what a reader will see (tuples become lists)
        if secret is not None:
            meta["hmac"] = _safety.sign(meta, secret)
        meta_bytes = json.dumps(meta, indent=1, sort_keys=True).encode()
    except (TypeError, ValueError):  # metadata that JSON cannot hold: memory cache only
        return False
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
    """A JSON object stored by :func:`store_json`, or None (absent, invalid, unsigned when
    signing is on, or in an untrusted directory)."""
    usable, secret = _trusted(path.parent)
    if not usable:
        return None
    try:
        value = _safety.loads_bounded(_safety.read_regular_file(path, _safety.MAX_JSON_BYTES))
        if not isinstance(value, dict):
            return None
        if secret is not None:
            _safety.verify(value, secret)
    except (OSError, ValueError):
        return None
    value.pop("hmac", None)
    return value


def store_json(path: Path, value: dict) -> bool:
    usable, secret = _trusted(path.parent)
    if not usable:
        return False
    try:
        value = json.loads(json.dumps(value, default=str))
        if secret is not None:
            value["hmac"] = _safety.sign(value, secret)
        atomic_write(path, json.dumps(value, indent=1, sort_keys=True).encode())
    except OSError as exc:
        _warn_unwritable(exc)
        return False
    return True
