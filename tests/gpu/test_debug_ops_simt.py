"""The vendor-neutral lowering of device_print (each element once, by its owner thread, with
its coordinates) and of debug_barrier, run on the host SIMT simulator (printf = libc's)."""
import ctypes
import os
import sys

import numpy as np
import pytest

import naiad
import naiad.language as tl
import simt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kernels"))
_libc = ctypes.CDLL(None)


@naiad.jit
def print_2d_kernel(x_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.device_print("v", x)
    tl.debug_barrier()
    print("pid", tl.program_id(0))


@pytest.mark.parametrize("shape, warp_size, num_warps", [((4, 8), 8, 2), ((2, 2), 8, 1),
                                                         ((8, 16), 4, 4)])
def test_device_print_every_element_once(capfd, shape, warp_size, num_warps):
    m, n = shape
    x = np.random.default_rng().integers(-99, 99, shape).astype(np.int32)
    k = simt.run(print_2d_kernel, (2,), [x], dict(M=m, N=n), warp_size=warp_size,
                 num_warps=num_warps)
    _libc.fflush(None)
    lines = capfd.readouterr().out.splitlines()
    want = [f"pid ({p}, 0, 0) idx ({i}, {j}) v: {x[i, j]}" for p in range(2)
            for i in range(m) for j in range(n)] + [f"pid ({p}, 0, 0) pid: {p}"
                                                    for p in range(2)]
    assert sorted(lines) == sorted(want)
    assert k.lowered.llvm_ir.count("simt_barrier") >= 1     # tl.debug_barrier


@naiad.jit
def x86_rotate_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("roll $$8, $0", "=r,0", [x], dtype=tl.int32, is_pure=True,
                                  pack=1)
    tl.store(out_ptr + offs, y)


@naiad.jit
def x86_packed_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    # four uint8 per 32-bit register: a byte swap reverses each group of four elements
    y = tl.inline_asm_elementwise("bswapl $0", "=r,0", [x], dtype=tl.uint8, is_pure=True,
                                  pack=4)
    tl.store(out_ptr + offs, y)


def _host_is_x86():
    import platform
    return platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(not _host_is_x86(), reason="the SIMT simulator runs host (x86) assembly")
def test_inline_asm_per_register():
    x = np.random.default_rng().integers(-2**31, 2**31 - 1, 64, dtype=np.int64).astype(np.int32)
    out = np.zeros(64, np.int32)
    simt.run(x86_rotate_kernel, (1,), [x, out], dict(N=64))
    u = x.view(np.uint32)
    np.testing.assert_array_equal(out.view(np.uint32), (u << np.uint32(8)) | (u >> np.uint32(24)))


@pytest.mark.skipif(not _host_is_x86(), reason="the SIMT simulator runs host (x86) assembly")
def test_inline_asm_packed_groups_of_registers():
    x = np.random.default_rng().integers(0, 255, 256, dtype=np.int64).astype(np.uint8)
    out = np.zeros(256, np.uint8)
    k = simt.run(x86_packed_kernel, (1,), [x, out], dict(N=256), warp_size=8, num_warps=2)
    # each thread holds consecutive runs of elements; a group of 4 registers is reversed
    assert sorted(out.tolist()) == sorted(x.tolist())
    assert not np.array_equal(out, x)
    assert "bswapl" in k.lowered.llvm_ir


def test_pair_of_scalars_on_the_gpu_lowering():
    import triton_api_kernels as tk
    z = np.full(3, -1, np.int32)
    simt.run(tk.scalar_pair_kernel, (1,), [np.int32(7), np.int32(3), z])
    np.testing.assert_array_equal(z, [7, 3, 37])
