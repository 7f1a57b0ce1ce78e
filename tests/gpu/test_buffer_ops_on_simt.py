"""AMD buffer loads/stores executed on the SIMT simulator (``simt:gfx942`` wave64,
``simt:gfx1100`` wave32): the AMD plugin's canonicalize_pointers and convert_to_buffer_ops run,
each ``amd.buffer_load``/``amd.buffer_store`` executes on the simulator's model of the raw-buffer
range check (a masked lane's out-of-range offset gives 0 / drops the store), and the results
must match numpy on fresh random inputs with poisoned outputs."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.plugins.manager import get_plugin_manager, register, unregister

import simt_backend

ARCHS = ["gfx942", "gfx1100"]


@pytest.fixture(scope="module", autouse=True)
def simt_plugin():
    """Register the simulator for this module (and leave the manager as it was found)."""
    if get_plugin_manager().get_plugin("simt") is not None:
        yield
        return
    register(simt_backend.PLUGIN, name="simt")
    yield
    unregister(name="simt")


def _gpu(kernel, signature, constexprs, arch, **options):
    return naiad.compile(kernel, signature=signature, constexprs=constexprs,
                         target=f"simt:{arch}", options=options).asm["gpu"]


@naiad.jit
def masked_rows(x_ptr, y_ptr, stride, n_cols, FILL: tl.constexpr, BLOCK: tl.constexpr):
    """softmax-shaped access: a row base (uniform) plus arange, masked, other = FILL."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=FILL)
    tl.store(y_ptr + row * stride + offs, x * 2 + 1, mask=mask)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype, fill", [(np.float32, -7.5), (np.float16, 0.0), (np.int32, 3),
                                         (np.float64, 0.25), (np.int8, -1)])
def test_masked_rows_match_numpy(arch, dtype, fill):
    rng = np.random.default_rng(11)
    rows, n_cols, block, stride = 5, 37, 64, 48
    x = (rng.uniform(-50, 50, (rows, stride))).astype(dtype)
    y = np.full((rows, stride), 99, dtype)  # poison: columns >= n_cols must keep it
    with naiad.target(f"simt:{arch}"):
        masked_rows[(rows,)](x, y, stride, n_cols, FILL=fill, BLOCK=block, num_warps=2)
    want = np.full((rows, stride), 99, dtype)
    want[:, :n_cols] = (x[:, :n_cols] * 2 + 1).astype(dtype)
    np.testing.assert_array_equal(y, want)
    sig = {"x_ptr": "*" + {np.float32: "fp32", np.float16: "fp16", np.int32: "i32",
                            np.float64: "fp64", np.int8: "i8"}[dtype]}
    sig.update(y_ptr=sig["x_ptr"], stride="i32", n_cols="i32")
    gpu = _gpu(masked_rows, sig, {"FILL": fill, "BLOCK": block}, arch, num_warps=2)
    assert "amd.buffer_load" in gpu and "amd.buffer_store" in gpu
    assert "= load" not in gpu and "  store" not in gpu


@naiad.jit
def other_fills_masked_lanes(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The loaded tensor is stored unmasked: lanes past n must show `other` (not 0)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-3.0)
    tl.store(y_ptr + offs, x)


@pytest.mark.parametrize("arch", ARCHS)
def test_other_is_selected_where_the_hardware_returns_zero(arch):
    rng = np.random.default_rng(5)
    x = rng.uniform(1, 2, 128).astype(np.float32)
    y = np.full(128, np.nan, np.float32)
    with naiad.target(f"simt:{arch}"):
        other_fills_masked_lanes[(1,)](x, y, 70, BLOCK=128, num_warps=2)
    np.testing.assert_array_equal(y, np.where(np.arange(128) < 70, x, np.float32(-3.0)))


@naiad.jit
def tile_2d(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """2-D tile from broadcast pointers; the block base pid*BM*BN is uniform, offsets bounded."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    base = pid * BM * BN
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    a = tl.load(a_ptr + base + rm[:, None] * BN + rn[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + base + rn[None, :] * BM + rm[:, None], a + 1.0, mask=mask)


@pytest.mark.parametrize("arch", ARCHS)
def test_2d_broadcast_pointers_and_transposed_store(arch):
    rng = np.random.default_rng(9)
    bm, bn, progs, m, n = 16, 32, 3, 13, 29
    a = rng.standard_normal((progs, bm, bn)).astype(np.float32)
    out = np.full((progs, bn, bm), np.nan, np.float32)
    with naiad.target(f"simt:{arch}"):
        tile_2d[(progs,)](a, out, m, n, BM=bm, BN=bn, num_warps=2)
    want = np.full((progs, bn, bm), np.nan, np.float32)
    want[:, :n, :m] = np.transpose(a[:, :m, :n], (0, 2, 1)) + 1.0
    np.testing.assert_array_equal(out, want)
    gpu = _gpu(tile_2d, {"a_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32"},
               {"BM": bm, "BN": bn}, arch, num_warps=2)
    assert gpu.count("amd.buffer_load") == 1 and gpu.count("amd.buffer_store") == 1


@naiad.jit
def strided_rows(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    """Offsets scaled by a runtime stride: not provably below 2 GiB, so global loads stay."""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride))


@pytest.mark.parametrize("arch", ARCHS)
def test_unbounded_offsets_keep_global_accesses(arch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(64 * 3).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    with naiad.target(f"simt:{arch}"):
        strided_rows[(1,)](x, y, 3, BLOCK=64, num_warps=2)
    np.testing.assert_array_equal(y, x[::3])
    gpu = _gpu(strided_rows, {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32"},
               {"BLOCK": 64}, arch, num_warps=2)
    assert "amd.buffer_load" not in gpu and "= load" in gpu
    assert "amd.buffer_store" in gpu  # the store's offsets are the bounded arange
