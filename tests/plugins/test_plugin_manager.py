"""The plugin manager: entry-point discovery, broken-plugin isolation, register/unregister,
hook errors that name the plugin."""
from __future__ import annotations

import sys
import textwrap
import warnings

import pytest

import naiad
from naiad.plugins import TargetSpec, hookimpl, manager

GOOD = '''
from naiad.plugins import TargetSpec, hookimpl

@hookimpl
def naiad_targets():
    return [TargetSpec("goodx", ("a1", "a2"), {"a1": 32, "a2": 64}, "a1")]
'''
BAD_IMPORT = '''
raise ImportError("libvendor.so: cannot open shared object file")
'''
BAD_TARGETS = '''
from naiad.plugins import hookimpl

@hookimpl
def naiad_targets():
    raise RuntimeError("driver query failed")

@hookimpl
def naiad_stage_done(stage, ir, target, metadata):
    raise AssertionError("a broken plugin must not be called")
'''
GARBAGE_TARGETS = '''
from naiad.plugins import hookimpl

@hookimpl
def naiad_targets():
    return ["not a TargetSpec"]
'''
BAD_HOOK_SIGNATURE = '''
from naiad.plugins import hookimpl

@hookimpl
def naiad_launcher(target, unexpected_argument):
    return None
'''


@pytest.fixture
def fake_distribution(tmp_path, monkeypatch):
    """A distribution on sys.path whose entry points (group naiad.backends) include plugins that
    fail to import, raise in naiad_targets, return garbage or have a bad hook signature."""
    for name, text in [("fakeplug_good", GOOD), ("fakeplug_badimport", BAD_IMPORT),
                       ("fakeplug_badtargets", BAD_TARGETS),
                       ("fakeplug_garbage", GARBAGE_TARGETS),
                       ("fakeplug_badsig", BAD_HOOK_SIGNATURE)]:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    info = tmp_path / "fakeplugs-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplugs\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text(textwrap.dedent('''
        [naiad.backends]
        goodx = fakeplug_good
        badimport = fakeplug_badimport
        badtargets = fakeplug_badtargets
        garbage = fakeplug_garbage
        badsig = fakeplug_badsig
        missing = fakeplug_does_not_exist
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in list(sys.modules):
        if name.startswith("fakeplug_"):
            del sys.modules[name]


def test_broken_plugins_are_reported_and_isolated(fake_distribution):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = manager.create_plugin_manager()
        table = pm.target_table()
    assert "goodx" in table and table["goodx"].plugin_name == "goodx"
    assert pm.origins["goodx"] == "fakeplug_good [fakeplugs 1.2]"
    broken = {b.name: b for b in pm.broken}
    assert broken["badimport"].where == "import"
    assert "libvendor.so" in broken["badimport"].error
    assert broken["missing"].where == "import"
    assert broken["badtargets"].where == "naiad_targets"
    assert "driver query failed" in broken["badtargets"].error
    assert broken["garbage"].where == "naiad_targets"
    assert broken["badsig"].where == "register"
    messages = [str(w.message) for w in caught if issubclass(w.category, manager.PluginWarning)]
    for name in ("badimport", "badtargets", "garbage", "badsig", "missing"):
        assert any(m.startswith(f"naiad plugin {name} ") for m in messages), (name, messages)
    # the plugin whose discovery failed is out of every hook
    assert pm.get_plugin("badtargets") is None
    pm.hook.naiad_stage_done(stage="tile", ir="", target=None, metadata={})


def test_disabled_plugins_are_not_loaded(fake_distribution, monkeypatch):
    monkeypatch.setenv(manager.DISABLE_ENV, "badimport, badtargets,garbage,badsig,missing")
    with warnings.catch_warnings():
        warnings.simplefilter("error", manager.PluginWarning)
        pm = manager.create_plugin_manager()
        assert "goodx" in pm.target_table()
    assert pm.broken == []


def test_process_wide_manager_with_broken_entry_points(fake_distribution, monkeypatch):
    monkeypatch.setattr(manager, "_manager", None)
    with pytest.warns(manager.PluginWarning):
        pm = manager.get_plugin_manager()
        specs = manager.all_target_specs()
    assert manager.get_plugin_manager() is pm            # built once
    assert "goodx" in [s.backend for s in specs]
    from naiad.runtime.targets import resolve_target

    tgt, _ = resolve_target("goodx:a2")
    assert tgt.warp_size == 64
    monkeypatch.undo()          # back to the previous manager...
    manager.generation += 1     # ...and drop what was resolved against this one


