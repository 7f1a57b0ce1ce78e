"""kernel[grid](...) on a stub backend: binding, types, specialisation keys, grids, options."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
from naiad.runtime.specialize import ArgumentError
from naiad_stub_backend import FakeDeviceArray, StubBackend


@naiad.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
    pid = tl.program_id(0)  # noqa: F821 -- never compiled here (stand-in compiler)
    offs = pid * BLOCK + tl.arange(0, BLOCK)  # noqa: F821
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))  # noqa: F821


@naiad.jit(do_not_specialize=["n"])
def add_nospec(x_ptr, n, BLOCK: "tl.constexpr" = 64):
    pass


@naiad.jit
def scalars(a, b, c, d, e):
    pass


def _arrays(rng, n=1000, dtype=np.float32):
    return (rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype),
            np.full(n, np.nan, dtype))


def test_launch_binds_types_and_passes_arrays(stub, fake_compiler):
    rng = np.random.default_rng(1)
    x, y, out = _arrays(rng)
    add[(8,)](x, y, out, 1000, BLOCK=128)
    (call,) = fake_compiler.calls
    assert call["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                 "n": "i32"}
    assert call["constexprs"] == {"BLOCK": 128}
    assert call["target"] == "stub:v1"
    (launch,) = stub.launcher.launches
    assert launch["grid"] == (8, 1, 1)
    assert launch["arg_types"] == ("*fp32", "*fp32", "*fp32", "i32")
    assert launch["args"][0] is x and launch["args"][2] is out and launch["args"][3] == 1000
    assert launch["num_warps"] == 4
    assert stub.launcher.loads[0]["binary_stage"] == "tile"


def test_warm_launch_hits_memory_cache(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(2))
    for _ in range(5):
        add[(4,)](x, y, out, 1000, BLOCK=128)
    add[(4,)](x, y, out, 1000, 128)          # constexpr given positionally: same kernel
    info = add.cache_info()
    assert len(fake_compiler.calls) == 1
    assert info["hits"] >= 5 and info["launches"] >= 6
    assert len(stub.launcher.loads) == 1     # loaded once, launched many times
    add[(4,)](x, y, out, 1000, BLOCK=256)
    assert len(fake_compiler.calls) == 2
    assert fake_compiler.calls[1]["constexprs"] == {"BLOCK": 256}


def test_grid_callable_sees_meta(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(3), n=1000)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (naiad.cdiv(meta["n"], meta["BLOCK"]),)

    add[grid](x, y, out, 1000, BLOCK=128, num_warps=2)
    assert stub.launcher.launches[-1]["grid"] == (8, 1, 1)
    assert seen["BLOCK"] == 128 and seen["n"] == 1000 and seen["x_ptr"] is x
    assert seen["num_warps"] == 2
    add[lambda m: (2, 3)](x, y, out, 1000, BLOCK=128)
    assert stub.launcher.launches[-1]["grid"] == (2, 3, 1)
    add[4, 2, 5](x, y, out, 1000, BLOCK=128)
    assert stub.launcher.launches[-1]["grid"] == (4, 2, 5)


@pytest.mark.parametrize("n, expected", [
    (1024, {"n": {"divisibility": 16}}),
    (1, {"n": {"equal_to": 1}}),
    (1000, {}),
    (0, {"n": {"divisibility": 16}}),
])
def test_integer_specialisation(stub, fake_compiler, n, expected):
    x, y, out = _arrays(np.random.default_rng(4), n=16)
    add[(1,)](x, y, out, n, BLOCK=16)
    spec = fake_compiler.calls[-1]["specialization"]
    spec.pop("x_ptr"), spec.pop("y_ptr"), spec.pop("out_ptr")   # arrays count as aligned
    assert spec == expected


def test_specialisations_are_distinct_kernels(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(5), n=16)
    for n in (32, 48, 1, 7, 13, 1, 64):
        add[(1,)](x, y, out, n, BLOCK=16)
    # three classes: divisible by 16 (32, 48, 64), equal to 1, neither (7, 13)
    assert len(fake_compiler.calls) == 3
    specs = [c["specialization"].get("n") for c in fake_compiler.calls]
    assert specs == [{"divisibility": 16}, {"equal_to": 1}, None]
    texts = {load["binary"] for load in stub.launcher.loads}
    assert len(texts) == 3


def test_do_not_specialize(stub, fake_compiler):
    x = np.ones(16, np.float32)
    for n in (32, 1, 7):
        add_nospec[(1,)](x, n)
    assert len(fake_compiler.calls) == 1
    assert "n" not in fake_compiler.calls[0]["specialization"]
    assert fake_compiler.calls[0]["constexprs"] == {"BLOCK": 64}   # the default
    add_nospec[(1,)](x, 2**40)        # but the type still counts: i64 is a new kernel
    assert fake_compiler.calls[-1]["signature"]["n"] == "i64"


def test_scalar_types(stub, fake_compiler):
    scalars[(1,)](True, 2**40, 2**63 + 5, 1.5, -7)
    assert fake_compiler.calls[-1]["signature"] == {"a": "i1", "b": "i64", "c": "u64",
                                                   "d": "fp32", "e": "i32"}
    scalars[(1,)](np.float16(1), np.int64(32), np.uint8(1), np.float64(2), np.bool_(True))
    call = fake_compiler.calls[-1]
    assert call["signature"] == {"a": "fp16", "b": "i64", "c": "u8", "d": "fp64", "e": "i1"}
    assert call["specialization"] == {"b": {"divisibility": 16}, "c": {"equal_to": 1}}
    with pytest.raises(ArgumentError, match="argument 'c'.*does not fit in 64 bits"):
        scalars[(1,)](1, 2, 2**64, 4, 5)


def test_array_dtypes(stub, fake_compiler):
    import ml_dtypes

    for dtype, sig in [(np.float16, "*fp16"), (ml_dtypes.bfloat16, "*bf16"), (np.bool_, "*i1"),
                       (np.int8, "*i8"), (np.uint64, "*u64"), (np.float64, "*fp64")]:
        a = np.zeros(4, dtype)
        add_nospec[(1,)](a, 4)
        assert fake_compiler.calls[-1]["signature"]["x_ptr"] == sig
    with pytest.raises(ArgumentError, match="'x_ptr'.*complex64"):
        add_nospec[(1,)](np.zeros(4, np.complex64), 4)


def test_binding_errors(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(6), n=16)
    with pytest.raises(ArgumentError, match="missing argument.*n"):
        add[(1,)](x, y, out, BLOCK=16)
    with pytest.raises(ArgumentError, match="missing argument.*BLOCK"):
        add[(1,)](x, y, out, 16)
    with pytest.raises(ArgumentError, match="takes 5 arguments"):
        add[(1,)](x, y, out, 16, 16, 16)
    with pytest.raises(ArgumentError, match="multiple values for argument 'n'"):
        add[(1,)](x, y, out, 16, n=16, BLOCK=16)
    with pytest.raises(ArgumentError, match="'n'.*tl.constexpr"):
        add[(1,)](x, y, out, "sixteen", BLOCK=16)
    with pytest.raises(ArgumentError, match="'x_ptr'.*a list cannot be a runtime argument"):
        add[(1,)]([1.0, 2.0], y, out, 16, BLOCK=16)
    assert not stub.launcher.launches


def test_none_makes_a_runtime_parameter_a_constexpr(stub, fake_compiler):
    """Triton's rule: a runtime parameter given None is specialised as constexpr None."""
    x, y, out = _arrays(np.random.default_rng(7), n=16)
    add[(1,)](x, None, out, 16, BLOCK=16)
    call = fake_compiler.calls[-1]
    assert "y_ptr" not in call["signature"] and call["constexprs"]["y_ptr"] is None
    assert len(stub.launcher.launches[-1]["args"]) == 3     # x, out, n: y is compiled in
    add[(1,)](x, y, out, 16, BLOCK=16)
    assert "y_ptr" in fake_compiler.calls[-1]["signature"]
    add[(1,)](x, None, out, 16, BLOCK=16)
    assert len(fake_compiler.calls) == 2                    # the None kernel is cached


