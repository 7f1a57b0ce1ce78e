"""The Triton tutorial kernels compile to verified tile IR with the expected ops and types, go
through ``naiad.compile``, and (when the reference executor is importable) compute what numpy
computes."""
from __future__ import annotations

import numpy as np
import pytest

from frontend_testutil import compile_ir, ops, result_types
from tutorials import TUTORIALS

import naiad


def _compile(name, **override):
    kernel, sig, consts = TUTORIALS[name]
    return compile_ir(kernel, sig, {**consts, **override})


def test_vector_add_has_masked_loads_of_1024_f32():
    module, text = _compile("vector_add")
    fn = module.functions["add_kernel"]
    assert fn.attrs == {"kernel": True}
    assert [str(t) for t in fn.arg_types] == ["ptr<f32>", "ptr<f32>", "ptr<f32>", "i32"]
    loads = ops(module, "load")
    assert len(loads) == 2
    for op in loads:
        assert str(op.results[0].type) == "tensor<1024xf32>"
        assert len(op.operands) == 2 and str(op.operands[1].type) == "tensor<1024xi1>"
    (store,) = ops(module, "store")
    assert len(store.operands) == 3
    assert ops(module, "make_range")[0].attrs == {"start": 0, "end": 1024}


def test_vector_add_block_size_follows_the_constexpr():
    _, text = _compile("vector_add", BLOCK_SIZE=256)
    assert "tensor<256xf32>" in text and "tensor<1024" not in text


def test_softmax_loops_with_num_stages_and_reduces():
    module, _ = _compile("softmax")
    (loop,) = ops(module, "for")
    assert loop.attrs == {"num_stages": 3}
    assert [str(v.type) for v in loop.operands] == ["i32", "i32", "i32"]
    reduces = ops(module, "reduce")
    combiners = [[o.name for o in r.regions[0].block.ops] for r in reduces]
    assert combiners == [["max", "yield"], ["add", "yield"]]
    assert all(str(r.results[0].type) == "f32" for r in reduces)
    (load,) = ops(module, "load")
    other = load.operands[2].defining_op
    assert other.name == "constant" and other.attrs["value"] == float("-inf")
    assert ops(module, "exp") and ops(module, "div")


def test_matmul_calls_the_jit_activation_and_accumulates_in_f32():
    module, _ = _compile("matmul")
    assert set(module.functions) == {"matmul_kernel", "leaky_relu"}
    act = module.functions["leaky_relu"]
    assert act.attrs == {"kernel": False}
    assert [str(t) for t in act.arg_types] == ["tensor<64x64xf32>"]
    assert [str(t) for t in act.result_types] == ["tensor<64x64xf32>"]
    (call,) = ops(module, "call")
    assert call.attrs == {"callee": "leaky_relu"}
    (dot,) = ops(module, "dot")
    assert [str(v.type) for v in dot.operands] == [
        "tensor<64x32xf16>", "tensor<32x64xf16>", "tensor<64x64xf32>"]
    (loop,) = ops(module, "for")
    assert [str(t.type) for t in loop.results] == [
        "tensor<64x64xf32>", "tensor<64x32xptr<f16>>", "tensor<32x64xptr<f16>>"]
    (store,) = ops(module, "store")
    assert str(store.operands[1].type) == "tensor<64x64xf16>"


def test_matmul_without_activation_emits_no_callee():
    module, _ = _compile("matmul", ACTIVATION="")
    assert set(module.functions) == {"matmul_kernel"}
    assert not ops(module, "call")


def test_layer_norm_three_loops_and_scalar_stores():
    module, _ = _compile("layer_norm")
    loops = ops(module, "for")
    assert len(loops) == 3
    assert [len(lp.results) for lp in loops] == [1, 1, 0]
    stores = ops(module, "store")
    assert [str(s.operands[1].type) for s in stores] == ["f32", "f32", "tensor<1024xf16>"]
    assert "f32" in result_types(module, "sqrt")


def test_int_ops_types_follow_triton_promotion():
    module, _ = _compile("int_ops")
    by_name = {}
    for op in ops(module):
        hint = op.results[0].name_hint if op.results else None
        if hint:
            by_name[hint] = str(op.results[0].type)
    assert by_name["q"] == by_name["r"] == "tensor<256xi32>"
    assert by_name["mixed"] == "tensor<256xi32>"
    assert by_name["wide"] == "tensor<256xu32>"
    assert by_name["small"] == "tensor<256xi8>"
    assert by_name["sh"] == "tensor<256xi32>" and by_name["ush"] == "tensor<256xu32>"
    assert [op.name for op in ops(module) if op.results and op.results[0].name_hint == "q"] \
        == ["div"]


def test_static_range_unrolls_a_2d_grid():
    module, _ = _compile("tiles_2d")
    assert not ops(module, "for")
    assert len(ops(module, "load")) == 3 and len(ops(module, "store")) == 3
    assert sorted(op.attrs["axis"] for op in ops(module, "program_id")) == [0, 1]
    assert all(str(op.results[0].type) == "tensor<16x32xf32>" for op in ops(module, "load"))


def test_histogram_uses_a_masked_atomic_add():
    module, _ = _compile("histogram")
    (atomic,) = ops(module, "atomic_rmw")
    assert atomic.attrs["kind"] == "add"
    assert [str(v.type) for v in atomic.operands] == [
        "tensor<512xptr<i32>>", "tensor<512xi32>", "tensor<512xi1>"]


