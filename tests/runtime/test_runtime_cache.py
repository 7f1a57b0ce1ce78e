"""The in-memory and on-disk kernel caches: hits, layout, key contents, corruption, concurrency."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import naiad
from naiad.runtime import cache as disk


@naiad.jit
def helper(x):
    return x + 1


@naiad.jit
def scale(x_ptr, n, FACTOR: "tl.constexpr"):
    helper(n)


@pytest.fixture(autouse=True)
def fresh_kernels():
    scale.cache_clear()
    yield


def _entries(cache_dir):
    return sorted(p.parent for p in (cache_dir / "kernels").glob("*/*/meta.json"))


def test_layout_on_disk(stub, fake_compiler, cache_dir):
    x = np.ones(32, np.float32)
    scale[(1,)](x, 32, FACTOR=2)
    (entry,) = _entries(cache_dir)
    assert entry.parent.name == entry.name[:2] and len(entry.name) == 64
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["name"] == "scale" and meta["binary_stage"] == "tile"
    assert meta["stages"]["tile"]["file"] == "scale.tile"
    assert (entry / "scale.tile").read_text() == stub.launcher.loads[0]["binary"]
    comps = meta["key_components"]
    assert comps["signature"] == {"x_ptr": "*fp32", "n": "i32"}
    assert comps["constexprs"] == {"FACTOR": "int:2"}
    assert comps["specialization"] == {"x_ptr": {"divisibility": 16}, "n": {"divisibility": 16}}
    assert comps["target"] == "stub:v1" and comps["naiad"] == naiad.__version__
    assert comps["options"] == {"num_warps": "int:4", "num_stages": "int:3",
                                "unroll_threshold": "NoneType:None", "flavor": "str:'plain'"}
    assert len(comps["naiad_source"]) == 64 and len(comps["source"]) == 64
    assert not list(entry.glob(".*.tmp"))     # no temporary files left behind


def test_disk_cache_survives_a_fresh_memory_state(stub, fake_compiler, cache_dir):
    x = np.ones(32, np.float32)
    scale[(1,)](x, 32, FACTOR=2)
    assert scale.cache_info()["compiles"] == 1 and scale.cache_info()["disk_writes"] == 1
    scale.cache_clear()
    scale[(1,)](x, 32, FACTOR=2)
    info = scale.cache_info()
    assert info["compiles"] == 0 and info["disk_hits"] == 1
    assert len(fake_compiler.calls) == 1
    # the kernel loaded from disk is the one that was compiled
    assert stub.launcher.loads[0]["binary"] == stub.launcher.loads[1]["binary"]


def _load_module(tmp_path, name, text):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KERNEL_MODULE = '''
    import naiad
    WIDTH = {width}

    @naiad.jit
    def helper(x):
        return x + {inc}

    @naiad.jit
    def kern(x_ptr, n, FACTOR: "tl.constexpr"):
        helper(n + WIDTH)
'''


def test_fingerprint_covers_callees_and_constants(tmp_path):
    base = _load_module(tmp_path, "fp_a", KERNEL_MODULE.format(width=4, inc=1))
    same = _load_module(tmp_path, "fp_b", KERNEL_MODULE.format(width=4, inc=1))
    callee = _load_module(tmp_path, "fp_c", KERNEL_MODULE.format(width=4, inc=2))
    const = _load_module(tmp_path, "fp_d", KERNEL_MODULE.format(width=8, inc=1))
    fp = disk.function_fingerprint
    assert fp(base.kern) == fp(same.kern)
    assert fp(base.kern) != fp(callee.kern)      # only the callee's source differs
    assert fp(base.kern) != fp(const.kern)       # only a module constant differs


def test_the_same_code_elsewhere_compiles_for_its_own_locations(stub, fake_compiler, cache_dir,
                                                                 tmp_path):
    """Compiled kernels quote their source lines (errors, remarks, device asserts): a disk entry
    compiled from one file must not answer for the same code in another file or at other lines,
    though the location-free fingerprint is the same."""
    text = KERNEL_MODULE.format(width=4, inc=1)
    first = _load_module(tmp_path, "loc_a", text)
    other_file = _load_module(tmp_path, "loc_b", text)
    moved_callee = _load_module(tmp_path, "loc_c", text.replace("    @naiad.jit",
                                                                         "\n    @naiad.jit", 1))
    assert disk.function_fingerprint(first.kern) == disk.function_fingerprint(other_file.kern)
    x = np.ones(32, np.float32)
    for module in (first, other_file, moved_callee):
        module.kern[(1,)](x, 32, FACTOR=2)
        assert module.kern.cache_info()["compiles"] == 1, module.__name__
    described = [json.loads((e / "meta.json").read_text())["key_components"]["locations"]
                 for e in _entries(cache_dir)]
    assert len(described) == 3
    helper_lines = sorted(loc[2] for locs in described for loc in locs if loc[0] == "helper")
    files = {loc[1] for locs in described for loc in locs}
    assert files == {str(tmp_path / f"loc_{t}.py") for t in "abc"}
    assert helper_lines[0] != helper_lines[-1]          # loc_c's helper starts a line later
    first.kern.cache_clear()                            # the same file again: a disk hit
    first.kern[(1,)](x, 32, FACTOR=2)
    assert first.kern.cache_info()["disk_hits"] == 1


def test_naiad_source_hash_is_in_the_key(stub, fake_compiler, cache_dir, monkeypatch):
    x = np.ones(32, np.float32)
    scale[(1,)](x, 32, FACTOR=2)
    scale.cache_clear()
    monkeypatch.setattr(disk, "_naiad_source_hash", "0" * 64)
    scale[(1,)](x, 32, FACTOR=2)
    assert scale.cache_info()["compiles"] == 1
    assert len(_entries(cache_dir)) == 2
    assert len(disk.naiad_source_hash()) == 64


@pytest.mark.parametrize("damage", ["truncate_stage", "garbage_stage", "garbage_meta",
                                    "truncate_meta", "missing_stage"])
def test_corrupt_entry_is_recompiled(stub, fake_compiler, cache_dir, damage):
    x = np.ones(32, np.float32)
    scale[(1,)](x, 32, FACTOR=3)
    (entry,) = _entries(cache_dir)
    stage, meta = entry / "scale.tile", entry / "meta.json"
    if damage == "truncate_stage":
        stage.write_bytes(stage.read_bytes()[:10])
    elif damage == "garbage_stage":
        stage.write_bytes(b"\x00\xff" * 50)
    elif damage == "garbage_meta":
        meta.write_bytes(b"\x89PNG not json at all")
    elif damage == "truncate_meta":
        meta.write_bytes(meta.read_bytes()[:40])
    else:
        stage.unlink()
    scale.cache_clear()
    scale[(1,)](x, 32, FACTOR=3)
    info = scale.cache_info()
    assert info["compiles"] == 1 and info["disk_hits"] == 0
    # and the entry was rewritten correctly: a third process-state reads it back
    scale.cache_clear()
    scale[(1,)](x, 32, FACTOR=3)
    assert scale.cache_info()["disk_hits"] == 1
    assert stub.launcher.loads[-1]["binary"] == stub.launcher.loads[0]["binary"]


def test_values_without_stable_identity_stay_in_memory(stub, fake_compiler, cache_dir):
    marker = object()
    x = np.ones(32, np.float32)
    scale[(1,)](x, 32, FACTOR=marker)
    scale[(1,)](x, 32, FACTOR=marker)
    assert scale.cache_info() == {**scale.cache_info(), "compiles": 1, "hits": 1,
                                  "disk_writes": 0}
    assert not _entries(cache_dir)


def test_unwritable_cache_dir_warns_and_works(stub, fake_compiler, tmp_path, monkeypatch):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(disk, "_warned_unwritable", False)
    x = np.ones(32, np.float32)
    with pytest.warns(disk.CacheWarning, match="cannot write the cache"):
        scale[(1,)](x, 32, FACTOR=5)
    assert len(stub.launcher.launches) == 1


def test_cache_dir_default_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("NAIAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk.cache_dir() == tmp_path / "xdg" / "naiad"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert disk.cache_dir() == tmp_path / "home" / ".cache" / "naiad"


WORKER = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import naiad
from naiad.plugins import manager
from naiad_stub_backend import install
import naiad.runtime.cache
# pin the compiler-source hash: the processes must agree on it even if naiad's sources are being
# edited while the test runs (this test is about concurrent writers, not about that hash)
naiad.runtime.cache._naiad_source_hash = "pinned-for-the-concurrency-test"
manager._manager = manager.create_plugin_manager(load_entrypoints=False)
plugin, fake = install("stub", delay_s=0.3)
sys.path.insert(0, sys.argv[1])
from concurrent_kernel import kern
x = np.arange(64, dtype=np.float32)
with naiad.target("stub"):
    kern[(4,)](x, 64, BLOCK=16)
print(json.dumps({"info": kern.cache_info(), "binary": plugin.launcher.loads[0]["binary"]}))
"""


