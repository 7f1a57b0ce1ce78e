"""The tile IR: types, SSA data structures, the op catalog, builder, printer, parser, verifier."""
from .types import (Type, ScalarType, PointerType, TensorType, tensor, with_element,
                    i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64,
                    numpy_dtype_of, scalar_from_numpy)
from .core import Value, Operation, Block, Region, Function, Module
from .ops import OPS, OpDef, opdef, register_op
from .builder import Builder
from .printer import print_module, print_function, print_op
from .parser import parse_module, parse_type, register_attribute
from .verifier import verify, register_verifier
