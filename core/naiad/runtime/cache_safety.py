"""Why the on-disk cache can trust what it reads: who may have written it, and what a file may be.

naiad computes cache keys from public inputs, and a GPU backend loads a cached cubin/hsaco as it
is, so anyone who can write the cache directory could make another user run their code. The
defences, each small:

* **Ownership and mode.** Directories are created 0700. Before reading (or writing) an entry,
  every directory from the cache root down to it must be owned by the current user and writable
  by nobody else (group-writable is accepted only for the user's own primary group, as under a
  user-private-group umask of 002). Otherwise naiad warns once and does not use the cache.
* **Optional HMAC.** With ``NAIAD_CACHE_HMAC=1`` (secret in
  ``$XDG_CONFIG_HOME/naiad/cache-hmac.key``, made 0600 on first use) or ``NAIAD_CACHE_HMAC=<path
  of a key file>``, ``meta.json`` carries an HMAC-SHA256 of its content under a per-user secret;
  since ``meta.json`` lists every stage file's sha256, that authenticates the whole entry. An
  entry without a valid HMAC is recompiled and overwritten.
* **Only regular files, bounded.** Files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked
  with ``fstat`` (a FIFO or device never blocks a launch, a symlink is never followed), must be
  owned by the user and no larger than a limit; JSON is size- and depth-bounded before parsing.
* **Validated metadata.** ``meta.json`` is checked field by field (types, file names confined to
  the entry directory, the binary stage present, launch parameters in range): a bad field makes
  the entry "corrupt", so it is recompiled, never a launch that fails every time.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path

#: largest stage file / JSON file read back from the cache (bytes)
MAX_STAGE_BYTES = 512 << 20
MAX_JSON_BYTES = 4 << 20
#: deepest nesting of brackets accepted in a JSON file of the cache
MAX_JSON_DEPTH = 64

_HAS_UIDS = hasattr(os, "getuid")
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_BINARY", 0))
_SAFE_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


class UnsafeCacheError(ValueError):
    """A cache directory or file that another user could have written (the message says why)."""


# -- ownership and mode ---------------------------------------------------------------------------
def unsafe_reason(path: Path, st: os.stat_result) -> str | None:
    """Why ``path`` (a directory or file of the cache) might hold another user's data, or None."""
    if not _HAS_UIDS:
        return None
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{path} is owned by uid {st.st_uid}, not by you (uid {uid})"
    if st.st_mode & stat.S_IWOTH:
        return f"{path} is writable by every user (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_mode & stat.S_IWGRP and st.st_gid != os.getgid():
        return (f"{path} is writable by group {st.st_gid} (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), which is not your own group")
    return None


def check_directories(root: Path, target: Path) -> None:
    """Raise :class:`UnsafeCacheError` unless ``root`` and every existing directory below it on
    the way to ``target`` belong to the current user and nobody else can write them. The root
    may be a symlink (to a private place); directories below it must be real directories."""
    try:
        st = os.stat(root)
    except (FileNotFoundError, NotADirectoryError):   # nothing there yet (writes will tell)
        return
    reason = unsafe_reason(root, st)
    if reason is None and not stat.S_ISDIR(st.st_mode):
        reason = f"{root} is not a directory"
    if reason is not None:
        raise UnsafeCacheError(reason)
    path = root
    for part in target.relative_to(root).parts:
        path = path / part
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        reason = unsafe_reason(path, st)
        if reason is None and not stat.S_ISDIR(st.st_mode):
            reason = f"{path} is not a directory"
        if reason is not None:
            raise UnsafeCacheError(reason)


def make_private_dirs(root: Path, target: Path) -> None:
    """Create ``target`` (below ``root``) and any missing directory on the way, each 0700
    (``Path.mkdir(parents=True)`` would give the parents the umask's mode)."""
    for missing in reversed([p for p in (root, *root.parents) if not p.exists()]):
        _mkdir_private(missing)
    path = root
    for part in target.relative_to(root).parts:
        path = path / part
        _mkdir_private(path)


