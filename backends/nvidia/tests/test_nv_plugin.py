"""The plugin's hooks through pluggy, and option validation."""
from __future__ import annotations

import numpy as np
import pluggy
import pytest

from naiad.errors import OptionError
from naiad.plugins import Codegen, Launcher, LLVMAttributes, Target, TargetSpec, hookspecs
from naiad_nvidia import plugin
from naiad_nvidia.options import NvidiaOptions

NV = Target("nvidia", "sm_90", 32)
OTHER = Target("amd", "gfx942", 64)


@pytest.fixture(scope="module")
def pm():
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name="nvidia")
    return pm


def test_targets(pm):
    (specs,) = pm.hook.naiad_targets()
    (spec,) = specs
    assert isinstance(spec, TargetSpec)
    assert spec.backend == "nvidia" and spec.default_arch == "sm_90"
    assert spec.archs == ("sm_80", "sm_89", "sm_90")
    assert all(spec.warp_sizes[a] == 32 for a in spec.archs)
    assert spec.target() == NV
    assert spec.detect_arch() in (None, *spec.archs)


def test_per_target_hooks_ignore_other_backends(pm):
    assert pm.hook.naiad_options(target=OTHER, options={}) is None
    assert pm.hook.naiad_codegen(target=OTHER) is None
    assert pm.hook.naiad_launcher(target=OTHER) is None
    assert pm.hook.naiad_llvm_attributes(target=OTHER, options=None, kernel=None) == []


def test_hooks_for_nvidia(pm):
    assert isinstance(pm.hook.naiad_codegen(target=NV), Codegen)
    assert isinstance(pm.hook.naiad_launcher(target=NV), Launcher)
    assert pm.hook.naiad_codegen(target=NV).target_info.warp_size == 32
    opts = pm.hook.naiad_options(target=NV, options={"num_warps": 8})
    (attrs,) = pm.hook.naiad_llvm_attributes(target=NV, options=opts, kernel=None)
    assert attrs == LLVMAttributes(function={"nvvm.maxntid": "256"},
                                   calling_convention="ptx_kernel")


def test_options_defaults_and_values(pm):
    o = pm.hook.naiad_options(target=NV, options={})
    assert isinstance(o, NvidiaOptions)
    assert (o.num_warps, o.num_stages, o.num_ctas, o.maxnreg, o.enable_fp_fusion) == \
        (4, 3, 1, None, True)
    o = pm.hook.naiad_options(target=NV, options={"num_warps": np.int64(16), "num_stages": 1,
                                                  "maxnreg": 128})
    assert (o.num_warps, o.num_stages, o.maxnreg) == (16, 1, 128)
    assert pm.hook.naiad_options(target=NV, options=None) == NvidiaOptions()


@pytest.mark.parametrize("bad,name", [
    ({"num_warps": 3}, "num_warps"), ({"num_warps": 64}, "num_warps"),
    ({"num_warps": 0}, "num_warps"), ({"num_warps": 4.0}, "num_warps"),
    ({"num_warps": True}, "num_warps"), ({"num_warps": "4"}, "num_warps"),
    ({"num_stages": 0}, "num_stages"), ({"num_stages": 2.5}, "num_stages"),
    ({"num_ctas": 2}, "num_ctas"), ({"maxnreg": 8}, "maxnreg"),
    ({"enable_fp_fusion": 1}, "enable_fp_fusion"), ({"opt_level": 5}, "opt_level"),
    ({"num_wraps": 4}, "num_wraps"),
])
def test_option_errors_name_the_option(pm, bad, name):
    with pytest.raises(OptionError, match=name):
        pm.hook.naiad_options(target=NV, options=bad)


def test_plugin_import_is_light():
    """Importing the plugin must not pull in LLVM or the CUDA driver."""
    import subprocess
    import sys

    code = ("import sys; import naiad_nvidia.plugin; "
            "print(int('llvmlite' in sys.modules), int('cuda.bindings.driver' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__('os').environ,
                              "PYTHONPATH": __import__('os').pathsep.join(sys.path)})
    assert out.stdout.split() == ["0", "0"], out.stderr
