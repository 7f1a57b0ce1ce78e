"""Options validation and the plugin's hooks."""
from __future__ import annotations

import pluggy
import pytest

from naiad.errors import OptionError
from naiad.plugins import LLVMAttributes, Target, hookspecs

import naiad_amd.plugin as plugin
from amd_testkit import amd_target
from naiad_amd.codegen import AmdCodegen
from naiad_amd.runtime.launcher import AmdLauncher
from naiad_amd.options import AmdOptions, make_options


@pytest.fixture
def pm():
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(plugin)
    return pm


def test_defaults():
    assert make_options(amd_target("gfx942")) == AmdOptions(num_warps=4, num_stages=2, waves_per_eu=None)


@pytest.mark.parametrize("opts", [
    {"num_warps": 1}, {"num_warps": 16}, {"num_stages": 1}, {"num_stages": 5},
    {"waves_per_eu": 1}, {"waves_per_eu": 8}, {"waves_per_eu": None},
])
def test_valid(opts):
    make_options(amd_target("gfx942"), opts)


@pytest.mark.parametrize("opts, match", [
    ({"num_warps": 3}, "num_warps"), ({"num_warps": 0}, "num_warps"), ({"num_warps": 32}, "num_warps"),
    ({"num_warps": True}, "num_warps"), ({"num_warps": 4.0}, "num_warps"), ({"num_warps": "4"}, "num_warps"),
    ({"num_stages": 0}, "num_stages"), ({"num_stages": True}, "num_stages"), ({"num_stages": 1.5}, "num_stages"),
    ({"waves_per_eu": 0}, "waves_per_eu"), ({"waves_per_eu": 9}, "from 1 to 8 on gfx942"),
    ({"waves_per_eu": True}, "waves_per_eu"), ({"waves_per_eu": "2"}, "waves_per_eu"),
])
def test_invalid(opts, match):
    with pytest.raises(OptionError, match=match):
        make_options(amd_target("gfx942"), opts)


def test_waves_per_eu_limit_is_per_arch():
    assert make_options(amd_target("gfx1100"), {"waves_per_eu": 16}).waves_per_eu == 16
    with pytest.raises(OptionError, match="from 1 to 16 on gfx1100"):
        make_options(amd_target("gfx1100"), {"waves_per_eu": 17})
    with pytest.raises(OptionError, match="from 1 to 8 on gfx90a"):
        make_options(amd_target("gfx90a"), {"waves_per_eu": 10})


def test_unknown_option_is_named_and_valid_ones_listed():
    with pytest.raises(OptionError) as e:
        make_options(amd_target("gfx942"), {"num_warps": 4, "num_ctas": 2})
    msg = str(e.value)
    assert "'num_ctas'" in msg and "num_warps, num_stages, unroll_threshold, waves_per_eu, kpack" in msg


def test_targets_hook(pm):
    (specs,) = pm.hook.naiad_targets()
    (spec,) = specs
    assert spec.backend == "amd" and {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"} <= set(spec.archs)
    assert spec.warp_sizes["gfx942"] == 64 and spec.warp_sizes["gfx1100"] == 32
    assert spec.default_arch == "gfx942" and spec.compiled
    assert spec.detect_arch() is None  # no AMD GPU on this machine
    assert spec.target() == Target("amd", "gfx942", 64)


def test_per_target_hooks_ignore_other_backends(pm):
    other = Target("nvidia", "sm_90", 32)
    assert pm.hook.naiad_options(target=other, options={}) is None
    assert pm.hook.naiad_codegen(target=other) is None
    assert pm.hook.naiad_launcher(target=other) is None
    assert pm.hook.naiad_llvm_attributes(target=other, options=None, kernel=None) == []


def test_per_target_hooks_answer_for_amd(pm):
    t = amd_target("gfx1100")
    opts = pm.hook.naiad_options(target=t, options={"num_warps": 8, "waves_per_eu": 4})
    assert opts.num_warps == 8 and opts.num_stages == 2
    assert isinstance(pm.hook.naiad_codegen(target=t), AmdCodegen)
    assert isinstance(pm.hook.naiad_launcher(target=t), AmdLauncher)  # constructing it needs no HIP
    (attrs,) = pm.hook.naiad_llvm_attributes(target=t, options=opts, kernel=None)
    assert attrs == LLVMAttributes(
        calling_convention="amdgpu_kernel",
        function={
            "amdgpu-flat-work-group-size": "1,256",
            "amdgpu-waves-per-eu": "4,4",
            "denormal-fp-math-f32": "ieee,ieee",
            "uniform-work-group-size": "true",
        },
        module_flags={"amdhsa_code_object_version": 500},
    )
    (attrs,) = pm.hook.naiad_llvm_attributes(target=amd_target("gfx942"), options=AmdOptions(), kernel=None)
    assert attrs.function["amdgpu-flat-work-group-size"] == "1,256"
    assert "amdgpu-waves-per-eu" not in attrs.function


def test_importing_the_package_never_touches_hip():
    import subprocess
    import sys

    code = ("import sys; sys.modules['hip'] = None; import naiad_amd, naiad_amd.plugin, naiad_amd.runtime.launcher, "
            "naiad_amd.runtime.driver, naiad_amd.codegen; print('hip' in sys.modules and sys.modules['hip'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
