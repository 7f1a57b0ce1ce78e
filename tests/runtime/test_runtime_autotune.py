"""naiad.autotune / naiad.Config / naiad.heuristics on the stub backend.

The stand-in compiler gives each BLOCK value a launch duration (the stub launcher sleeps that
long), so the fastest config is known in advance and the tuner must find it by measuring.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import naiad
from naiad_stub_backend import FakeCompiler, stub_env

#: a sleep never ends early but may end late on a loaded machine, so the slower configs sleep 30x
#: longer than the fastest: the fastest's median would have to be late by 6 ms to lose
SLEEP_MS = {64: 12.0, 128: 0.2, 256: 6.0}
CONFIGS = [naiad.Config({"BLOCK": b}, num_warps=4) for b in (64, 128, 256)]


@pytest.fixture
def timed_compiler(monkeypatch):
    import naiad.compiler

    fake = FakeCompiler(sleep_ms=SLEEP_MS)
    monkeypatch.setattr(naiad.compiler, "compile", fake)
    return fake


def _make_kernel(**autotune_kw):
    @naiad.autotune(configs=CONFIGS, key=["n"], warmup=1, rep=8, **autotune_kw)
    @naiad.jit
    def kern(x_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
        pass

    return kern


def test_autotune_picks_the_fastest_and_caches(stub, timed_compiler):
    kern = _make_kernel()
    x, out = np.ones(1024, np.float32), np.full(1024, np.nan, np.float32)
    grid = lambda meta: (naiad.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    kern[grid](x, out, 1024)
    assert kern.best_config.kwargs == {"BLOCK": 128}
    assert kern.tuned == 1
    assert set(kern.timings) == set(CONFIGS)
    assert kern.timings[CONFIGS[1]][0] < kern.timings[CONFIGS[0]][0]
    # the launch after tuning used BLOCK=128: grid 1024/128
    assert stub.launcher.launches[-1]["grid"] == (8, 1, 1)
    n_launches = len(stub.launcher.launches)
    kern[grid](x, out, 1024)
    assert kern.tuned == 1 and len(stub.launcher.launches) == n_launches + 1
    kern[grid](x, out, 2048)                 # a new key value tunes again
    assert kern.tuned == 2


def test_autotune_key_names_dtypes_without_formatting_them_per_launch(stub, timed_compiler,
                                                                     monkeypatch):
    """The key holds each array's dtype as text (stable for the disk record), formatted once
    per dtype: ``str`` of a numpy dtype costs ~10 us, once per array on every launch before."""
    from naiad.runtime import autotune as at

    kern = _make_kernel()
    x, out = np.ones(256, np.float32), np.zeros(256, np.float64)
    named = kern.named_arguments((x, out, 256), {})
    assert kern._key(named) == (256, "float32", "float64")
    formatted = []

    class Dtype:
        def __str__(self):
            formatted.append(1)
            return "weird8"

    class Array:
        shape, dtype = (4,), Dtype()

    monkeypatch.setattr(at, "_DTYPE_TEXT", {})
    named = kern.named_arguments((Array(), out, 4), {})
    assert kern._key(named) == kern._key(named) == (4, "weird8", "float64")
    assert len(formatted) == 1


def test_autotune_choice_is_on_disk(stub, timed_compiler, cache_dir):
    x, out = np.ones(256, np.float32), np.zeros(256, np.float32)
    first = _make_kernel()
    first[(1,)](x, out, 256)
    (record,) = (cache_dir / "autotune").glob("*.json")
    data = json.loads(record.read_text())
    assert data["config"]["BLOCK"] == "int:128"
    assert data["key_components"]["target"] == "stub:v1"
    second = _make_kernel()                  # a fresh tuner: as in a new process
    second[(1,)](x, out, 256)
    assert second.tuned == 0 and second.best_config.kwargs == {"BLOCK": 128}


def test_autotune_disk_cache_across_processes(tmp_path, cache_dir):
    (tmp_path / "tuned_kernel.py").write_text(textwrap.dedent('''
        import naiad
        @naiad.autotune(configs=[naiad.Config({"BLOCK": b}) for b in (64, 128, 256)],
                        key=["n"], warmup=1, rep=8)
        @naiad.jit
        def kern(x_ptr, n, BLOCK: "tl.constexpr"):
            pass
    '''))
    script = textwrap.dedent(f'''
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import numpy as np, naiad
        from naiad.plugins import manager
        from naiad_stub_backend import install
        import naiad.runtime.cache   # pinned: stable even while naiad's sources are edited
        naiad.runtime.cache._naiad_source_hash = "pinned-for-the-autotune-test"
        manager._manager = manager.create_plugin_manager(load_entrypoints=False)
        plugin, fake = install("stub", sleep_ms={SLEEP_MS!r})
        sys.path.insert(0, {str(tmp_path)!r})
        from tuned_kernel import kern
        with naiad.target("stub"):
            kern[(1,)](np.ones(64, np.float32), 64)
        print(json.dumps({{"tuned": kern.tuned, "block": kern.best_config.kwargs["BLOCK"],
                          "compiles": len(fake.calls)}}))
    ''')
    env = stub_env(cache_dir)
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0] == {"tuned": 1, "block": 128, "compiles": 3}
    # the second process neither benchmarks nor compiles (kernel cache on disk too)
    assert runs[1] == {"tuned": 0, "block": 128, "compiles": 0}


def test_reset_to_zero_and_restore_value(stub, timed_compiler):
    def bench(call):
        call()
        acc[:] += 5          # as if the kernel accumulated into acc
        data[:] = -1         # and clobbered its input
        return [1.0, 1.0, 1.0]

    @naiad.autotune(configs=CONFIGS[:2], key=["n"], reset_to_zero=["acc_ptr"],
                    restore_value=["data_ptr"], do_bench=bench)
    @naiad.jit
    def kern(acc_ptr, data_ptr, n, BLOCK: "tl.constexpr"):
        pass

    rng = np.random.default_rng(0)
    acc = rng.standard_normal(16).astype(np.float32)
    data = rng.standard_normal(16).astype(np.float32)
    original = data.copy()
    kern[(1,)](acc, data, 16)
    launches = stub.launcher.launches
    assert len(launches) == 3                        # two benchmarked configs, then the launch
    for launch in launches[:2]:
        acc_seen, data_seen = launch["snapshots"][:2]
        assert not acc_seen.any()                    # zeroed before every benchmarked call
        np.testing.assert_array_equal(data_seen, original)   # restored between configs
    np.testing.assert_array_equal(launches[2]["snapshots"][1], original)
    np.testing.assert_array_equal(data, original)


def test_config_conflict_and_bad_key(stub, timed_compiler):
    kern = _make_kernel()
    with pytest.raises(naiad.OptionError, match="BLOCK.*both"):
        kern[(1,)](np.ones(4, np.float32), np.ones(4, np.float32), 4, BLOCK=32)
    # Triton ignores key names that are not parameters (tutorial 08 has such a typo): a warning
    with pytest.warns(UserWarning, match="'m'.*not parameters.*ignored"):
        @naiad.autotune(configs=CONFIGS, key=["m", "n"])
        @naiad.jit
        def typo(x_ptr, n, BLOCK: "tl.constexpr"):
            pass
    assert typo.keys == ["n"]
    with pytest.raises(naiad.OptionError, match="'m'.*not parameters"):
        @naiad.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["m"])
        @naiad.jit
        def bad(x_ptr, n, BLOCK: "tl.constexpr"):
            pass


def test_failing_configs_are_skipped(stub, timed_compiler):
    configs = [naiad.Config({"BLOCK": 64}, num_warps=3), naiad.Config({"BLOCK": 256})]

    @naiad.autotune(configs=configs, key=["n"], warmup=1, rep=4)
    @naiad.jit
    def kern(x_ptr, n, BLOCK: "tl.constexpr"):
        pass

    kern[(1,)](np.ones(4, np.float32), 4)   # num_warps=3 is refused by the backend
    assert kern.best_config.kwargs == {"BLOCK": 256}
    assert kern.timings[configs[0]][0] == float("inf")


def test_heuristics_and_stacking(stub, timed_compiler):
    @naiad.heuristics({"BLOCK": lambda args: naiad.next_power_of_2(args["n"])})
    @naiad.jit
    def kern(x_ptr, n, BLOCK: "tl.constexpr"):
        pass

    kern[(1,)](np.ones(4, np.float32), 100)
    assert timed_compiler.calls[-1]["constexprs"] == {"BLOCK": 128}

    @naiad.autotune(configs=[naiad.Config({"BLOCK": 64}), naiad.Config({"BLOCK": 128})],
                    key=["n"], warmup=1, rep=4)
    @naiad.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @naiad.jit
    def kern2(x_ptr, n, BLOCK: "tl.constexpr", EVEN: "tl.constexpr"):
        pass

    kern2[(1,)](np.ones(4, np.float32), 256)
    assert kern2.best_config.kwargs == {"BLOCK": 128}
    last = timed_compiler.calls[-1]["constexprs"]
    assert last["EVEN"] is True
    assert {c["constexprs"]["BLOCK"] for c in timed_compiler.calls[-2:]} == {64, 128}


def test_pre_hook_sees_arguments(stub, timed_compiler):
    seen = []
    configs = [naiad.Config({"BLOCK": 64}, pre_hook=lambda a: seen.append((a["n"], a["BLOCK"])))]

    @naiad.autotune(configs=configs, key=["n"])
    @naiad.jit
    def kern(x_ptr, n, BLOCK: "tl.constexpr"):
        pass

    kern[(1,)](np.ones(4, np.float32), 7)
    assert seen == [(7, 64)]
