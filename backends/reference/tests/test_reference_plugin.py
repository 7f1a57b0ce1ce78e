"""The reference backend's hooks: target spec, options validation, launcher."""
import numpy as np
import pytest

from naiad.errors import NaiadError, OptionError
from naiad.ir import print_module
from naiad.plugins import BinaryResult, Launcher, Target
from naiad_reference import plugin
from refkit import K, poison, random_array, rng

REF = Target("reference", "numpy", 1)
OTHER = Target("nvidia", "sm_90", 32)


def axpy_module():
    k = K("axpy", x="*f32", y="*f32", a="f32", n="i32")
    offs = k.offsets(128)
    mask = k.cmp("lt", offs, k.splat(k.a["n"], [128]))
    yp = k.addptr(k.a["y"], offs)
    v = k.op("add", k.op("mul", k.splat(k.a["a"], [128]), k.load(k.addptr(k.a["x"], offs), mask)),
             k.load(yp, mask))
    k.store(yp, v, mask)
    return k.finish()


def test_target_spec():
    (spec,) = plugin.naiad_targets()
    assert spec.backend == "reference" and spec.archs == ("numpy",)
    assert spec.default_arch == "numpy" and spec.warp_sizes == {"numpy": 1}
    assert spec.compiled is False and spec.detect_arch() == "numpy"
    assert spec.target() == REF and spec.description


def test_options_defaults_and_values():
    o = plugin.naiad_options(REF, {})
    assert (o.num_warps, o.num_stages) == (4, 3)
    o = plugin.naiad_options(REF, {"num_warps": 8, "num_stages": 2})
    assert (o.num_warps, o.num_stages) == (8, 2)
    assert plugin.naiad_options(OTHER, {"num_warps": 3}) is None


@pytest.mark.parametrize("options,match", [
    ({"num_warps": 3}, "power of two"),
    ({"num_warps": 0}, "power of two"),
    ({"num_warps": "4"}, "must be an int"),
    ({"num_stages": True}, "must be an int"),
    ({"num_stages": -1}, ">= 0"),
    ({"waves_per_eu": 2}, "known: num_warps, num_stages, unroll_threshold"),
])
def test_options_rejects_bad_values(options, match):
    with pytest.raises(OptionError, match=match):
        plugin.naiad_options(REF, options)


def test_launcher_only_for_reference():
    assert plugin.naiad_launcher(OTHER) is None
    launcher = plugin.naiad_launcher(REF)
    assert isinstance(launcher, Launcher)
    a = np.arange(4.0)
    assert launcher.to_device(a) is a
    assert launcher.data_pointer(a) is None
    e = launcher.empty((3, 2), np.int16)
    assert e.shape == (3, 2) and e.dtype == np.int16
    assert launcher.empty(5, "fp16").dtype == np.float16


@pytest.mark.parametrize("form", ["module", "text", "binary_result"])
def test_launcher_loads_and_launches(form):
    m = axpy_module()
    loadable = {"module": m, "text": print_module(m),
                "binary_result": BinaryResult(stages={"tile": print_module(m)},
                                              binary_stage="tile")}[form]
    launcher = plugin.naiad_launcher(REF)
    handle = launcher.load(loadable, "axpy")
    r = rng()
    x = random_array(r, 300, np.float32)
    y = random_array(r, 300, np.float32)
    want = (np.float32(2.5) * x + y)
    launcher.launch(handle, (3, 1, 1), 4, 0, [x, y, 2.5, 300], ["*fp32", "*fp32", "fp32", "i32"])
    np.testing.assert_array_equal(y, want)


def test_launcher_rejects_what_it_cannot_load():
    launcher = plugin.naiad_launcher(REF)
    with pytest.raises(NaiadError, match="cannot load"):
        launcher.load(12, "axpy")
    with pytest.raises(NaiadError, match="no function @nope"):
        launcher.load(axpy_module(), "nope")


def test_plugin_manager_finds_the_reference_target():
    from naiad.plugins.manager import get_plugin_manager

    table = get_plugin_manager().target_table()
    assert "reference" in table


def test_launch_through_the_plugin_manager_hooks():
    from naiad.plugins.manager import get_plugin_manager

    pm = get_plugin_manager()
    launcher = pm.hook.naiad_launcher(target=REF)
    opts = pm.hook.naiad_options(target=REF, options={"num_warps": 2})
    assert opts.num_warps == 2
    x = random_array(rng(), 64, np.float32)
    y = poison(64, np.float32)
    y[:] = 1
    launcher.launch(launcher.load(axpy_module(), "axpy"), (1, 1, 1), opts.num_warps, 0,
                    [x, y, -1.0, 64], None)
    np.testing.assert_array_equal(y, 1 - x)
