"""The host API a Triton program uses: portable launch options, compiled-kernel objects,
driver queries, autotune conventions, @jit keywords, testing helpers, tensor descriptors."""
import warnings

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.runtime import options as opts


@naiad.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def _inputs(n=100, seed=0):
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)    # poisoned: unwritten elements show
    return x, out


@pytest.fixture
def reference():
    with naiad.target("reference"):
        yield


def test_gpu_launch_options_are_ignored_on_reference_with_one_warning(reference):
    x, out = _inputs()
    opts._warned.discard(("reference", "launch_pdl"))
    with pytest.warns(opts.OptionWarning, match="launch_pdl.*not supported by the reference"):
        add_one[(4,)](x, out, 100, BLOCK=32, num_ctas=1, launch_pdl=True, maxnreg=64,
                      launch_cooperative_grid=False, extern_libs={}, num_warps=8)
    np.testing.assert_array_equal(out, x + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # the second time: no warning
        add_one[(4,)](x, out, 100, BLOCK=32, launch_pdl=False)


def test_unknown_launch_keyword_names_it_in_tritons_words(reference):
    x, out = _inputs()
    with pytest.raises(naiad.OptionError, match="Keyword argument num_wraps was specified but "
                                                "unrecognised"):
        add_one[(4,)](x, out, 100, BLOCK=32, num_wraps=4)


def test_warmup_returns_a_launchable_compiled_kernel(reference):
    x, out = _inputs(64, seed=1)
    k = add_one.warmup(x, out, 64, BLOCK=16, grid=(1,))
    assert k.n_regs == 0 and k.n_spills == 0 and k.metadata.shared == 0
    assert k.metadata.num_warps == 4
    k._init_handles()
    k[(4,)](x, out, 64, 16)              # every parameter, constexpr skipped (as Triton)
    np.testing.assert_array_equal(out, x + 1)
    out[:] = np.nan
    k[(4,)](x, out, 64)                  # runtime arguments only
    np.testing.assert_array_equal(out, x + 1)
    with pytest.raises(naiad.NaiadError, match="specialised for i32"):
        k[(4,)](x, out, 2.5)
    with pytest.raises(AttributeError, match="no 'nope'"):
        k.metadata.nope


def test_warmup_then_compiled_launch_reuses_the_targets_binders(reference):
    """Tutorial 02 calls warmup() and launches the compiled kernel on every call: both must reuse
    the target's binders (their per-type handlers are learnt once), not make new ones per call."""
    from naiad.runtime.targets import current_state

    x, out = _inputs(64, seed=2)
    k = add_one.warmup(x, out, 64, BLOCK=16, grid=(1,))
    k[(4,)](x, out, 64, 16)
    state = current_state()
    binders = (state.binder, state.warmup_binder)
    assert None not in binders
    for _ in range(3):
        out[:] = np.nan
        again = add_one.warmup(x, out, 64, BLOCK=16, grid=(1,))
        again[(4,)](x, out, 64, 16)
        np.testing.assert_array_equal(out, x + 1)
    assert again is k and (state.binder, state.warmup_binder) == binders
    with pytest.raises(naiad.NaiadError, match=r"takes 3 runtime arguments \(x_ptr, out_ptr, n\) "
                                               r"or all 4 parameters"):
        k[(4,)](x, out)


def test_driver_reports_the_host_on_reference(reference):
    from naiad.runtime import driver

    t = driver.active.get_current_target()
    assert (t.backend, t.warp_size) == ("reference", 1)
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    for key in ("multiprocessor_count", "max_shared_mem", "max_num_regs", "warpSize"):
        assert isinstance(props[key], int) and props[key] >= 1
    torch = pytest.importorskip("torch", reason="torch is a peer, not a dependency")
    assert driver.active.get_active_torch_device() == torch.device("cpu")


def test_driver_names_nvidia_as_cuda_with_an_int_arch():
    from naiad.runtime import driver

    with naiad.target("nvidia:sm_90"):
        assert driver.active.get_current_target() == ("cuda", 90, 32)


def test_jit_rejects_unknown_keywords_and_accepts_tritons():
    with pytest.raises(TypeError, match="unexpected keyword argument 'inline'"):
        naiad.jit(inline=True)
    deco = naiad.jit(debug=True, repr=lambda _: "k", launch_metadata=None,
                     do_not_specialize_on_alignment=["n"])
    k = deco(add_one.fn)
    assert k.debug is True


def test_autotune_prunes_with_tritons_calling_conventions(reference):
    seen = {}

    def early(configs, nargs, **kwargs):
        seen["nargs"], seen["kwargs"] = sorted(nargs), sorted(kwargs)
        return [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"]]

    def model(**kw):
        return -kw["BLOCK"]      # the biggest block "runs fastest"

    configs = [naiad.Config({"BLOCK": b}) for b in (16, 32, 64, 128)]

    @naiad.autotune(configs=configs, key=["n"],
                    prune_configs_by={"early_config_prune": early, "perf_model": model,
                                      "top_k": 1})
    @naiad.jit
    def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

    x, out = _inputs(40, seed=2)
    tuned[lambda m: (naiad.cdiv(40, m["BLOCK"]),)](x, out, n=40)
    np.testing.assert_array_equal(out, x + 1)
    assert seen["nargs"] == ["n", "out_ptr", "x_ptr"] and seen["kwargs"] == ["n"]
    assert tuned.best_config.kwargs == {"BLOCK": 32}    # 64, 128 pruned; top 1 by the model
    with pytest.raises(naiad.OptionError, match="No valid autotuner configs after pruning"):
        tuned.prune_configs_by = {"early_config_prune": lambda configs, nargs, **kw: []}
        tuned.cache.clear()
        tuned[(1,)](x, out, n=41)


def test_assert_close_and_perf_report(capsys):
    from naiad import testing

    a = np.random.default_rng(3).standard_normal(10)
    testing.assert_close(a, a + 1e-4, atol=1e-3, rtol=0)
    with pytest.raises(AssertionError):
        testing.assert_close(a, a + 1.0, atol=1e-3, rtol=0)

    @testing.perf_report(testing.Benchmark(x_names=["n"], x_vals=[2, 4], line_arg="p",
                                           line_vals=["a", "b"], line_names=["A", "B"],
                                           plot_name="demo", args={"k": 10}))
    def bench(n, p, k):
        return n * k + (1 if p == "b" else 0)

    rows = bench.run(print_data=True, return_df=True)
    printed = capsys.readouterr().out
    assert "demo:" in printed and "41" in printed
    got = rows.values.tolist() if hasattr(rows, "values") else [list(r.values()) for r in rows]
    assert got == [[2, 20.0, 21.0], [4, 40.0, 41.0]]


def test_tensor_descriptor_validates_its_fields():
    from naiad.tools.tensor_descriptor import TensorDescriptor, TensorDescriptorError

    base = np.zeros((64, 32), np.float32)
    d = TensorDescriptor.from_tensor(base, [16, 32])
    assert d.shape == [64, 32] and d.strides == [32, 1]
    with pytest.raises(TensorDescriptorError, match="powers of 2"):
        TensorDescriptor(base, [64, 32], [32, 1], [16, 24])
    with pytest.raises(TensorDescriptorError, match="Last dimension must be contiguous"):
        TensorDescriptor(base, [64, 32], [32, 2], [16, 16])
    with pytest.raises(TensorDescriptorError, match="rank mismatch"):
        TensorDescriptor(base, [64, 32], [32], [16, 16])
    with pytest.raises(TensorDescriptorError, match="16-byte aligned"):
        TensorDescriptor(base, [64, 3], [3, 1], [16, 4])
    with pytest.raises(TensorDescriptorError, match="'nan' is only supported for floating"):
        TensorDescriptor(np.zeros((4, 4), np.int32), [4, 4], [4, 1], [4, 4], padding="nan")


def test_set_allocator_keeps_a_callable_and_rejects_others():
    from naiad.runtime.allocator import get_allocator

    def alloc(size, align, stream):
        return bytearray(size)

    naiad.set_allocator(alloc)
    assert get_allocator() is alloc
    with pytest.raises(naiad.OptionError, match="callable"):
        naiad.set_allocator(42)
    naiad.set_allocator(None)


def test_kernel_defined_by_exec_compiles_from_the_exec_text(reference):
    src = (
        "@naiad.jit\n"
        "def twice(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)\n")
    ns = {}
    exec(src, {"naiad": naiad, "tl": tl}, ns)
    x, out = _inputs(30, seed=4)
    ns["twice"][(1,)](x, out, 30, BLOCK=32)
    np.testing.assert_array_equal(out, x * 2)
    k = ns["twice"]
    k._unsafe_update_src(k.src.replace("* 2.0", "* 3.0"))
    k[(1,)](x, out, 30, BLOCK=32)
    np.testing.assert_array_equal(out, x * 3)


def test_none_for_a_runtime_parameter_compiles_it_as_a_constexpr(reference):
    @naiad.jit
    def maybe_bias(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x_ptr + offs, mask=mask)
        if bias_ptr is not None:
            v = v + tl.load(bias_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, v, mask=mask)

    x, out = _inputs(20, seed=6)
    bias = np.random.default_rng(7).standard_normal(20).astype(np.float32)
    maybe_bias[(1,)](x, None, out, 20, BLOCK=32)
    np.testing.assert_array_equal(out, x)
    maybe_bias[(1,)](x, bias, out, 20, BLOCK=32)
    np.testing.assert_array_equal(out, x + bias)
    out[:] = np.nan
    maybe_bias[(1,)](x, None, out, 20, BLOCK=32)      # the None specialisation again
    np.testing.assert_array_equal(out, x)
    assert maybe_bias.cache_info()["compiles"] == 2