@pytest.mark.parametrize("grid, message", [
    ((1, 2, 3, 4), "1 to 3 dimensions"),
    ((-1,), "must not be negative"),
    (("4",), "tuple of 1 to 3 ints"),
    (2.5, "tuple of 1 to 3 ints"),
])
def test_bad_grids(stub, fake_compiler, grid, message):
    x, y, out = _arrays(np.random.default_rng(7), n=16)
    with pytest.raises(ArgumentError, match=message):
        add[grid](x, y, out, 16, BLOCK=16)
    assert not stub.launcher.launches


def test_empty_grid_launches_nothing(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(8), n=16)
    add[(0,)](x, y, out, 16, BLOCK=16)
    add[lambda m: (4, 0)](x, y, out, 16, BLOCK=16)
    assert not stub.launcher.launches
    assert len(fake_compiler.calls) == 1     # compiled (errors surface) but not launched


def test_options_are_validated_and_keyed(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(9), n=16)
    add[(1,)](x, y, out, 16, BLOCK=16, num_warps=8, flavor="spicy")
    assert fake_compiler.calls[-1]["options"] == {"num_warps": 8, "flavor": "spicy"}
    assert stub.launcher.launches[-1]["num_warps"] == 8
    add[(1,)](x, y, out, 16, BLOCK=16, num_warps=2)
    assert len(fake_compiler.calls) == 2
    with pytest.raises(naiad.OptionError, match="unknown option.*num_wraps"):
        add[(1,)](x, y, out, 16, BLOCK=16, num_wraps=4)