def _mkdir_private(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


# -- reading ----------------------------------------------------------------------------------------
def read_regular_file(path: Path, limit: int = MAX_STAGE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of the current user no larger than
    ``limit``; ``OSError``/``ValueError`` otherwise. Never blocks on a FIFO and never follows a
    symlink."""
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        reason = unsafe_reason(path, st)
        if reason is not None:
            raise UnsafeCacheError(reason)
        if st.st_size > limit:
            raise ValueError(f"{path.name} is larger than {limit} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise ValueError(f"{path.name} is larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")


def loads_bounded(data: bytes, limit: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH):
    """``json.loads`` for cache files: ValueError for more than ``limit`` bytes or nesting
    deeper than ``max_depth`` (checked before parsing: deep JSON never reaches the parser's
    recursion)."""
    if len(data) > limit:
        raise ValueError(f"JSON larger than {limit} bytes")
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b'""', data)):
        depth += 1 if bracket in b"[{" else -1
        if depth > max_depth:
            raise ValueError(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(data)
    except RecursionError:   # belt and braces: the scan above should have refused it
        raise ValueError("JSON nested too deeply") from None


# -- validation of meta.json ------------------------------------------------------------------------
def _require(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"meta.json: {what}")


def _is_int(value) -> bool:
    return type(value) is int


def validate_meta(meta, key: str, fmt: int) -> None:
    """Raise ValueError naming the first field of ``meta`` that a trustworthy entry for ``key``
    could not have (so the entry is recompiled instead of breaking launches)."""
    _require(isinstance(meta, dict), "not an object")
    _require(meta.get("format") == fmt and _is_int(meta.get("format")), "format mismatch")
    _require(meta.get("key") == key, "key mismatch")
    name = meta.get("name")
    _require(isinstance(name, str) and name.isidentifier(), "name is not an identifier")
    stages = meta.get("stages")
    _require(isinstance(stages, dict) and stages, "stages missing")
    files = set()
    for stage, info in stages.items():
        _require(isinstance(info, dict), f"stage {stage!r} is not an object")
        fname = info.get("file")
        _require(isinstance(fname, str) and bool(_SAFE_FILE_NAME.match(fname))
                 and fname != "meta.json" and fname not in files,
                 f"stage {stage!r} names a file outside its entry ({fname!r})")
        files.add(fname)
        _require(info.get("kind") in ("text", "bytes"), f"stage {stage!r} has a bad kind")
        digest = info.get("sha256")
        _require(isinstance(digest, str) and bool(_HEX64.match(digest)),
                 f"stage {stage!r} has a bad sha256")
    _require(isinstance(meta.get("binary_stage"), str) and meta["binary_stage"] in stages,
             "binary_stage is not one of the stages")
    metadata = meta.get("metadata")
    _require(isinstance(metadata, dict), "metadata is not an object")
    warps = metadata.get("num_warps", 4)
    _require(_is_int(warps) and 1 <= warps <= 64 and warps & (warps - 1) == 0,
             f"metadata.num_warps is not a power of two in 1..64 ({warps!r})")
    shared = metadata.get("shared", 0)
    _require(shared is None or (_is_int(shared) and 0 <= shared < 1 << 31),
             f"metadata.shared is not a byte count ({shared!r})")
    described = meta.get("key_components")
    _require(described is None or isinstance(described, dict), "key_components not an object")


# -- HMAC ---------------------------------------------------------------------------------------------
_ON = ("1", "true", "yes", "on")


def hmac_key_path() -> Path | None:
    """The per-user secret's file when ``NAIAD_CACHE_HMAC`` asks for signed entries, else None."""
    setting = os.environ.get("NAIAD_CACHE_HMAC", "").strip()
    if setting.lower() in ("", "0", "false", "no", "off"):
        return None
    if setting.lower() in _ON:
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
        return base / "naiad" / "cache-hmac.key"
    return Path(setting).expanduser()


def hmac_key(path: Path) -> bytes:
    """The secret in ``path``, created (32 random bytes, mode 0600) when missing. Raises
    :class:`UnsafeCacheError` when the file could be read or written by someone else."""
    try:
        data = read_regular_file(path, limit=4096)
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:   # another process made it first
            data = read_regular_file(path, limit=4096)
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
            data = read_regular_file(path, limit=4096)
    st = os.stat(path)
    if _HAS_UIDS and stat.S_IMODE(st.st_mode) & 0o077:
        raise UnsafeCacheError(f"the cache HMAC key {path} is accessible to other users "
                               f"(mode {stat.S_IMODE(st.st_mode):04o}); chmod 600 it")
    if len(data) < 16:
        raise UnsafeCacheError(f"the cache HMAC key {path} holds fewer than 16 bytes")
    return data


def sign(meta: dict, key: bytes) -> str:
    """HMAC-SHA256 (hex) of ``meta`` without its own ``hmac`` field, in canonical JSON."""
    body = {k: v for k, v in meta.items() if k != "hmac"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest()


def verify(meta: dict, key: bytes) -> None:
    tag = meta.get("hmac")
    if not isinstance(tag, str) or not hmac.compare_digest(tag, sign(meta, key)):
        raise ValueError("meta.json: missing or wrong HMAC")