def test_concurrent_processes_share_an_empty_cache(tmp_path, cache_dir):
    from naiad_stub_backend import stub_env

    (tmp_path / "concurrent_kernel.py").write_text(textwrap.dedent('''
        import naiad
        @naiad.jit
        def kern(x_ptr, n, BLOCK: "tl.constexpr"):
            pass
    '''))
    env = stub_env(cache_dir)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert len({r["binary"] for r in results}) == 1
    # all three compiled at once (the fake compiler sleeps), and the cache holds one valid entry
    assert all(r["info"]["launches"] == 1 for r in results)
    entries = _entries(cache_dir)
    assert len(entries) == 1
    loaded = disk.load_kernel(entries[0].name)
    assert loaded is not None and loaded["asm"]["tile"] == results[0]["binary"]
    # a fourth process finds it on disk
    out = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout.strip().splitlines()[-1])["info"]
    assert info["disk_hits"] == 1 and info["compiles"] == 0


DTYPE_MODULE = '''
    import naiad
    import naiad.language as tl
    OUT = tl.{dtype}
    SHAPE = ({rows}, 16)

    @naiad.jit
    def kern(x_ptr):
        tl.store(x_ptr + tl.arange(0, SHAPE[1]), tl.zeros((SHAPE[1],), dtype=OUT))
'''


def test_fingerprint_covers_dtype_and_tuple_globals(tmp_path):
    """Globals the frontend folds (dtypes, tuples) must change the key, or a stale kernel
    would be reused from the disk cache after editing them."""
    fp = disk.function_fingerprint
    base = _load_module(tmp_path, "dt_a", DTYPE_MODULE.format(dtype="float16", rows=2))
    dtype = _load_module(tmp_path, "dt_b", DTYPE_MODULE.format(dtype="float32", rows=2))
    shape = _load_module(tmp_path, "dt_c", DTYPE_MODULE.format(dtype="float16", rows=3))
    assert fp(base.kern) != fp(dtype.kern)
    assert fp(base.kern) != fp(shape.kern)
