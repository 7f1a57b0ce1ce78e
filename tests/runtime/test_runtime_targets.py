"""Target selection: names, errors, NAIAD_TARGET, set_target, with-blocks, autodetection."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

import naiad
from naiad.plugins import Target
from naiad.runtime.targets import available_target_names, get_target, resolve_target, set_target
from naiad_stub_backend import StubBackend, stub_env


def test_resolve_names_and_archs(stub):
    assert str(get_target()) == "stub:v1"
    tgt, spec = resolve_target("stub:v2")
    assert (tgt.backend, tgt.arch, tgt.warp_size) == ("stub", "v2", 64)
    assert spec.backend == "stub"
    tgt, _ = resolve_target("stub")
    assert tgt.arch == "v1"           # default arch of an interpreted backend
    given = Target("stub", "v2", 64)
    assert resolve_target(given)[0] == given
    assert available_target_names() == ["stub:v1", "stub:v2"]


def test_unknown_target_lists_available(stub, isolated_pm):
    isolated_pm.register(StubBackend("interp", archs=("host",)), name="interp-plugin")
    with pytest.raises(naiad.TargetError) as err:
        resolve_target("vulkan:x1")
    msg = str(err.value)
    assert "unknown target 'vulkan:x1'" in msg
    assert "available targets: stub:v1, stub:v2, interp" in msg


def test_unknown_arch_names_the_arch(stub):
    with pytest.raises(naiad.TargetError, match=r"unknown architecture 'v9' for backend 'stub'.*"
                                                r"available targets: stub:v1, stub:v2"):
        resolve_target("stub:v9")
    with pytest.raises(naiad.TargetError, match="not int"):
        resolve_target(42)


def test_set_target_and_with_block_restore(stub, isolated_pm):
    isolated_pm.register(StubBackend("other", archs=("a", "b")), name="other-plugin")
    try:
        set_target("other:b")
        # the stub fixture's with-block is still active and wins over set_target
        assert str(get_target()) == "stub:v1"
        with naiad.target("other:a") as inner:
            assert str(inner) == str(get_target()) == "other:a"
            with naiad.target("stub:v2"):
                assert str(get_target()) == "stub:v2"
            assert str(get_target()) == "other:a"
        assert str(get_target()) == "stub:v1"
        with pytest.raises(RuntimeError):
            with naiad.target("stub:v2"):
                raise RuntimeError("boom")
        assert str(get_target()) == "stub:v1"
    finally:
        set_target(None)


def test_set_target_default_outside_blocks(isolated_pm):
    isolated_pm.register(StubBackend("stub"), name="stub-plugin")
    isolated_pm.register(StubBackend("other", archs=("a", "b")), name="other-plugin")
    try:
        assert set_target("other:b") == Target("other", "b", 64)
        assert str(get_target()) == "other:b"
        with pytest.raises(naiad.TargetError):
            set_target("missing")
        assert str(get_target()) == "other:b"     # a failed set_target changes nothing
        with naiad.target("stub:v2"):
            assert str(get_target()) == "stub:v2"
        assert str(get_target()) == "other:b"
    finally:
        set_target(None)


def test_with_block_is_per_thread(stub, isolated_pm):
    isolated_pm.register(StubBackend("other", archs=("a",)), name="other-plugin")
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with naiad.target("other:a"):
            seen["worker"] = str(get_target())
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(5)
    seen["main"] = str(get_target())
    release.set()
    t.join()
    assert seen == {"worker": "other:a", "main": "stub:v1"}


def test_autodetect_prefers_a_present_device(isolated_pm):
    isolated_pm.register(StubBackend("reference", archs=("numpy",)), name="ref-plugin")
    isolated_pm.register(StubBackend("gpu0", compiled=True, archs=("g1", "g2")), name="gpu0")
    isolated_pm.register(StubBackend("gpu1", compiled=True, archs=("x1", "x2"),
                                     detect=lambda: "x2"), name="gpu1")
    assert str(get_target()) == "gpu1:x2"
    # a bare backend name picks the present device's arch
    assert resolve_target("gpu1")[0].arch == "x2"
    assert resolve_target("gpu0")[0].arch == "g1"


def test_autodetect_falls_back_to_reference(isolated_pm):
    def broken_detect():
        raise OSError("driver exploded")

    isolated_pm.register(StubBackend("gpu0", compiled=True, archs=("g1",), detect=broken_detect),
                         name="gpu0")
    isolated_pm.register(StubBackend("reference", archs=("numpy",)), name="ref-plugin")
    with pytest.warns(UserWarning, match="detect_arch"):
        assert str(get_target()) == "reference:numpy"


def test_no_target_at_all_is_a_clear_error(isolated_pm):
    with pytest.raises(naiad.TargetError, match="no naiad target is usable"):
        get_target()


def test_registering_a_plugin_refreshes_targets(isolated_pm):
    with pytest.raises(naiad.TargetError):
        resolve_target("late")
    plugin = StubBackend("late")
    naiad.plugins.register(plugin, name="late-plugin")
    assert resolve_target("late:v2")[0].warp_size == 64
    naiad.plugins.unregister(name="late-plugin")
    with pytest.raises(naiad.TargetError, match="available targets: \\(none\\)"):
        resolve_target("late")


def _run_with_env(code: str, cache_dir, **env):
    full = stub_env(cache_dir)
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=120)


SUBPROCESS_SETUP = """
    import warnings
    warnings.simplefilter("ignore")
    import naiad
    from naiad.plugins import manager
    from naiad_stub_backend import StubBackend
    manager._manager = manager.create_plugin_manager(load_entrypoints=False)
    manager.register(StubBackend("stub"), name="stub-plugin")
"""


def test_naiad_target_environment_variable(cache_dir):
    code = SUBPROCESS_SETUP + """
    print(naiad.get_target())
    with naiad.target("stub:v1"):
        print(naiad.get_target())
    print(naiad.get_target())
    """
    out = _run_with_env(code, cache_dir, NAIAD_TARGET="stub:v2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["stub:v2", "stub:v1", "stub:v2"]


def test_naiad_target_environment_variable_unknown(cache_dir):
    code = SUBPROCESS_SETUP + """
    try:
        naiad.get_target()
    except naiad.TargetError as exc:
        print("ERROR", exc)
    """
    out = _run_with_env(code, cache_dir, NAIAD_TARGET="quantum:q1")
    assert out.returncode == 0, out.stderr
    assert "ERROR unknown target 'quantum:q1' (from the environment variable NAIAD_TARGET)" \
        in out.stdout
    assert "available targets: stub:v1, stub:v2" in out.stdout
