"""Kernels exercising each op family of the GPU lowering (shared by the SIMT numeric tests and
the PTX/AMDGCN compile tests)."""
import naiad
import naiad.language as tl


@naiad.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@naiad.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "max":
        r = tl.maximum(x, y)
    elif OP == "min":
        r = tl.minimum(x, y)
    elif OP == "lt":
        r = x < y
    elif OP == "ne":
        r = x != y
    elif OP == "umulhi":
        r = tl.umulhi(x, y)
    elif OP == "xor":
        r = x ^ y
    else:
        tl.static_assert(OP == "truediv")
        r = x / y
    tl.store(out_ptr + offs, r)


@naiad.jit
def cast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, DST: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST))


@naiad.jit
def math_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP != "abs" and OP != "neg" and x.dtype.primitive_bitwidth < 32:
        x = x.to(tl.float32)  # math functions take fp32/fp64 (Triton's rule); stored rounded
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "neg":
        r = -x
    elif OP == "erf":
        r = tl.erf(x)
    else:
        tl.static_assert(OP == "sigmoid")
        r = tl.sigmoid(x)
    tl.store(out_ptr + offs, r)


@naiad.jit
def bool_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, v ^ (offs % 3 == 0))


@naiad.jit
def scalar_kernel(x_ptr, out_ptr, k, flag):
    v = tl.load(x_ptr + 3)
    if flag:
        v = v * k
    tl.store(out_ptr + tl.program_id(0), v + tl.program_id(0))


@naiad.jit
def reduce_rows(x_ptr, out_ptr, stride, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                OP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif OP == "xor":
        r = tl.xor_sum(x, axis=AXIS)
    else:
        tl.static_assert(OP == "min")
        r = tl.min(x, axis=AXIS)
    if AXIS == 0:
        tl.store(out_ptr + rn, r)
    else:
        tl.store(out_ptr + rm, r)


@naiad.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride + cols, num / den, mask=mask)


@naiad.jit
def custom_reduce_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.reduce(x, 0, _combine_max_abs))


@naiad.jit
def _combine_max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@naiad.jit
def scan_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                REVERSE: tl.constexpr, OP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "sum":
        r = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    else:
        tl.static_assert(OP == "prod")
        r = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    tl.store(out_ptr + offs, r)


@naiad.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               OUT: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, out_dtype=OUT))


@naiad.jit
def matmul_loop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@naiad.jit
def histogram(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(hist_ptr + tl.load(x_ptr + offs, mask=m, other=0), 1, mask=m)


@naiad.jit
def atomic_small(cnt_ptr, old_ptr, val_ptr, N: tl.constexpr, KIND: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(val_ptr + offs)
    if KIND == "add":
        old = tl.atomic_add(cnt_ptr + offs, v)
    elif KIND == "max":
        old = tl.atomic_max(cnt_ptr + offs, v)
    elif KIND == "min":
        old = tl.atomic_min(cnt_ptr + offs, v)
    else:
        tl.static_assert(KIND == "xchg")
        old = tl.atomic_xchg(cnt_ptr + offs, v)
    tl.store(old_ptr + offs, old)


@naiad.jit
def atomic_scalar(cnt_ptr, old_ptr):
    old = tl.atomic_add(cnt_ptr, 2)
    tl.store(old_ptr + tl.program_id(0), old)


@naiad.jit
def cas_kernel(lock_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    old = tl.atomic_cas(lock_ptr + offs, offs % 2, offs + 10)
    tl.store(out_ptr + offs, old)


@naiad.jit
def trans_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    t = tl.trans(x)
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], t)


@naiad.jit
def reshape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M * N)
    x = tl.load(x_ptr + offs)
    y = tl.reshape(x, (M, N))
    rm = tl.arange(0, M)
    s = tl.sum(y, axis=1)
    tl.store(out_ptr + rm, s)


@naiad.jit
def join_split_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    j = tl.join(x, y)
    two = tl.arange(0, 2)
    tl.store(out_ptr + offs[:, None] * 2 + two[None, :], j)
    a, b = tl.split(j)
    tl.store(x_ptr + offs, b)
    tl.store(y_ptr + offs, a)


@naiad.jit
def broadcast_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    col = tl.load(x_ptr + rm)
    row = tl.load(y_ptr + rn)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], col[:, None] * row[None, :] + 1.0)


@naiad.jit
def loops_kernel(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(n_iter):
        acc = acc * 0.5 + i
        if i % 2 == 0:
            total += acc
        else:
            total -= tl.max(acc, axis=0)
    j = 0
    while tl.sum(total, axis=0) > 0 and j < 5:
        total = total - 100.0
        j += 1
    for i in range(10, 0, -3):
        total += i
    tl.store(out_ptr + offs, total)
