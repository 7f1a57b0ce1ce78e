"""Plugins cannot take each other down (issue #13, item 5), and every hook goes through pluggy
so a user's hookwrapper sees every call (issue #8)."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.plugins import LLVMAttributes, hookimpl, hookspecs, manager


@naiad.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)


SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@pytest.fixture
def plugins():
    """Registers plugins in the process-wide manager (with the in-tree backends) for one test."""
    names = []

    def add(plugin, name):
        names.append(manager.register(plugin, name=name))
        return plugin

    yield add
    for name in names:
        manager.unregister(name=name)


def _run_on_reference():
    rng = np.random.default_rng()
    x = rng.random(100, dtype=np.float32)
    out = np.full(100, np.nan, np.float32)
    with naiad.target("reference"):
        scale[(4,)](x, out, 100, BLOCK=32, num_warps=2)   # a fresh key: options differ
    np.testing.assert_array_equal(out, x * np.float32(3.0))


class Spy:
    """A hookwrapper on every hook: records each call's hook name."""

    def __init__(self):
        self.seen: list[str] = []

    @hookimpl(hookwrapper=True)
    def naiad_targets(self):
        self.seen.append("naiad_targets")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_options(self, target, options):
        self.seen.append("naiad_options")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_layouts(self, target):
        self.seen.append("naiad_layouts")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_lowering_passes(self, target, options):
        self.seen.append("naiad_lowering_passes")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_llvm_attributes(self, target, options, kernel):
        self.seen.append("naiad_llvm_attributes")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_matrix_instructions(self, target, options):
        self.seen.append("naiad_matrix_instructions")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_matrix_policy(self, target, options):
        self.seen.append("naiad_matrix_policy")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_codegen(self, target):
        self.seen.append("naiad_codegen")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_launcher(self, target):
        self.seen.append("naiad_launcher")
        yield

    @hookimpl(hookwrapper=True)
    def naiad_stage_done(self, stage, ir, target, metadata):
        self.seen.append("naiad_stage_done")
        yield


def test_a_hookwrapper_on_every_hook_observes_every_call(plugins):
    spy = plugins(Spy(), "spy")
    k = naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128}, target="nvidia:sm_90")
    assert k.binary_stage == "cubin"
    # the core matrix pipeline (AMD's) asks naiad_matrix_instructions
    assert naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128},
                         target="amd:gfx942").binary_stage == "hsaco"
    _run_on_reference()
    assert set(spy.seen) == set(hookspecs.HOOK_NAMES)
    # one stage_done per stage of the nvidia compile, plus the reference launch's tile stage
    assert spy.seen.count("naiad_stage_done") >= len(k.asm)


class ForeignTroublemaker:
    """Registered last (so pluggy asks it first), raises in every per-target hook for targets
    it does not provide."""

    @hookimpl
    def naiad_targets(self):
        return [naiad.plugins.TargetSpec("trouble", ("t1",), {"t1": 32}, "t1")]

    @hookimpl
    def naiad_options(self, target, options):
        raise RuntimeError("options blew up")

    @hookimpl
    def naiad_lowering_passes(self, target, options):
        raise RuntimeError("passes blew up")

    @hookimpl
    def naiad_codegen(self, target):
        raise RuntimeError("codegen blew up")

    @hookimpl
    def naiad_launcher(self, target):
        raise RuntimeError("launcher blew up")


def test_a_plugin_raising_for_foreign_targets_cannot_break_other_backends(plugins):
    plugins(ForeignTroublemaker(), "troublemaker")
    with pytest.warns(manager.PluginWarning, match="'troublemaker' failed in naiad_codegen for "
                                                   "target nvidia:sm_90, which it does not"):
        k = naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128},
                          target="nvidia:sm_90")
    assert k.asm["cubin"][:4] == b"\x7fELF"
    with pytest.warns(manager.PluginWarning, match="'troublemaker' failed in naiad_launcher"):
        _run_on_reference()


def test_a_plugin_raising_for_its_own_target_is_named(plugins):
    plugins(ForeignTroublemaker(), "troublemaker")
    with pytest.raises(naiad.PluginError, match="plugin 'troublemaker' failed in naiad_options: "
                                                "RuntimeError: options blew up"):
        naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128}, target="trouble")


