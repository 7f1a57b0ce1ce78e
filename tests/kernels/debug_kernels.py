"""Kernels using the debugging builtins (device_print, device_assert, debug_barrier, assume,
inline_asm_elementwise), shared by the reference and GPU-backend tests."""
import naiad
import naiad.language as tl


@naiad.jit
def print_kernel(x_ptr, N: tl.constexpr, HEX: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_print("x", x, hex=HEX)


@naiad.jit
def python_print_kernel(x_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    print("pid", pid)
    print("two", tl.load(x_ptr + tl.arange(0, N)), pid)


@naiad.jit
def assert_kernel(x_ptr, out_ptr, limit, N: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if MASKED:
        tl.device_assert(x < limit, "x must stay below the limit", mask=offs < N - 1)
    else:
        tl.device_assert(x < limit, "x must stay below the limit")
    tl.debug_barrier()
    tl.store(out_ptr + offs, x + 1)


@naiad.jit
def python_assert_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    assert x >= 0, "negative input"


@naiad.jit
def assume_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(n > 0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@naiad.jit
def nvidia_asm_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $1, 8;", "=r,r", [x],
                                  dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@naiad.jit
def amd_asm_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("v_alignbit_b32 $0, $1, $1, 24", "=v,v", [x],
                                  dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


@naiad.jit(debug=True)
def debug_jit_assert_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_assert(x != 7, "no sevens")