class Plugin:
    def __init__(self, backend, launcher=None, error=None):
        self.backend, self.launcher, self.error = backend, launcher, error

    @hookimpl
    def naiad_targets(self):
        return [TargetSpec(self.backend, ("x",), {"x": 32}, "x")]

    @hookimpl
    def naiad_launcher(self, target):
        if self.error is not None:
            raise self.error
        return self.launcher if target.backend == self.backend else None


@pytest.fixture
def empty_pm(monkeypatch):
    pm = manager.create_plugin_manager(load_entrypoints=False)
    monkeypatch.setattr(manager, "_manager", pm)
    manager.generation += 1
    yield pm
    manager.generation += 1


def test_register_and_unregister_invalidate_the_targets(empty_pm):
    assert manager.all_target_specs() == []
    gen = manager.generation
    name = naiad.plugins.register(Plugin("one"), name="one")
    assert name == "one" and manager.generation > gen
    assert [s.backend for s in manager.all_target_specs()] == ["one"]
    naiad.plugins.register(Plugin("two"))
    assert [s.backend for s in manager.all_target_specs()] == ["one", "two"]
    naiad.plugins.unregister(name="one")
    assert [s.backend for s in manager.all_target_specs()] == ["two"]
    with pytest.raises(naiad.PluginError, match="no plugin named 'one'"):
        naiad.plugins.unregister(name="one")
    three = Plugin("three")
    naiad.plugins.register(three, name="three")
    with pytest.raises(naiad.PluginError, match="cannot register plugin 'again'"):
        naiad.plugins.register(three, name="again")     # the same object twice


def test_duplicate_backend_names_warn_and_latest_wins(empty_pm):
    naiad.plugins.register(Plugin("dup"), name="first")
    naiad.plugins.register(Plugin("dup"), name="second")
    with pytest.warns(manager.PluginWarning, match="declared by plugins 'first' and 'second'"):
        table = empty_pm.target_table()
    assert table["dup"].plugin_name == "second"


def test_firstresult_hooks_through_pm_hook_name_the_failing_plugin(empty_pm):
    sentinel = Launcher0()
    naiad.plugins.register(Plugin("a", launcher=sentinel), name="a")
    naiad.plugins.register(Plugin("b", launcher=None), name="b")
    target = naiad.plugins.Target("a", "x", 32)
    assert empty_pm.hook.naiad_launcher(target=target) is sentinel
    assert empty_pm.hook.naiad_codegen(target=target) is None
    naiad.plugins.unregister(name="a")
    naiad.plugins.register(Plugin("a", error=ValueError("cuInit failed")), name="crashy")
    with pytest.raises(naiad.PluginError, match="plugin 'crashy' failed in naiad_launcher: "
                                                "ValueError: cuInit failed"):
        empty_pm.hook.naiad_launcher(target=target)
    naiad.plugins.unregister(name="crashy")
    naiad.plugins.register(Plugin("a", error=naiad.DeviceError("no GPU here")), name="nodev")
    with pytest.raises(naiad.DeviceError, match="no GPU here"):   # naiad errors pass through
        empty_pm.hook.naiad_launcher(target=target)


class Launcher0(naiad.plugins.Launcher):
    def load(self, result, kernel_name):
        return None

    def launch(self, handle, grid, num_warps, shared_bytes, args, arg_types, stream=None):
        return None


def test_plugin_fingerprint_tracks_source(empty_pm, tmp_path, monkeypatch):
    mod = tmp_path / "fp_plugin_mod.py"
    mod.write_text("from naiad.plugins import hookimpl\nVERSION = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fp_plugin_mod

    naiad.plugins.register(fp_plugin_mod, name="fp")
    first = manager.plugin_fingerprint("fp")
    assert manager.plugin_fingerprint("fp") == first
    mod.write_text("from naiad.plugins import hookimpl\nVERSION = 2\n")
    naiad.plugins.unregister(name="fp")
    naiad.plugins.register(fp_plugin_mod, name="fp")      # a new generation re-reads it
    assert manager.plugin_fingerprint("fp") != first
    del sys.modules["fp_plugin_mod"]