class RaisingLayouts:
    @hookimpl
    def naiad_layouts(self, target):
        raise KeyError("layout table")


class RaisingAttributes:
    @hookimpl
    def naiad_llvm_attributes(self, target, options, kernel):
        raise ValueError("bad attribute")


class WrongAttributes:
    @hookimpl
    def naiad_llvm_attributes(self, target, options, kernel):
        return {"function": {"x": "1"}}   # the old dict shape


@pytest.mark.parametrize("plugin, match", [
    (RaisingLayouts(), "plugin 'merged' failed in naiad_layouts: KeyError: 'layout table'"),
    (RaisingAttributes(), "plugin 'merged' failed in naiad_llvm_attributes: ValueError: bad"),
    (WrongAttributes(), "plugin 'merged': naiad_llvm_attributes returned dict, expected "
                        "naiad.plugins.LLVMAttributes"),
])
def test_a_raising_merged_hook_names_the_plugin(plugins, plugin, match):
    plugins(plugin, "merged")
    with pytest.raises(naiad.PluginError, match=match):
        naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128}, target="amd:gfx942")


def test_a_good_merged_answer_reaches_the_llvm_module(plugins):
    class Extra:
        @hookimpl
        def naiad_llvm_attributes(self, target, options, kernel):
            return LLVMAttributes(function={"naiad-test": str(kernel.threads_per_block)})

    plugins(Extra(), "extra")
    k = naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128}, target="nvidia:sm_90",
                      options={"num_warps": 2})
    assert '"naiad-test"="64"' in k.asm["llir"]


def test_a_raising_observer_is_a_warning_naming_it(plugins):
    class Observer:
        @hookimpl
        def naiad_stage_done(self, stage, ir, target, metadata):
            raise RuntimeError("disk full")

    plugins(Observer(), "observer")
    with pytest.warns(manager.PluginWarning, match="'observer' failed in naiad_stage_done"):
        k = naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128},
                          target="nvidia:sm_90")
    assert "cubin" in k.asm


def test_a_misspelled_hook_is_refused_with_the_closest_name():
    class Typo:
        @hookimpl
        def naiad_layout(self, target):   # naiad_layouts
            return []

    with pytest.raises(naiad.PluginError, match="'naiad_layout', which is not a naiad hook "
                                                r"\(did you mean 'naiad_layouts'\?\)"):
        manager.register(Typo(), name="typo")
    assert manager.get_plugin_manager().get_plugin("typo") is None


def test_a_misspelled_hook_in_an_entry_point_leaves_that_plugin_out():
    pm = manager.create_plugin_manager(load_entrypoints=False)

    class Typo:
        @hookimpl
        def naiad_stage_dne(self, stage, ir, target, metadata):
            pass

    assert not pm._register_checked(Typo(), "typo-ep", "typo_pkg.plugin")
    assert [b.name for b in pm.broken] == ["typo-ep"] and "naiad_stage_done" in pm.broken[0].error


def test_options_are_validated_once_and_reach_codegen_unchanged(plugins):
    seen = []

    class Watch:
        @hookimpl(hookwrapper=True)
        def naiad_options(self, target, options):
            outcome = yield
            if options:   # {} is the runtime's one-time probe of the option names it may drop
                seen.append(("options", outcome.get_result()))

        @hookimpl
        def naiad_llvm_attributes(self, target, options, kernel):
            seen.append(("attributes", options))

    plugins(Watch(), "watch")
    k = naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128}, target="nvidia:sm_90",
                      options={"num_warps": 8, "unroll_threshold": 4})
    [(_, opts)] = [s for s in seen if s[0] == "options"]
    assert opts.num_warps == 8 and opts.unroll_threshold == 4
    assert [s[1] for s in seen if s[0] == "attributes"] == [opts]   # the very same object
    assert k.options is opts
    with pytest.raises(naiad.OptionError, match="'unroll_threshold' must be >= 0"):
        naiad.compile(scale, signature=SIG, constexprs={"BLOCK": 128}, target="reference",
                      options={"unroll_threshold": -1})
