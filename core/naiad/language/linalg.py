"""Matrix multiplication: ``tl.dot(a, b, acc=None, input_precision=None, out_dtype=float32)``."""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_dtype, builtin, tensor, unwrap
from .semantics import describe
from .split_dot import SPLIT_PRECISIONS, split_dot

INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


def _operand(x, what) -> tensor:
    x = unwrap(x)
    if not isinstance(x, tensor) or len(x.shape) < 2:
        raise CompilationError(f"tl.dot's {what} must be a 2-D (or batched N-D) tensor, got "
                               f"{describe(x)}")
    return x


def _batched_nd(s, a, b, acc, kwargs):
    """A dot of rank > 3 (several batch dims, as Triton accepts) as a 3-D dot over the
    flattened batch: reshapes keep the row-major element order, so each batch is unchanged."""
    from .shape import reshape

    batch = list(a.shape[:-2])
    if list(b.shape[:-2]) != batch:
        raise CompilationError(f"tl.dot shapes do not match: {list(a.shape)} @ {list(b.shape)} "
                               "(batch dimensions differ)")
    flat = 1
    for d in batch:
        flat *= d
    (m, k), n = a.shape[-2:], b.shape[-1]
    a3 = reshape(a, [flat, m, k], _semantic=s)
    b3 = reshape(b, [flat, k, n], _semantic=s)
    acc = unwrap(acc)
    if acc is not None:
        acc = reshape(s.broadcast_to(s.to_tensor(acc), (*batch, m, n)), [flat, m, n],
                      _semantic=s)
    c = dot(a3, b3, acc, _semantic=s, **kwargs)
    return reshape(c, [*batch, m, n], _semantic=s)


def _precision(input_precision, allow_tf32, elem) -> str:
    input_precision, allow_tf32 = unwrap(input_precision), unwrap(allow_tf32)
    if input_precision is not None and allow_tf32 is not None:
        raise CompilationError("pass only one of input_precision and allow_tf32 to tl.dot")
    if allow_tf32 is not None:
        input_precision = "tf32" if allow_tf32 else "ieee"
    if input_precision is None:
        input_precision = "tf32" if elem == irt.f32 else "ieee"
    input_precision = str(input_precision).lower()
    if input_precision not in INPUT_PRECISIONS:
        raise CompilationError(f"input_precision must be one of {', '.join(INPUT_PRECISIONS)}, "
                               f"got {input_precision!r}")
    return input_precision


def _result_type(elem, out_dtype) -> irt.ScalarType:
    out = as_dtype(out_dtype, "out_dtype").to_ir()
    if elem.is_int:
        if elem != irt.i8:
            raise CompilationError(f"integer tl.dot supports int8 operands only, got {elem}")
        return irt.i32
    if elem == irt.f64:
        return irt.f64
    if elem == irt.f32 and out != irt.f32:
        raise CompilationError(f"tl.dot of float32 operands accumulates in float32; out_dtype "
                               f"{out} is not supported")
    if out not in (irt.f16, irt.bf16, irt.f32) or (out != irt.f32 and out != elem):
        raise CompilationError(f"out_dtype {out} is not supported for {elem} operands "
                               "(use float32, or the operands' own type)")
    return out


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None,
        max_num_imprecise_acc=None, out_dtype=None, _semantic=None):
    """``input @ other + acc`` (acc defaults to zeros of out_dtype). Operands share one dtype.
    Any power-of-two sizes work, also below 16 (where Triton pads to its instruction shape, the
    FMA lowering needs nothing)."""
    s = _semantic
    a, b = _operand(input, "first operand"), _operand(other, "second operand")
    if len(a.shape) != len(b.shape):
        raise CompilationError(f"tl.dot operands must have one rank, got {list(a.shape)} and "
                               f"{list(b.shape)}")
    if len(a.shape) > 3:
        return _batched_nd(s, a, b, acc, dict(
            input_precision=input_precision, allow_tf32=allow_tf32,
            max_num_imprecise_acc=max_num_imprecise_acc, out_dtype=out_dtype))
    ea, eb = a.type.scalar, b.type.scalar
    if ea.is_float and eb.is_float and (ea.is_fp8 or eb.is_fp8):
        if not (ea.is_fp8 and eb.is_fp8):
            raise CompilationError(f"tl.dot operands must have one dtype, got {ea} and {eb}; "
                                   "convert one with .to()")
        # float8 x float8 (any two formats, as Triton): exactly widened to float16, whose
        # products are exact in the float32 accumulator
        a, b = s.cast(a, irt.f16), s.cast(b, irt.f16)
        ea = eb = irt.f16
    if ea != eb:
        raise CompilationError(f"tl.dot operands must have one dtype, got {ea} and {eb}; "
                               "convert one with .to()")
    if ea.is_pointer or ea == irt.i1:
        raise CompilationError(f"tl.dot does not apply to {ea} operands")
    *batch, m, k = a.shape
    *batch_b, k2, n = b.shape
    if k != k2 or batch != batch_b:
        raise CompilationError(f"tl.dot shapes do not match: {list(a.shape)} @ {list(b.shape)}")
    prec = _precision(input_precision, allow_tf32, ea)
    rt = _result_type(ea, out_dtype if unwrap(out_dtype) is not None else _float32())
    shape = (*batch, m, n)
    acc = unwrap(acc)
    if acc is None:
        c = s.full(shape, 0, rt)
    else:
        c = s.to_tensor(acc)
        if c.type.scalar != rt:
            raise CompilationError(f"tl.dot's acc must have dtype {rt} (the result type for "
                                   f"{ea} operands), got {c.type.scalar}")
        c = s.broadcast_to(c, shape)
    if prec in SPLIT_PRECISIONS:
        if ea == irt.f32:
            return split_dot(s, a, b, c, prec, shape)
        prec = "ieee"       # as Triton: the option concerns f32 operands only
    attrs = {"input_precision": prec}
    if unwrap(max_num_imprecise_acc) is not None:
        attrs["max_num_imprecise_acc"] = int(unwrap(max_num_imprecise_acc))
    return s.op("dot", [a, b, c], irt.tensor(shape, rt), **attrs)


def _float32():
    from .dtypes import SCALAR_DTYPES
    return SCALAR_DTYPES["float32"]
