"""The on-disk cache read as an attacker would write it: private directories, refusal of caches
other users can write, optional HMAC, validated meta.json, confined file names, no FIFO hangs,
bounded JSON. Each case failed (served foreign code, hung or crashed) before the fix."""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading

import numpy as np
import pytest

import naiad
from naiad.runtime import cache as disk
from naiad.runtime import cache_safety

POSIX = hasattr(os, "getuid")
pytestmark = pytest.mark.skipif(not POSIX, reason="file ownership and modes are POSIX notions")


@naiad.jit
def victim(x_ptr, n, FACTOR: "tl.constexpr"):
    pass


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    victim.cache_clear()
    monkeypatch.setattr(disk, "_warned_unsafe", set())
    monkeypatch.delenv("NAIAD_CACHE_HMAC", raising=False)
    yield
    victim.cache_clear()


def _launch(factor=3):
    victim[(1,)](np.ones(8, np.float32), 8, FACTOR=factor)


def _entry(cache_dir):
    (meta,) = (cache_dir / "kernels").glob("*/*/meta.json")
    return meta.parent


def _relaunch_counts():
    victim.cache_clear()
    _launch()
    info = victim.cache_info()
    return info["compiles"], info["disk_hits"]


def _poison(entry, text: str, stub):
    """What an attacker with write access does: a stage file with their code and a meta.json
    whose checksum matches it."""
    stage = entry / "victim.tile"
    stage.write_text(text)
    meta = json.loads((entry / "meta.json").read_text())
    meta["stages"]["tile"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (entry / "meta.json").write_text(json.dumps(meta))


def test_directories_and_files_are_private_whatever_the_umask(stub, fake_compiler, cache_dir):
    old = os.umask(0)
    try:
        _launch()
    finally:
        os.umask(old)
    entry = _entry(cache_dir)
    for d in (cache_dir, cache_dir / "kernels", entry.parent, entry):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    for f in entry.iterdir():
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f


@pytest.mark.parametrize("where", ["root", "kernels", "entry"])
def test_cache_writable_by_others_is_refused_with_a_warning(stub, fake_compiler, cache_dir,
                                                           where):
    _launch()
    entry = _entry(cache_dir)
    _poison(entry, "attacker's code", stub)
    path = {"root": cache_dir, "kernels": cache_dir / "kernels", "entry": entry}[where]
    os.chmod(path, 0o777)
    with pytest.warns(disk.CacheWarning, match="writable by every user"):
        compiles, hits = _relaunch_counts()
    assert (compiles, hits) == (1, 0)
    assert stub.launcher.loads[-1]["binary"] != "attacker's code"
    assert victim.cache_info()["disk_writes"] == 0      # nor does it write there


@pytest.mark.skipif(not POSIX or os.getuid() != 0, reason="chown to another user needs root")
def test_cache_owned_by_another_user_is_refused(stub, fake_compiler, cache_dir):
    _launch()
    _poison(_entry(cache_dir), "attacker's code", stub)
    os.chown(cache_dir, 54321, -1)
    with pytest.warns(disk.CacheWarning, match="owned by uid 54321"):
        assert _relaunch_counts() == (1, 0)
    assert stub.launcher.loads[-1]["binary"] != "attacker's code"


@pytest.mark.skipif(not POSIX or os.getuid() != 0, reason="chown to another user needs root")
def test_stage_file_owned_by_another_user_is_not_loaded(stub, fake_compiler, cache_dir):
    _launch()
    entry = _entry(cache_dir)
    os.chown(entry / "victim.tile", 54321, -1)
    assert _relaunch_counts() == (1, 0)


def test_private_cache_still_hits(stub, fake_compiler, cache_dir):
    _launch()
    assert _relaunch_counts() == (0, 1)


# -- HMAC -------------------------------------------------------------------------------------------
def test_hmac_rejects_an_entry_forged_with_matching_checksums(stub, fake_compiler, cache_dir,
                                                              tmp_path, monkeypatch):
    keyfile = tmp_path / "secret" / "naiad.key"
    monkeypatch.setenv("NAIAD_CACHE_HMAC", str(keyfile))
    _launch()
    assert stat.S_IMODE(os.stat(keyfile).st_mode) == 0o600 and len(keyfile.read_bytes()) == 32
    entry = _entry(cache_dir)
    assert len(json.loads((entry / "meta.json").read_text())["hmac"]) == 64
    assert _relaunch_counts() == (0, 1)                  # a signed entry is served
    _poison(entry, "attacker's code", stub)
    assert _relaunch_counts() == (1, 0)                  # a forged one is recompiled ...
    assert stub.launcher.loads[-1]["binary"] != "attacker's code"
    assert _relaunch_counts() == (0, 1)                  # ... and overwritten with a signed one


def test_without_hmac_a_consistent_forgery_is_what_hmac_is_for(stub, fake_compiler, cache_dir):
    """Documents the threat HMAC addresses: the checksums alone do not authenticate."""
    _launch()
    _poison(_entry(cache_dir), "attacker's code", stub)
    assert _relaunch_counts() == (0, 1)
    assert stub.launcher.loads[-1]["binary"] == "attacker's code"


def test_hmac_key_readable_by_others_is_refused(stub, fake_compiler, cache_dir, tmp_path,
                                                monkeypatch):
    keyfile = tmp_path / "naiad.key"
    keyfile.write_bytes(os.urandom(32))
    os.chmod(keyfile, 0o644)
    monkeypatch.setenv("NAIAD_CACHE_HMAC", str(keyfile))
    with pytest.warns(disk.CacheWarning, match="HMAC key .* accessible to other users"):
        _launch()
    assert victim.cache_info()["disk_writes"] == 0


def test_hmac_default_key_lives_in_the_config_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("NAIAD_CACHE_HMAC", "1")
    path = cache_safety.hmac_key_path()
    assert path == tmp_path / "cfg" / "naiad" / "cache-hmac.key"
    assert cache_safety.hmac_key(path) == cache_safety.hmac_key(path)   # made once, then read
    monkeypatch.setenv("NAIAD_CACHE_HMAC", "0")
    assert cache_safety.hmac_key_path() is None


# -- meta.json validated ------------------------------------------------------------------------------
BAD_FIELDS = {
    "num_warps_text": lambda m: m["metadata"].update(num_warps="abc"),
    "num_warps_not_pow2": lambda m: m["metadata"].update(num_warps=3),
    "num_warps_bool": lambda m: m["metadata"].update(num_warps=True),
    "shared_negative": lambda m: m["metadata"].update(shared=-1),
    "shared_float": lambda m: m["metadata"].update(shared=1.5),
    "metadata_list": lambda m: m.update(metadata=[1, 2]),
    "name_not_identifier": lambda m: m.update(name="a b"),
    "name_number": lambda m: m.update(name=5),
    "binary_stage_unknown": lambda m: m.update(binary_stage="cubin"),
    "stages_list": lambda m: m.update(stages=["tile"]),
    "stage_kind": lambda m: m["stages"]["tile"].update(kind="pickle"),
    "sha_short": lambda m: m["stages"]["tile"].update(sha256="abc"),
    "format_string": lambda m: m.update(format="1"),
    "key_components_forged": lambda m: m["key_components"].update(target="other"),
}


@pytest.mark.parametrize("damage", sorted(BAD_FIELDS))
def test_bad_meta_field_recompiles_instead_of_breaking_launches(stub, fake_compiler, cache_dir,
                                                                damage):
    _launch()
    meta_path = _entry(cache_dir) / "meta.json"
    meta = json.loads(meta_path.read_text())
    BAD_FIELDS[damage](meta)
    meta_path.write_text(json.dumps(meta))
    assert _relaunch_counts() == (1, 0)
    assert _relaunch_counts() == (0, 1)      # rewritten: the next fresh state hits again


@pytest.mark.parametrize("name", ["../../outside.tile", "/etc/hostname", "..", ".hidden",
                                  "sub/victim.tile"])
def test_stage_file_names_are_confined_to_the_entry(stub, fake_compiler, cache_dir, name):
    _launch()
    entry = _entry(cache_dir)
    outside = (entry / name) if not name.startswith("/") else None
    text = "code from outside the entry"
    if outside is not None and name not in ("..",):
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_text(text)
    meta = json.loads((entry / "meta.json").read_text())
    meta["stages"]["tile"].update(file=name, sha256=hashlib.sha256(text.encode()).hexdigest())
    (entry / "meta.json").write_text(json.dumps(meta))
    assert _relaunch_counts() == (1, 0)
    assert stub.launcher.loads[-1]["binary"] != text


def _relaunch_in_thread():
    result = {}

    def go():
        try:
            result["counts"] = _relaunch_counts()
        except BaseException as exc:   # reported by the test
            result["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the launch hangs"
    assert "error" not in result, result.get("error")
    return result["counts"]


@pytest.mark.parametrize("which", ["victim.tile", "meta.json"])
def test_fifo_in_an_entry_does_not_hang(stub, fake_compiler, cache_dir, which):
    _launch()
    path = _entry(cache_dir) / which
    path.unlink()
    os.mkfifo(path, 0o600)
    assert _relaunch_in_thread() == (1, 0)


def test_symlinked_stage_file_is_not_followed(stub, fake_compiler, cache_dir, tmp_path):
    _launch()
    entry = _entry(cache_dir)
    target = tmp_path / "elsewhere.tile"
    target.write_text((entry / "victim.tile").read_text())
    (entry / "victim.tile").unlink()
    (entry / "victim.tile").symlink_to(target)
    assert _relaunch_counts() == (1, 0)


@pytest.mark.parametrize("shape", ["deep_list", "deep_object", "huge"])
def test_bounded_json(stub, fake_compiler, cache_dir, shape):
    _launch()
    meta = _entry(cache_dir) / "meta.json"
    if shape == "deep_list":
        meta.write_text("[" * 200_000 + "]" * 200_000)
    elif shape == "deep_object":
        meta.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    else:
        meta.write_text(json.dumps({"pad": "x" * (cache_safety.MAX_JSON_BYTES + 10)}))
    assert _relaunch_counts() == (1, 0)


def test_json_depth_scan_ignores_brackets_in_strings():
    text = json.dumps({"s": "[" * 1000, "t": [[1]]}).encode()
    assert cache_safety.loads_bounded(text)["t"] == [[1]]
    with pytest.raises(ValueError, match="nested deeper"):
        cache_safety.loads_bounded(b"[" * 65 + b"]" * 65)


def test_autotune_records_are_bounded_and_refused_when_untrusted(cache_dir):
    path = disk.autotune_path("k" * 64)
    assert disk.store_json(path, {"config": {"BLOCK": 16}})
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert disk.load_json(path) == {"config": {"BLOCK": 16}}
    path.write_text("[" * 100_000)
    assert disk.load_json(path) is None
    assert disk.store_json(path, {"config": {"BLOCK": 32}})
    os.chmod(path.parent, 0o777)
    with pytest.warns(disk.CacheWarning, match="writable by every user"):
        assert disk.load_json(path) is None