def test_argmax_reduces_value_index_pairs_first_index_on_ties():
    module, _ = _compile("argmax_rows")
    (red,) = ops(module, "reduce")
    assert [str(r.type) for r in red.results] == ["f32", "i32"]
    body = [o.name for o in red.regions[0].block.ops]
    assert body.count("select") == 2 and "cmp" in body
    preds = [o.attrs["pred"] for o in red.regions[0].block.ops if o.name == "cmp"]
    assert preds == ["gt", "eq", "ne", "ne", "lt"]  # ne: x != x finds the NaNs, which lose


@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_naiad_compile_gives_tile_text(name):
    pytest.importorskip("naiad.passes", reason="naiad.passes not available yet")
    pytest.importorskip("naiad.plugins.manager", reason="plugin manager not available yet")
    pytest.importorskip("naiad.runtime.targets", reason="target selection not available yet")
    kernel, sig, consts = TUTORIALS[name]
    compiled = naiad.compile(kernel, signature=sig, constexprs=consts, target="reference")
    text = compiled.asm["tile"]
    assert f"func @{kernel.__name__}(" in text and "kernel = true" in text
    parser = pytest.importorskip("naiad.ir.parser")
    from naiad.ir.verifier import verify
    verify(parser.parse_module(text))


# -- execution on the reference executor ------------------------------------------------------

@pytest.fixture
def execute():
    ref = pytest.importorskip("naiad_reference", reason="reference executor not available")
    return ref.execute


def _run(execute, name, grid, args, **override):
    module, _ = _compile(name, **override)
    kernel = TUTORIALS[name][0]
    execute(module, kernel.__name__, grid, args)


def test_run_vector_add(execute):
    rng = np.random.default_rng(1)
    n = 3000
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    _run(execute, "vector_add", (3,), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


def test_run_softmax(execute):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((9, 100), dtype=np.float32)
    out = np.full_like(x, np.nan)
    _run(execute, "softmax", (4,), [out, x, 100, 100, 9, 100], BLOCK_SIZE=128)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_run_matmul_with_leaky_relu(execute):
    rng = np.random.default_rng(3)
    M, N, K = 80, 70, 50
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    grid = (naiad.cdiv(M, 32) * naiad.cdiv(N, 32),)
    _run(execute, "matmul", grid, [a, b, c, M, N, K, K, 1, N, 1, N, 1],
         BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16, GROUP_SIZE_M=2)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    ref = np.where(ref >= 0, ref, np.float32(0.01) * ref)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def test_run_layer_norm(execute):
    rng = np.random.default_rng(4)
    rows, N = 5, 300
    x = rng.standard_normal((rows, N)).astype(np.float16)
    w = rng.standard_normal(N).astype(np.float16)
    b = rng.standard_normal(N).astype(np.float16)
    y = np.full_like(x, np.nan)
    mean = np.full(rows, np.nan, np.float32)
    rstd = np.full(rows, np.nan, np.float32)
    _run(execute, "layer_norm", (rows,), [x, y, w, b, mean, rstd, N, N, np.float32(1e-5)],
         BLOCK_SIZE=128)
    xf = x.astype(np.float32)
    mu = xf.mean(1)
    var = ((xf - mu[:, None]) ** 2).mean(1)
    r = 1 / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, r, rtol=1e-4)
    ref = (xf - mu[:, None]) * r[:, None] * w.astype(np.float32) + b.astype(np.float32)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_run_int_ops(execute):
    rng = np.random.default_rng(5)
    n = 300
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    b = rng.integers(-20, 20, n, dtype=np.int8)
    b[b == 0] = 3
    u = rng.integers(0, 60000, n, dtype=np.uint16)
    q, r, mix, sh = (np.full(n, -12345, np.int32) for _ in range(4))
    _run(execute, "int_ops", (2,), [a, b, u, q, r, mix, sh, n])
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(q, np.trunc(a64 / b64).astype(np.int32))  # toward zero
    np.testing.assert_array_equal(r, np.fmod(a64, b64).astype(np.int32))   # dividend's sign
    small = (b.astype(np.int64) + 100).astype(np.int8)                     # wraps in int8
    np.testing.assert_array_equal(mix, (a + u.astype(np.int32) + small.astype(np.int32)))
    wide = u.astype(np.uint32) * a.astype(np.uint32)
    shv = (a << 3) >> (b & 7).astype(np.int32)
    np.testing.assert_array_equal(sh, shv ^ (wide >> np.uint32(4)).view(np.int32))


def test_run_tiles_2d(execute):
    rng = np.random.default_rng(6)
    M, N = 40, 200
    src = rng.standard_normal((M, N), dtype=np.float32)
    dst = np.full_like(src, np.nan)
    _run(execute, "tiles_2d", (naiad.cdiv(M, 16), naiad.cdiv(N, 96)), [src, dst, M, N, N])
    col_rep = (np.arange(N) % 96) // 32
    np.testing.assert_array_equal(dst, src * (col_rep + 1).astype(np.float32))


def test_run_histogram(execute):
    rng = np.random.default_rng(7)
    n = 2000
    x = rng.integers(0, 1000, n, dtype=np.int32)
    hist = np.zeros(16, np.int32)
    _run(execute, "histogram", (naiad.cdiv(n, 512),), [x, hist, n])
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))


def test_run_argmax_rows_ties_take_the_first(execute):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 100), dtype=np.float32)
    x[1, [7, 30, 99]] = 9.0
    out = np.full(6, -1, np.int32)
    _run(execute, "argmax_rows", (6,), [x, out, 100, 100])
    np.testing.assert_array_equal(out, x.argmax(1))
    assert out[1] == 7
