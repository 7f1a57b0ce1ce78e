"""``naiad.language`` (``tl``): what kernels call, with Triton's names and semantics.

    import naiad as triton
    import naiad.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs,
                 mask=mask), mask=mask)
"""
from __future__ import annotations

from .core import PropagateNan, builtin, constexpr, is_builtin, tensor
from .dtypes import (SCALAR_DTYPES, dtype, dtype_of_ir, from_ir_type, pointer_type,
                     to_ir_type)
from .creation import (arange, cast, full, full_like, num_programs, program_id, to_tensor,
                       zeros, zeros_like)
from .memory import (atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or,
                     atomic_poll, atomic_xchg, atomic_xor, load, store)
from .math import (abs, cdiv, ceil, clamp, cos, erf, exp, exp2, fdiv, floor, fma, log, log2,
                   maximum, minimum, rsqrt, sigmoid, sin, sqrt, sqrt_rn, umulhi, where, div_rn)
from .shape import (broadcast, broadcast_to, expand_dims, join, permute, ravel, reshape, split,
                    squeeze, trans, unsqueeze, view)
from .reduction import argmax, argmin, max, min, reduce, sum, xor_sum
from .scan import associative_scan, cumprod, cumsum
from .linalg import dot
from .scaled_dot import dot_scaled
from .descriptor import make_tensor_descriptor, tensor_descriptor
from .hints import max_constancy, max_contiguous, multiple_of
from .iterators import range, static_range
from .static import static_assert, static_print
from .debug import (assume, debug_barrier, device_assert, device_print,
                    inline_asm_elementwise)
from .standard import interleave, softmax, swizzle2d
from .ordering import flip, sort, topk
from .indexing import cat, gather, histogram
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint,
                     randint4x, randn, randn4x, uint_to_uniform_float)
from . import random  # noqa: F401  (``tl.random.rand``)
from . import extra  # noqa: F401  (``tl.extra.libdevice``)
from . import math  # noqa: F401  (``tl.math.exp``)

int1 = SCALAR_DTYPES["int1"]
int8 = SCALAR_DTYPES["int8"]
int16 = SCALAR_DTYPES["int16"]
int32 = SCALAR_DTYPES["int32"]
int64 = SCALAR_DTYPES["int64"]
uint8 = SCALAR_DTYPES["uint8"]
uint16 = SCALAR_DTYPES["uint16"]
uint32 = SCALAR_DTYPES["uint32"]
uint64 = SCALAR_DTYPES["uint64"]
float16 = SCALAR_DTYPES["float16"]
bfloat16 = SCALAR_DTYPES["bfloat16"]
float32 = SCALAR_DTYPES["float32"]
float64 = SCALAR_DTYPES["float64"]
float8e5 = SCALAR_DTYPES["float8e5"]
float8e4nv = SCALAR_DTYPES["float8e4nv"]
float8e4b8 = SCALAR_DTYPES["float8e4b8"]
float8e5b16 = SCALAR_DTYPES["float8e5b16"]
float8e4b15 = SCALAR_DTYPES["float8e4b15"]
#: Triton's name for the type of a pointer to int32 (``x.to(tl.pi32_t)``)
pi32_t = pointer_type(int32)

__all__ = [
    "PropagateNan", "builtin", "constexpr", "is_builtin", "tensor", "dtype", "pointer_type",
    "dtype_of_ir", "from_ir_type", "to_ir_type",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
    "float8e5", "float8e4nv", "float8e4b8", "float8e5b16", "float8e4b15", "pi32_t",
    "make_tensor_descriptor", "tensor_descriptor", "dot_scaled",
    "program_id", "num_programs", "arange", "zeros", "full", "zeros_like", "full_like", "cast",
    "load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_and",
    "atomic_or", "atomic_xor", "atomic_cas", "atomic_poll",
    "where", "maximum", "minimum", "clamp", "abs", "exp", "exp2", "log", "log2", "sqrt",
    "sqrt_rn", "rsqrt", "sin", "cos", "sigmoid", "erf", "fma", "floor", "ceil", "umulhi",
    "cdiv", "fdiv", "div_rn",
    "reshape", "view", "ravel", "trans", "permute", "broadcast_to", "broadcast",
    "expand_dims", "join", "split", "squeeze", "unsqueeze", "to_tensor",
    "reduce", "sum", "max", "min", "argmax", "argmin", "xor_sum",
    "associative_scan", "cumsum", "cumprod", "dot",
    "multiple_of", "max_contiguous", "max_constancy",
    "range", "static_range", "static_assert", "static_print", "device_assert", "softmax",
    "interleave", "swizzle2d", "flip", "sort", "topk", "cat", "gather", "histogram",
    "philox", "philox_impl", "rand", "rand4x", "randint", "randint4x", "randn", "randn4x",
    "pair_uniform_to_normal", "uint_to_uniform_float",
    "assume", "debug_barrier", "device_print", "inline_asm_elementwise",
]
