"""Values that kernels create: program ids, ranges and filled tensors."""
from __future__ import annotations

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_dtype, as_int, as_shape, builtin, tensor, unwrap
from .semantics import validate_shape


def _axis(axis) -> int:
    axis = as_int(axis, "axis")
    if axis not in (0, 1, 2):
        raise CompilationError(f"program_id axis must be 0, 1, or 2 but got {axis}")
    return axis


@builtin
def program_id(axis, _semantic=None):
    """Index of this program along grid ``axis`` (an i32 scalar)."""
    return _semantic.op("program_id", [], irt.i32, axis=_axis(axis))


@builtin
def num_programs(axis, _semantic=None):
    """Number of programs along grid ``axis`` (an i32 scalar)."""
    return _semantic.op("num_programs", [], irt.i32, axis=_axis(axis))


@builtin
def arange(start, end, _semantic=None):
    """``[start, end)`` as a 1-D i32 tensor; bounds are constexprs, the length a power of two."""
    start = as_int(start, "arange's start")
    end = as_int(end, "arange's end")
    if end <= start:
        raise CompilationError(f"arange's end ({end}) must be greater than its start ({start})")
    if start < 0 or end > 2 ** 31 - 1:
        raise CompilationError(f"arange's bounds must lie in [0, 2**31), got [{start}, {end})")
    n = end - start
    if n & (n - 1):
        raise CompilationError(f"arange's length end - start = {n} must be a power of two")
    validate_shape((n,), "arange")
    return _semantic.op("make_range", [], irt.tensor((n,), irt.i32), start=start, end=end)


@builtin
def full(shape, value, dtype, _semantic=None):
    """A tensor of ``shape`` filled with ``value`` (constexpr or scalar tensor) as ``dtype``."""
    shape = validate_shape(as_shape(shape), "tl.full")
    dt = as_dtype(dtype, "tl.full's dtype")
    return _semantic.full(shape, value, dt.to_ir())


@builtin
def zeros(shape, dtype, _semantic=None):
    """A tensor of ``shape`` filled with zeros of ``dtype``."""
    shape = validate_shape(as_shape(shape), "tl.zeros")
    return _semantic.full(shape, 0, as_dtype(dtype, "tl.zeros's dtype").to_ir())


def _like(input, what):
    input = unwrap(input)
    if not isinstance(input, tensor):
        raise CompilationError(f"{what} needs a tensor, got {input!r}")
    return input


@builtin
def zeros_like(input, dtype=None, _semantic=None):
    """Zeros with ``input``'s shape (and dtype unless given)."""
    input = _like(input, "tl.zeros_like")
    t = as_dtype(dtype, "dtype").to_ir() if dtype is not None else input.type.scalar
    return _semantic.full(input.shape, 0, t)


@builtin
def full_like(input, value, dtype=None, _semantic=None):
    """``value`` with ``input``'s shape (and dtype unless given)."""
    input = _like(input, "tl.full_like")
    t = as_dtype(dtype, "dtype").to_ir() if dtype is not None else input.type.scalar
    return _semantic.full(input.shape, value, t)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False, _semantic=None):
    """Convert ``input`` to ``dtype`` (value conversion, or reinterpretation with bitcast=True).
    Converting to ``tl.int1`` tests ``!= 0``."""
    dt = as_dtype(dtype, "the target dtype")
    rounding = unwrap(fp_downcast_rounding)
    if rounding not in (None, "rtne", "rtz"):
        raise CompilationError(f"fp_downcast_rounding must be None, 'rtne' or 'rtz', got "
                               f"{rounding!r}")
    x = _semantic.to_tensor(input)
    if unwrap(bitcast):
        if rounding is not None:
            raise CompilationError("fp_downcast_rounding does not apply to a bitcast")
        return _semantic.bitcast(x, dt.to_ir())
    src, dst = x.type.scalar, dt.to_ir()
    if rounding is not None and rounding != "rtne":
        if not (src.is_float and dst.is_float and dst.bitwidth < src.bitwidth):
            raise CompilationError(f"fp_downcast_rounding applies only to a float downcast, "
                                   f"not {src} -> {dst}")
        if dst.is_fp8:
            raise CompilationError(f"fp_downcast_rounding='rtz' is not supported for a float8 "
                                   f"target ({src} -> {dst}); float8 conversions round to "
                                   "nearest even")
        return _semantic.op("cast", [x], irt.with_element(x.type, dst),
                            fp_downcast_rounding=rounding)
    return _semantic.cast(x, dst)


@builtin
def to(self, dtype, fp_downcast_rounding=None, bitcast=False, _semantic=None):
    """``x.to(dtype, bitcast=False)``: the tensor-method spelling of :func:`cast`."""
    return cast(self, dtype, fp_downcast_rounding, bitcast, _semantic=_semantic)


tensor.to = to
tensor.cast = cast


@builtin
def item(input, _semantic=None):
    """The scalar held by a one-element tensor (``x.item()``); a scalar is returned as is."""
    from .reduction import reduce_tensors
    from .shape import reshape

    s = _semantic
    x = s.to_tensor(input)
    if not x.is_block():
        return x
    if x.numel != 1:
        raise CompilationError(f"item() needs a tensor with exactly one element, got shape "
                               f"{list(x.shape)}")
    flat = reshape(x, (1,), _semantic=s)
    return reduce_tensors(s, [flat], 0, lambda accs, elems: accs)[0]


tensor.item = item


@builtin
def to_tensor(x, _semantic=None):
    """A Python number as a 0-d tensor of its default dtype (a tensor is returned as is)."""
    return _semantic.to_tensor(x)