def test_stream_is_passed_to_the_launcher_not_the_key(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(10), n=16)
    add[(1,)](x, y, out, 16, BLOCK=16, stream=7)
    add[(1,)](x, y, out, 16, BLOCK=16)
    assert [la["stream"] for la in stub.launcher.launches] == [7, None]
    assert len(fake_compiler.calls) == 1


def test_warmup_compiles_without_launching(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(11), n=16)
    kernel = add.warmup(x, y, out, 16, BLOCK=32, grid=(1,))
    assert kernel.name == "add" and "BLOCK" in kernel.asm["tile"]
    assert not stub.launcher.launches and not stub.launcher.loads
    add[(1,)](x, y, out, 16, BLOCK=32)
    assert len(fake_compiler.calls) == 1
    assert len(stub.launcher.launches) == 1


def test_fake_torch_tensor_on_interpreted_target(stub, fake_compiler):
    class Device:
        type = "cpu"

    class Tensor:
        def __init__(self, array):
            self.array = array
            self.dtype = type("dtype", (), {"__str__": lambda s: "torch.float16"})()
            self.device = Device()

        def data_ptr(self):
            return self.array.ctypes.data

        def detach(self):
            return self

        def numpy(self):
            return self.array

    Tensor.__module__ = "torch"
    host = np.arange(8, dtype=np.float16)
    add_nospec[(1,)](Tensor(host), 8)
    assert fake_compiler.calls[-1]["signature"]["x_ptr"] == "*fp16"
    assert stub.launcher.launches[-1]["args"][0] is host


def test_device_pointers_on_compiled_target(isolated_pm, fake_compiler):
    gpu = StubBackend("gpu", compiled=True, archs=("g1",))
    isolated_pm.register(gpu, name="gpu-plugin")
    with naiad.target("gpu"):
        add_nospec[(1,)](FakeDeviceArray(0x10000, np.float32), 4)
        add_nospec[(1,)](FakeDeviceArray(0x20000, np.float32), 4)
        add_nospec[(1,)](FakeDeviceArray(0x10004, np.float32), 4)
        assert [la["args"][0] for la in gpu.launcher.launches] == [0x10000, 0x20000, 0x10004]
        specs = [c["specialization"] for c in fake_compiler.calls]
        assert specs == [{"x_ptr": {"divisibility": 16}}, {}]   # aligned, then misaligned
        assert gpu.launcher.loads[0]["binary_stage"] == "stubbin"

        class CudaArray:
            __cuda_array_interface__ = {"data": (0x30000, False), "typestr": "<f2",
                                        "shape": (4,), "version": 3}

        add_nospec[(1,)](CudaArray(), 4)
        assert fake_compiler.calls[-1]["signature"]["x_ptr"] == "*fp16"
        assert gpu.launcher.launches[-1]["args"][0] == 0x30000
        with pytest.raises(ArgumentError, match="host numpy array.*naiad.to_device"):
            add_nospec[(1,)](np.zeros(4, np.float32), 4)


def test_device_arrays_rejected_by_interpreter(stub, fake_compiler):
    class CudaArray:
        __cuda_array_interface__ = {"data": (0x30000, False), "typestr": "<f4",
                                    "shape": (4,), "version": 3}

    with pytest.raises(ArgumentError, match="runs on the host"):
        add_nospec[(1,)](CudaArray(), 4)


