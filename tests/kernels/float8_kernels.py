"""Kernels that move, compare and multiply float8 values without computing in float8."""
import naiad
import naiad.language as tl


@naiad.jit
def abs_where_dot(x_ptr, abs_ptr, pos_ptr, a_ptr, b_ptr, c_ptr, DT: tl.constexpr,
                  DB: tl.constexpr):
    o = tl.arange(0, 256)
    x = tl.load(x_ptr + o).to(DT, bitcast=True)
    tl.store(abs_ptr + o, tl.abs(x).to(tl.uint8, bitcast=True))
    zero = tl.zeros((256,), DT)
    tl.store(pos_ptr + o, tl.where(x > 0, x, zero).to(tl.uint8, bitcast=True))
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :]).to(DT, bitcast=True)
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :]).to(DB, bitcast=True)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))


@naiad.jit
def negate(x_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    tl.store(x_ptr + o, -x)
