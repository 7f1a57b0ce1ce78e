"""Reductions, scans and ``dot`` over a batch of programs (axis 0 is the program axis).

A combine region that is one known op on its two arguments (``add``, ``mul``, ``max``, ``min``,
``and``, ``or``, ``xor``) runs as one numpy reduction/accumulation. Any other region (argmax's
(value, index) pair, a user's ``tl.reduce``/``associative_scan`` function) is evaluated by the
interpreter on whole arrays: reductions combine neighbours pairwise in a tree (log2(n) region
evaluations, left-to-right order kept), scans use the Hillis-Steele doubling scheme. Both are right
for any associative combine, commutative or not. Low-precision floats (f16/bf16) always take the
tree / doubling path, rounding to their type after every combine, as the GPU code does (Triton
compiles an f16 ``tl.sum`` to f16 adds): numpy's own f16 reductions accumulate in f32, which
hides an overflow of the half type that every GPU shows.
"""
from __future__ import annotations

import numpy as np

from naiad.errors import NaiadError

_KNOWN = ("add", "mul", "max", "min", "and", "or", "xor")


def simple_combiner(block):
    """``(op name, attrs)`` when the region is ``yield(op(a, b))`` on its two args, else None."""
    if len(block.args) != 2 or len(block.ops) != 2:
        return None
    op, term = block.ops
    if op.name not in _KNOWN or op.regions or term.name != "yield":
        return None
    if len(term.operands) != 1 or term.operands[0] is not op.results[0]:
        return None
    a, b = block.args
    if list(op.operands) != [a, b] and list(op.operands) != [b, a]:
        return None
    return op.name, op.attrs


def _numpy_combiner(name, attrs, dtype):
    if dtype == np.bool_:
        return {"add": np.logical_xor, "xor": np.logical_xor, "mul": np.logical_and,
                "and": np.logical_and, "min": np.logical_and, "or": np.logical_or,
                "max": np.logical_or}[name]
    if dtype.kind == "f" or dtype.name == "bfloat16":
        if name in ("and", "or", "xor"):
            raise NaiadError(f"reference executor: {name} combine on floats")
        if name in ("max", "min"):
            nan = attrs.get("propagate_nan")
            return {("max", True): np.maximum, ("max", False): np.fmax,
                    ("min", True): np.minimum, ("min", False): np.fmin}[(name, bool(nan))]
    return {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
            "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]


def _low_precision(dtype) -> bool:
    """f16/bf16: combined by the interpreter, rounding after every step (see the docstring)."""
    return dtype.kind == "f" and dtype.itemsize == 2 or dtype.name == "bfloat16"


def _common(inputs):
    """Broadcast inputs to one program-axis length."""
    if len(inputs) == 1:
        return inputs
    return list(np.broadcast_arrays(*inputs))


def _norm_axis(op, rank):
    axis = op.attrs.get("axis")
    if axis is None:
        return None
    axis = int(axis)
    if axis < 0:
        axis += rank
    return axis


def reduce_op(interp, op, inputs):
    rank = len(op.operands[0].type.shape)
    axis = _norm_axis(op, rank)
    xs = _common(inputs)
    if axis is None:  # all dims
        xs = [x.reshape(x.shape[0], -1) for x in xs]
        axis = 0
    ax = axis + 1
    block = op.regions[0].block
    simple = simple_combiner(block) if len(xs) == 1 and not _low_precision(xs[0].dtype) \
        else None
    if simple is not None:
        x = xs[0]
        dtype = x.dtype
        fn = _numpy_combiner(simple[0], simple[1], dtype)
        return [fn.reduce(x, axis=ax, dtype=dtype)]
    # generic tree over the (moved-to-last) reduction axis
    ys = [np.moveaxis(x, ax, -1) for x in xs]
    while ys[0].shape[-1] > 1:
        n = ys[0].shape[-1]
        half = n // 2
        left = [y[..., 0:2 * half:2] for y in ys]
        right = [y[..., 1:2 * half:2] for y in ys]
        comb = interp.eval_region(block, left + right)
        comb = [np.broadcast_to(c, l.shape).astype(l.dtype, copy=False)
                for c, l in zip(comb, left)]
        if n % 2:
            comb = [np.concatenate([c, y[..., -1:]], axis=-1) for c, y in zip(comb, ys)]
        ys = comb
    return [y[..., 0] for y in ys]


def scan_op(interp, op, inputs):
    rank = len(op.operands[0].type.shape)
    axis = _norm_axis(op, rank)
    if axis is None:
        axis = 0
    ax = axis + 1
    reverse = bool(op.attrs.get("reverse", False))
    xs = _common(inputs)
    ys = [np.moveaxis(x, ax, -1) for x in xs]
    if reverse:
        ys = [y[..., ::-1] for y in ys]
    block = op.regions[0].block
    simple = simple_combiner(block) if len(ys) == 1 and not _low_precision(ys[0].dtype) \
        else None
    if simple is not None:
        y = ys[0]
        fn = _numpy_combiner(simple[0], simple[1], y.dtype)
        if fn is np.add:
            out = np.cumsum(y, axis=-1, dtype=y.dtype)
        elif fn is np.multiply:
            out = np.cumprod(y, axis=-1, dtype=y.dtype)
        else:
            out = fn.accumulate(y, axis=-1)
        ys = [out]
    else:
        n = ys[0].shape[-1]
        d = 1
        while d < n:
            earlier = [y[..., :-d] for y in ys]
            later = [y[..., d:] for y in ys]
            comb = interp.eval_region(block, earlier + later)
            ys = [np.concatenate([y[..., :d],
                                  np.broadcast_to(c, l.shape).astype(y.dtype, copy=False)],
                                 axis=-1)
                  for y, c, l in zip(ys, comb, later)]
            d *= 2
    if reverse:
        ys = [y[..., ::-1] for y in ys]
    return [np.moveaxis(y, -1, ax) for y in ys]


def dot(a, b, acc, op):
    """``acc + a @ b`` with products summed in the accumulator's precision: f16/bf16/f32
    accumulators (and f16/bf16 inputs) use f32, f64 uses f64, integers wrap at the
    accumulator's width. ``input_precision`` (tf32...) is treated as full f32."""
    ta = op.operands[0].type.scalar
    tc = op.operands[2].type.scalar
    out_dtype = tc.numpy_dtype
    if tc.is_float:
        comp = np.float64 if (tc.name == "f64" or ta.name == "f64") else np.float32
        r = np.matmul(np.ascontiguousarray(a, dtype=comp), np.ascontiguousarray(b, dtype=comp))
        r = r + acc.astype(comp, copy=False)
        return r.astype(out_dtype, copy=False)
    wide = np.uint64 if tc.is_unsigned else np.int64
    r = np.matmul(a.astype(wide), b.astype(wide)) + acc.astype(wide)
    return r.astype(out_dtype)