def test_plugin_change_drops_loaded_kernels(stub, fake_compiler, isolated_pm):
    x = np.ones(4, np.float32)
    add_nospec[(1,)](x, 4)
    isolated_pm.unregister(name="stub-plugin")
    replacement = StubBackend("stub")
    isolated_pm.register(replacement, name="stub-plugin-2")
    with naiad.target("stub"):
        add_nospec[(1,)](x, 4)
    assert len(replacement.launcher.launches) == 1   # the new plugin's launcher got the launch
    assert len(stub.launcher.launches) == 1


def test_warm_path_is_cheap(stub, fake_compiler):
    """Regression guard for the hot loop (measured ~1.3 us here; the bound is generous for CI)."""
    import time

    stub.launcher.launch = lambda *a, **k: None          # measure naiad, not the stub
    x, y, out = _arrays(np.random.default_rng(12), n=16)
    add[(1,)](x, y, out, 16, BLOCK=16)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(2000):
            add[(1,)](x, y, out, 16, BLOCK=16)
        best = min(best, (time.perf_counter() - t0) / 2000)
    assert best < 50e-6, f"warm launch took {best * 1e6:.1f} us"


def test_warmup_ahead_of_time_for_a_device_target(isolated_pm, fake_compiler):
    """warmup() compiles for a compiled target even when its launcher refuses host arrays (no
    device here): the arrays only carry their dtypes."""
    gpu = StubBackend("gpu", compiled=True, archs=("g1",))
    isolated_pm.register(gpu, name="gpu-plugin")

    def refuse(obj):
        if isinstance(obj, np.ndarray):
            raise naiad.DeviceError("host array; use naiad.to_device")
        return None

    gpu.launcher.data_pointer = refuse
    x = np.zeros(16, np.float16)
    kernel = add_nospec.warmup(x, 16, grid=(1,), target="gpu")
    assert kernel.binary_stage == "stubbin"
    assert fake_compiler.calls[-1]["signature"] == {"x_ptr": "*fp16", "n": "i32"}
    assert fake_compiler.calls[-1]["specialization"] == {"x_ptr": {"divisibility": 16}}
    assert not gpu.launcher.loads
    with naiad.target("gpu"):
        with pytest.raises(naiad.DeviceError, match="naiad.to_device"):
            add_nospec[(1,)](x, 16)          # launching still refuses the host array


def test_constexpr_type_is_part_of_the_key(stub, fake_compiler):
    x = np.ones(4, np.float32)
    for block in (1, True, 1.0, 1):
        add_nospec[(1,)](x, 4, BLOCK=block)
    assert [type(c["constexprs"]["BLOCK"]) for c in fake_compiler.calls] == [int, bool, float]


# -- the generated warm path ---------------------------------------------------------------------

def test_warm_launches_pass_each_calls_values(stub, fake_compiler):
    add.cache_clear()                         # fresh counters
    rng = np.random.default_rng(13)
    calls = []
    for n in (32, 48, 7, 64, 1, 13, 1, 7):
        x, y, out = _arrays(rng, n=16)
        add[(n,)](x, y, out, n, BLOCK=16)
        calls.append((x, y, out, n))
    assert len(fake_compiler.calls) == 3      # n divisible by 16, n == 1, neither
    launches = stub.launcher.launches
    assert len(launches) == len(calls)
    for launch, (x, y, out, n) in zip(launches, calls):
        assert launch["args"][0] is x and launch["args"][1] is y and launch["args"][2] is out
        assert launch["args"][3] == n and launch["grid"] == (n, 1, 1)
        assert launch["arg_types"] == ("*fp32", "*fp32", "*fp32", "i32")
    info = add.cache_info()
    assert info["launches"] == len(calls) and info["hits"] == len(calls) - 3
    # the three specialisations run three different binaries, each loaded once
    binaries = [load["binary"] for load in stub.launcher.loads]
    assert len(binaries) == 3 and len(set(binaries)) == 3
    by_handle = {launch["handle"][2] for launch in launches}
    assert by_handle == {0, 1, 2}


