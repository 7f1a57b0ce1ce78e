"""Kernels using Triton's tensor API conveniences: list-comparable shapes, ``.item()``,
``.cast()``, tuples of tensors through @jit calls, run-time values for constexpr parameters."""
import naiad
import naiad.language as tl


@naiad.jit
def shape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.static_assert(x.shape == [M, N])
    tl.static_assert(x.shape != [N, M] or M == N)
    tl.static_assert(x.shape[:-1] + [2] == [M, 2])
    tl.static_assert(x.shape == (M, N))
    total = tl.sum(tl.sum(x, 1, keep_dims=True), 0, keep_dims=True)   # shape [1, 1]
    tl.store(out_ptr + offs, x.cast(tl.float32) + total.item())


@naiad.jit
def _pair_stats(pair, scale: tl.constexpr):
    a, b = pair
    return (a + b) * scale, (a - b, [b, 3])


@naiad.jit
def tuple_call_kernel(x_ptr, y_ptr, out_ptr, s, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    total, (diff, (b, three)) = _pair_stats((x, y), s)     # s: run-time, scale: constexpr
    tl.store(out_ptr + offs, total + diff * b + three)


@naiad.jit
def _sum_all(items):
    acc = items[0]
    for i in tl.static_range(1, len(items)):
        acc = acc + items[i]
    return acc


@naiad.jit
def list_call_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, _sum_all([x, x * 2, x * 3]))


@naiad.jit
def item_error_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    v = x.item()
    tl.store(x_ptr, v)


@naiad.jit
def bad_pid_axis_kernel(x_ptr):
    tl.store(x_ptr, tl.program_id(20))


@naiad.jit
def bad_expand_dims_kernel(x_ptr, N: tl.constexpr, AXES: tl.constexpr):
    t = tl.expand_dims(tl.arange(0, N), AXES)
    tl.store(x_ptr + tl.arange(0, N), tl.sum(t, 0))


@naiad.jit
def bad_slice_kernel(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs[4:], 1.0)


@naiad.jit
def bad_bitwise_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x ^ x)


@naiad.jit
def bad_signedness_kernel(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    y = tl.load(y_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x // y)


@naiad.jit
def squeeze_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    a = tl.unsqueeze(x, -1)
    tl.static_assert(a.shape == [N, 1])
    b = tl.unsqueeze(x, -2)
    tl.static_assert(b.shape == [1, N])
    c = tl.squeeze(tl.expand_dims(x, 0), -2)
    tl.static_assert(c.shape == [N])
    tl.store(out_ptr + tl.arange(0, N),
             tl.squeeze(a, 1) + c + tl.to_tensor(1) + 0 * tl.sum(b, 0))


@naiad.jit
def bad_squeeze_kernel(x_ptr, N: tl.constexpr):
    tl.squeeze(tl.expand_dims(tl.arange(0, N), 1), -3)


@naiad.jit
def scalar_pair_kernel(X, Y, Z):
    z = tl.interleave(X, Y)
    tl.static_assert(z.shape == [tl.constexpr(2)])
    z1, z2 = tl.split(z)
    tl.static_assert(isinstance(z1, tl.tensor) and z1.shape == [])
    tl.store(Z + tl.arange(0, 2), z)
    tl.store(Z + 2, z2 * 10 + z1)