def test_call_shapes_share_one_kernel(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(14), n=16)
    for _ in range(2):     # the second round runs on the warm path
        add[(1,)](x, y, out, 16, BLOCK=16, num_warps=2)
        add[(1,)](x, y, out, 16, num_warps=2, BLOCK=16)
        add[(1,)](x, y, out, 16, 16, num_warps=2)
        add[(1,)](x, y, out, n=16, BLOCK=16, num_warps=2)
        add[(1,)](x, y, out_ptr=out, n=16, num_warps=2, BLOCK=16)
    assert len(fake_compiler.calls) == 1
    assert all(la["args"][2] is out and la["args"][3] == 16 and la["num_warps"] == 2
               for la in stub.launcher.launches)
    assert len(stub.launcher.launches) == 10
    add[(1,)](x, y, out, 16, BLOCK=16.0, num_warps=2)      # a float constexpr: a new kernel
    add[(1,)](x, y, out, 16, BLOCK=16.0, num_warps=2)
    assert len(fake_compiler.calls) == 2
    assert type(fake_compiler.calls[1]["constexprs"]["BLOCK"]) is float
    add[(1,)](x, y, out, 16, BLOCK=16, num_warps=4)        # another option value: a new kernel
    assert len(fake_compiler.calls) == 3
    assert stub.launcher.launches[-1]["num_warps"] == 4


def test_warm_path_still_checks_every_argument(stub, fake_compiler):
    x, y, out = _arrays(np.random.default_rng(15), n=16)
    for _ in range(3):
        add[(1,)](x, y, out, 16, BLOCK=16)
    with pytest.raises(ArgumentError, match="'n'.*tl.constexpr"):
        add[(1,)](x, y, out, "16", BLOCK=16)
    with pytest.raises(ArgumentError, match="'x_ptr'.*complex64"):
        add[(1,)](np.zeros(4, np.complex64), y, out, 16, BLOCK=16)
    with pytest.raises(ArgumentError, match="multiple values for argument 'n'"):
        add[(1,)](x, y, out, 16, n=16, BLOCK=16)
    with pytest.raises(ArgumentError, match="'n'.*does not fit in 64 bits"):
        add[(1,)](x, y, out, 2 ** 64, BLOCK=16)
    with pytest.raises(ArgumentError, match="must not be negative"):
        add[(-2,)](x, y, out, 16, BLOCK=16)
    assert len(stub.launcher.launches) == 3
    add[(1,)](x, y, out, 2 ** 40, BLOCK=16)       # i64 now: a new kernel, still launched
    assert fake_compiler.calls[-1]["signature"]["n"] == "i64"
    assert stub.launcher.launches[-1]["args"][3] == 2 ** 40


def test_warm_path_grids(stub, fake_compiler):
    x = np.ones(16, np.float32)
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (naiad.cdiv(meta["n"], meta["BLOCK"]),)

    for _ in range(2):
        add_nospec[(3,)](x, 16)
        add_nospec[2, 5](x, 16)
        add_nospec[[4, 1, 2]](x, 16)
        add_nospec[grid](x, 1000)
        add_nospec[(0,)](x, 16)
        add_nospec[np.int64(6),](x, 16)
    grids = [la["grid"] for la in stub.launcher.launches]
    assert grids == [(3, 1, 1), (2, 5, 1), (4, 1, 2), (16, 1, 1), (6, 1, 1)] * 2
    assert all(type(g) is int for grid3 in grids for g in grid3)
    assert seen[-1]["BLOCK"] == 64 and seen[-1]["n"] == 1000 and seen[-1]["x_ptr"] is x
    assert len(fake_compiler.calls) == 1


def test_warm_path_follows_the_target(isolated_pm, fake_compiler):
    plugin = StubBackend("stub")
    isolated_pm.register(plugin, name="stub-plugin")
    x = np.ones(16, np.float32)
    for _ in range(3):
        for target in ("stub:v1", "stub:v2"):
            with naiad.target(target):
                add_nospec[(1,)](x, 16)
    assert [c["target"] for c in fake_compiler.calls] == ["stub:v1", "stub:v2"]
    handles = [la["handle"][2] for la in plugin.launcher.launches]
    assert handles == [0, 1] * 3


@naiad.jit
def with_shape(x_ptr, SHAPE: "tl.constexpr"):
    pass


def test_unhashable_constexpr_on_the_warm_path(stub, fake_compiler):
    x = np.ones(4, np.float32)
    for _ in range(3):
        with_shape[(1,)](x, SHAPE=[1, 2])
        with_shape[(1,)](x, [1, 2])
    with_shape[(1,)](x, SHAPE=[1, 3])
    assert [c["constexprs"]["SHAPE"] for c in fake_compiler.calls] == [[1, 2], [1, 3]]
    assert len(stub.launcher.launches) == 7
