"""Verifier: every rule has a broken IR that must raise IRError mentioning the problem.

Most cases are text that parses fine but is wrong; dominance and use-list breakage that the
parser cannot express is built with the Builder and then damaged by hand.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from ir_testutil import kernel
from naiad.errors import IRError
from naiad.ir import (Block, Builder, Function, Module, OpDef, Operation, Region, f32, i1, i32,
                      register_op, tensor)
from naiad.ir import ops as ops_mod
from naiad.ir.parser import parse_module
from naiad.ir.verifier import register_verifier, unregister_verifier, verify

P4 = "%p: ptr<f32>, %q: tensor<4xptr<f32>>, %v: tensor<4xf32>, %m: tensor<4xi1>, %i: tensor<4xi32>"

# (name, kernel parameters, kernel body, fragment the error must contain)
BROKEN = [
    # -- histogram ---------------------------------------------------------------------------
    ("histogram of floats", "%x: tensor<4xf32>", """
        %h = histogram %x {num_bins = 4} : tensor<4xi32>
        return""", "input must be an integer tensor"),
    ("histogram of a 2-D tensor", "%x: tensor<2x2xi32>", """
        %h = histogram %x {num_bins = 4} : tensor<4xi32>
        return""", "input must be a 1-D tensor"),
    ("histogram with an integer mask", "%x: tensor<4xi32>, %m: tensor<4xi32>", """
        %h = histogram %x, %m {num_bins = 4} : tensor<4xi32>
        return""", "mask must be an i1 tensor of the input's shape"),
    ("histogram with a mask of another shape", "%x: tensor<4xi32>, %m: tensor<8xi1>", """
        %h = histogram %x, %m {num_bins = 4} : tensor<4xi32>
        return""", "mask must be an i1 tensor of the input's shape"),
    ("histogram result not num_bins", "%x: tensor<4xi32>", """
        %h = histogram %x {num_bins = 8} : tensor<4xi32>
        return""", "result must be tensor<8xi32>"),
    ("histogram result not i32", "%x: tensor<4xi32>", """
        %h = histogram %x {num_bins = 4} : tensor<4xi64>
        return""", "result must be tensor<4xi32>"),
    ("histogram without bins", "%x: tensor<4xi32>", """
        %h = histogram %x {num_bins = 0} : tensor<1xi32>
        return""", "num_bins must be at least 1"),
    # -- structure ---------------------------------------------------------------------------
    ("unknown op", "%x: f32", """
        %a = frobnicate %x : f32
        return""", "unknown op 'frobnicate'"),
    ("too few operands", "%x: f32", """
        %a = add %x : f32
        return""", "takes 2 operand(s), got 1"),
    ("too many operands for load", P4, """
        %a = load %q, %m, %v, %v : tensor<4xf32>
        return""", "takes 1 to 3 operand(s), got 4"),
    ("result on a store", P4, """
        %a = store %q, %v : f32
        return""", "has 0 result(s), got 1"),
    ("missing required attribute", "", """
        %a = program_id : i32
        return""", "missing required attribute(s) axis"),
    ("reduce without region", "%x: tensor<4xf32>", """
        %a = reduce %x {axis = 0} : f32
        return""", "has 1 region(s), got 0"),
    ("if with one region", "%c: i1", """
        if %c {
          yield
        }
        return""", "has 2 region(s), got 1"),
    ("terminator in the middle", "%x: f32", """
        return
        %a = add %x, %x : f32
        return""", "terminator 'return' must be the last op"),
    ("function without return", "%x: f32", """
        %a = add %x, %x : f32""", "the function body must end in 'return', not 'add'"),
    ("yield at function level", "%x: f32", """
        yield""", "'yield' may only end a region"),
    ("return inside a loop", "%n: i32", """
        for %n, %n, %n {
        ^(%i: i32):
          return
        }
        return""", "'return' may only end the function body"),
    ("loop body without terminator", "%n: i32", """
        for %n, %n, %n {
        ^(%i: i32):
          %a = add %i, %i : i32
        }
        return""", "region #0 of 'for' must end in 'yield', not 'add'"),
    ("empty branch", "%c: i1", """
        if %c {
          yield
        } {
        }
        return""", "region #1 of 'if' is empty"),
    ("while before-region ends in yield", "%n: i32", """
        %r = while %n : i32 {
        ^(%i: i32):
          yield %i
        } {
        ^(%j: i32):
          yield %j
        }
        return""", "region #0 of 'while' must end in 'condition', not 'yield'"),
    ("condition outside while", "%c: i1", """
        if %c {
          condition %c
        } {
          yield
        }
        return""", "'condition' may only end the first region of 'while'"),
    ("0-d tensor", "%x: f32", """
        %a = splat %x : tensor<f32>
        return""", "0-d tensors are not allowed"),
    ("zero-sized dimension", "%x: f32", """
        %a = splat %x : tensor<0x4xf32>
        return""", "tensor dimensions must be positive"),
    ("pointer to a tensor argument", "%x: ptr<tensor<4xf32>>", """
        return""", "a pointer must point to a scalar or a pointer"),
    # -- constants, ids, ranges ----------------------------------------------------------------
    ("float value for an int constant", "", """
        %a = constant {value = 1.5} : i32
        return""", "integer constant of type i32 has float value 1.5"),
    ("constant out of range", "", """
        %a = constant {value = 256} : u8
        return""", "value 256 does not fit in 8-bit u8"),
    ("string constant", "", """
        %a = constant {value = "one"} : f32
        return""", "value must be a number or bool"),
    ("i1 constant of 2", "", """
        %a = constant {value = 2} : i1
        return""", "i1 constant must be true/false"),
    ("program_id axis 3", "", """
        %a = program_id {axis = 3} : i32
        return""", "axis must be 0, 1 or 2, got 3"),
    ("num_programs giving i64", "", """
        %a = num_programs {axis = 0} : i64
        return""", "result must be i32, got i64"),
    ("make_range empty", "", """
        %a = make_range {end = 4, start = 4} : tensor<1xi32>
        return""", "end (4) must be greater than start (4)"),
    ("make_range not a power of two", "", """
        %a = make_range {end = 12, start = 0} : tensor<12xi32>
        return""", "length end - start = 12 must be a power of two"),
    ("make_range wrong result", "", """
        %a = make_range {end = 8, start = 0} : tensor<4xi32>
        return""", "result must be tensor<8xi32>, got tensor<4xi32>"),
    ("make_range float bounds", "", """
        %a = make_range {end = 8.0, start = 0} : tensor<8xi32>
        return""", "attribute end must be an integer"),
    # -- shape ops ---------------------------------------------------------------------------
    ("splat of a tensor", "%x: tensor<4xf32>", """
        %a = splat %x : tensor<4x4xf32>
        return""", "operand must be a scalar, got tensor<4xf32>"),
    ("splat changes the element", "%x: f32", """
        %a = splat %x : tensor<4xf16>
        return""", "result element f16 must be the operand type f32"),
    ("splat to a scalar", "%x: f32", """
        %a = splat %x : f32
        return""", "result must be a tensor"),
    ("broadcast changes rank", "%x: tensor<4xf32>", """
        %a = broadcast %x : tensor<4x4xf32>
        return""", "rank must stay the same"),
    ("broadcast grows a non-1 dim", "%x: tensor<2x4xf32>", """
        %a = broadcast %x : tensor<8x4xf32>
        return""", "dimension 0 can only grow from 1"),
    ("broadcast changes the element", "%x: tensor<1x4xf32>", """
        %a = broadcast %x : tensor<8x4xf16>
        return""", "element types differ"),
    ("expand_dims wrong shape", "%x: tensor<4xf32>", """
        %a = expand_dims %x {axis = 0} : tensor<4x1xf32>
        return""", "result must have shape 1x4"),
    ("expand_dims axis out of range", "%x: tensor<4xf32>", """
        %a = expand_dims %x {axis = 2} : tensor<4x1xf32>
        return""", "axis 2 is out of range for rank 1"),
    ("reshape changes the element count", "%x: tensor<8xf32>", """
        %a = reshape %x : tensor<4x4xf32>
        return""", "element count changes: 8 (8) -> 4x4 (16)"),
    ("reshape changes the element", "%x: tensor<8xf32>", """
        %a = reshape %x : tensor<2x4xi32>
        return""", "element types differ"),
    ("trans order not a permutation", "%x: tensor<2x4xf32>", """
        %a = trans %x {order = [0, 0]} : tensor<2x4xf32>
        return""", "order [0, 0] is not a permutation of 0..1"),
    ("trans wrong result shape", "%x: tensor<2x4xf32>", """
        %a = trans %x {order = [1, 0]} : tensor<2x4xf32>
        return""", "result must have shape 4x2"),
    ("join of different types", "%x: tensor<4xf32>, %y: tensor<4xf16>", """
        %a = join %x, %y : tensor<4x2xf32>
        return""", "operands must all have one type"),
    ("join wrong result", "%x: tensor<4xf32>", """
        %a = join %x, %x : tensor<2x4xf32>
        return""", "result must have shape 4x2"),
    ("split without a minor 2", "%x: tensor<4x4xf32>", """
        %a, %b = split %x : tensor<4xf32>, tensor<4xf32>
        return""", "operand's last dimension must be 2"),
    ("split wrong results", "%x: tensor<4x2xf32>", """
        %a, %b = split %x : tensor<4xf32>, tensor<2xf32>
        return""", "each result must drop the last dimension"),
    ("hint changes the type", "%x: tensor<4xi32>", """
        %a = hint %x {divisibility = [16]} : tensor<4xi64>
        return""", "result type tensor<4xi64> must equal the operand type"),
    # -- pointers and memory -----------------------------------------------------------------
    ("addptr on a non-pointer", P4, """
        %a = addptr %i, %i : tensor<4xi32>
        return""", "first operand must be a pointer"),
    ("addptr with a float offset", P4, """
        %a = addptr %q, %v : tensor<4xptr<f32>>
        return""", "offset must be an integer"),
    ("addptr shape mismatch", P4, """
        %o = constant {value = 1} : i32
        %a = addptr %q, %o : tensor<4xptr<f32>>
        return""", "pointer and offset shapes differ"),
    ("addptr wrong result", P4, """
        %a = addptr %q, %i : tensor<4xptr<f16>>
        return""", "must equal the pointer type"),
    ("load through a non-pointer", P4, """
        %a = load %v : tensor<4xf32>
        return""", "pointer operand must be a pointer"),
    ("load wrong result", P4, """
        %a = load %q : tensor<4xf16>
        return""", "result must be tensor<4xf32> (the pointee in the pointer's shape)"),
    ("load with a non-i1 mask", P4, """
        %a = load %q, %i : tensor<4xf32>
        return""", "mask must be i1 with the pointer's shape (4)"),
    ("load with a mask of another shape", P4 + ", %c: i1", """
        %a = load %q, %c : tensor<4xf32>
        return""", "mask must be i1 with the pointer's shape"),
    ("load with wrong other", P4, """
        %o = constant {value = 0} : tensor<4xi32>
        %a = load %q, %m, %o : tensor<4xf32>
        return""", "other must have the result type tensor<4xf32>"),
    ("store of the wrong type", P4, """
        store %q, %i
        return""", "value must be tensor<4xf32>"),
    ("store scalar through tensor of pointers", P4 + ", %x: f32", """
        store %q, %x
        return""", "value must be tensor<4xf32>"),
    ("store with a bad mask", P4, """
        store %q, %v, %i
        return""", "mask must be i1"),
    ("atomic with unknown kind", P4, """
        %a = atomic_rmw %q, %v {kind = "nand"} : tensor<4xf32>
        return""", "kind must be one of add, max, min, xchg, and, or, xor, got 'nand'"),
    ("atomic and on floats", P4, """
        %a = atomic_rmw %q, %v {kind = "and"} : tensor<4xf32>
        return""", "atomic and needs an integer pointee"),
    ("atomic value type", P4, """
        %a = atomic_rmw %q, %i {kind = "add"} : tensor<4xi32>
        return""", "value must be tensor<4xf32>"),
    ("atomic result type", P4, """
        %a = atomic_rmw %q, %v {kind = "add"} : tensor<4xf16>
        return""", "result must be tensor<4xf32>"),
    ("atomic_cas types", "%p: ptr<i32>, %x: i32, %y: i64", """
        %a = atomic_cas %p, %x, %y : i32
        return""", "compare and new values must be i32"),
    # -- elementwise -------------------------------------------------------------------------
    ("add of mixed types", "%x: f32, %y: i32", """
        %a = add %x, %y : f32
        return""", "operands must all have one type, got (f32, i32)"),
    ("add of mixed shapes", "%x: tensor<4xf32>, %y: tensor<8xf32>", """
        %a = add %x, %y : tensor<4xf32>
        return""", "operands must all have one type"),
    ("add with wrong result", "%x: f32", """
        %a = add %x, %x : f64
        return""", "result type f64 must equal the operand type f32"),
    ("mul on pointers", "%p: ptr<f32>", """
        %a = mul %p, %p : ptr<f32>
        return""", "use addptr for pointers"),
    ("and on floats", "%x: f32", """
        %a = and %x, %x : f32
        return""", "operands must be integers (i1 included), got f32"),
    ("shl on floats", "%x: tensor<4xf16>", """
        %a = shl %x, %x : tensor<4xf16>
        return""", "operands must be integers"),
    ("not on floats", "%x: f32", """
        %a = not %x : f32
        return""", "operands must be integers"),
    ("umulhi on floats", "%x: f32", """
        %a = umulhi %x, %x : f32
        return""", "operands must be integers"),
    ("exp on integers", "%x: i32", """
        %a = exp %x : i32
        return""", "operands must be floats, got i32"),
    ("fma of mixed types", "%x: f32, %y: f16", """
        %a = fma %x, %x, %y : f32
        return""", "operands must all have one type"),
    ("max with a non-bool propagate_nan", "%x: f32", """
        %a = max %x, %x {propagate_nan = 1} : f32
        return""", "propagate_nan must be true or false"),
    ("cmp with unknown predicate", "%x: f32", """
        %a = cmp %x, %x {pred = "ult"} : i1
        return""", "pred must be one of eq, ne, lt, le, gt, ge, got 'ult'"),
    ("cmp result not i1", "%x: tensor<4xf32>", """
        %a = cmp %x, %x {pred = "lt"} : tensor<4xi32>
        return""", "result must be tensor<4xi1>"),
    ("select with a non-i1 condition", "%c: i32, %x: f32", """
        %a = select %c, %x, %x : f32
        return""", "condition must be i1 with the choices' shape (scalar)"),
    ("select condition of another shape", "%c: i1, %x: tensor<4xf32>", """
        %a = select %c, %x, %x : tensor<4xf32>
        return""", "condition must be i1 with the choices' shape (4)"),
    ("select of two types", "%c: i1, %x: f32, %y: f16", """
        %a = select %c, %x, %y : f32
        return""", "the two choices must have one type"),
    ("cast changes the shape", "%x: tensor<4xf32>", """
        %a = cast %x : tensor<8xi32>
        return""", "cast keeps the shape"),
    ("cast pointer to float", "%p: ptr<f32>", """
        %a = cast %p : f64
        return""", "no cast between pointers and floats"),
    ("bitcast between widths", "%x: f32", """
        %a = bitcast %x : i64
        return""", "bitcast needs equal bit widths: f32 (32) -> i64 (64)"),
    # -- reductions, scans, dot --------------------------------------------------------------
    ("reduce with one block argument", "%x: tensor<4xf32>", """
        %s = reduce %x {axis = 0} : f32 {
        ^(%a: f32):
          yield %a
        }
        return""", "region #0 block arguments (f32) must be the elements twice"),
    ("reduce yields the wrong type", "%x: tensor<4xf32>", """
        %s = reduce %x {axis = 0} : f32 {
        ^(%a: f32, %b: f32):
          %c = cmp %a, %b {pred = "lt"} : i1
          yield %c
        }
        return""", "region #0 'yield' gives (i1) but the combine function must give the elements"),
    ("reduce keeps the axis", "%x: tensor<4x8xf32>", """
        %s = reduce %x {axis = 1} : tensor<4x8xf32> {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "reduced along axis 1 must have shape 4"),
    ("reduce axis out of range", "%x: tensor<4xf32>", """
        %s = reduce %x {axis = 1} : f32 {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "axis 1 is out of range for rank 1"),
    ("reduce captures an outside value", "%x: tensor<4xf32>, %y: f32", """
        %s = reduce %x {axis = 0} : f32 {
        ^(%a: f32, %b: f32):
          %c = add %a, %y : f32
          yield %c
        }
        return""", "combine region captures a value defined outside it (operand #1 of 'add'"),
    ("scan captures an outside value in a nested region", "%x: tensor<4xf32>, %f: i1", """
        %s = scan %x {axis = 0, reverse = false} : tensor<4xf32> {
        ^(%a: f32, %b: f32):
          %c = if %f : f32 {
            yield %a
          } {
            yield %b
          }
          yield %c
        }
        return""", "combine region captures a value defined outside it (operand #0 of 'if'"),
    ("reduce of a scalar", "%x: f32", """
        %s = reduce %x {axis = 0} : f32 {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "operands must be tensors, got f32"),
    ("reduce of differently shaped tensors", "%x: tensor<4xf32>, %y: tensor<8xi32>", """
        %s, %t = reduce %x, %y {axis = 0} : f32, i32 {
        ^(%a: f32, %ai: i32, %b: f32, %bi: i32):
          yield %a, %ai
        }
        return""", "operands must share one shape"),
    ("reduce result count", "%x: tensor<4xf32>", """
        %s, %t = reduce %x {axis = 0} : f32, f32 {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "has 1 operand(s) but 2 result(s)"),
    ("scan changes the shape", "%x: tensor<8xf32>", """
        %c = scan %x {axis = 0, reverse = false} : f32 {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "result must have the operand's shape and element"),
    ("scan reverse not a bool", "%x: tensor<8xf32>", """
        %c = scan %x {axis = 0, reverse = 0} : tensor<8xf32> {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "reverse must be true or false"),
    ("scan without reverse", "%x: tensor<8xf32>", """
        %c = scan %x {axis = 0} : tensor<8xf32> {
        ^(%a: f32, %b: f32):
          yield %a
        }
        return""", "missing required attribute(s) reverse"),
    ("dot inner dimensions", "%a: tensor<16x8xf16>, %b: tensor<4x32xf16>, %c: tensor<16x32xf32>",
     """
        %d = dot %a, %b, %c : tensor<16x32xf32>
        return""", "inner dimensions differ: a is 16x8, b is 4x32"),
    ("dot accumulator shape", "%a: tensor<16x8xf16>, %b: tensor<8x32xf16>, %c: tensor<16x16xf32>",
     """
        %d = dot %a, %b, %c : tensor<16x16xf32>
        return""", "acc must be 16x32"),
    ("dot mixed inputs", "%a: tensor<16x8xf16>, %b: tensor<8x32xf32>, %c: tensor<16x32xf32>", """
        %d = dot %a, %b, %c : tensor<16x32xf32>
        return""", "a and b must share one numeric element type, got f16 and f32"),
    ("dot of vectors", "%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>", """
        %d = dot %a, %b, %c : tensor<8xf32>
        return""", "a must be a 2-D (or batched 3-D) tensor"),
    ("dot result type", "%a: tensor<16x8xf16>, %b: tensor<8x32xf16>, %c: tensor<16x32xf32>", """
        %d = dot %a, %b, %c : tensor<16x32xf16>
        return""", "result must have acc's type"),
    ("dot input precision", "%a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %c: tensor<16x32xf32>",
     """
        %d = dot %a, %b, %c {input_precision = "fast"} : tensor<16x32xf32>
        return""", "input_precision must be tf32, tf32x3 or ieee"),
    # -- control flow ------------------------------------------------------------------------
    ("for bounds of mixed types", "%n: i32, %m: i64", """
        for %n, %m, %n {
        ^(%i: i32):
          yield
        }
        return""", "lower bound, upper bound and step must be scalar integers of one type"),
    ("for over floats", "%x: f32", """
        for %x, %x, %x {
        ^(%i: f32):
          yield
        }
        return""", "must be scalar integers"),
    ("for yields the wrong type", "%n: i32, %x: f32", """
        %r = for %n, %n, %n, %x : f32 {
        ^(%i: i32, %a: f32):
          yield %i
        }
        return""", "region #0 'yield' gives (i32) but the loop carries (f32)"),
    ("for body arguments", "%n: i32, %x: f32", """
        %r = for %n, %n, %n, %x : f32 {
        ^(%a: f32):
          yield %a
        }
        return""", "block arguments (f32) must be the induction variable then the iter args "
                   "(i32, f32)"),
    ("for results", "%n: i32, %x: f32", """
        %r = for %n, %n, %n, %x : f16 {
        ^(%i: i32, %a: f32):
          yield %a
        }
        return""", "results (f16) must match the initial values (f32)"),
    ("while condition not i1", "%n: i32", """
        %r = while %n : i32 {
        ^(%i: i32):
          condition %i, %i
        } {
        ^(%j: i32):
          yield %j
        }
        return""", "'condition' needs a scalar i1 first operand, got i32"),
    ("while after-region arguments", "%n: i32, %c: i1", """
        %r = while %n : i32 {
        ^(%i: i32):
          condition %c, %i
        } {
        ^(%j: i64):
          yield %n
        }
        return""", "region #1 block arguments (i64) must be the values passed by 'condition'"),
    ("while yields the wrong type", "%n: i32, %c: i1, %x: f32", """
        %r = while %n : i32 {
        ^(%i: i32):
          condition %c, %i
        } {
        ^(%j: i32):
          yield %x
        }
        return""", "region #1 'yield' gives (f32) but the loop carries"),
    ("while before-region arguments", "%n: i32, %c: i1", """
        %r = while %n : i32 {
        ^():
          condition %c, %n
        } {
        ^(%j: i32):
          yield %j
        }
        return""", "region #0 block arguments () must be the initial values (i32)"),
    ("while results", "%n: i32, %c: i1", """
        %r = while %n : f32 {
        ^(%i: i32):
          condition %c, %i
        } {
        ^(%j: i32):
          yield %j
        }
        return""", "results (f32) must match the values passed by 'condition' (i32)"),
    ("if on a non-i1", "%n: i32", """
        if %n {
          yield
        } {
          yield
        }
        return""", "condition must be a scalar i1, got i32"),
    ("if on a tensor", "%c: tensor<4xi1>", """
        if %c {
          yield
        } {
          yield
        }
        return""", "condition must be a scalar i1"),
    ("if yields mismatch", "%c: i1, %x: f32, %n: i32", """
        %r = if %c : f32 {
          yield %x
        } {
          yield %n
        }
        return""", "region #1 'yield' gives (i32) but the results are (f32)"),
    ("if branch with arguments", "%c: i1", """
        if %c {
        ^(%a: i32):
          yield
        } {
          yield
        }
        return""", "region #0 (a branch) takes no block arguments"),
    ("return type mismatch", "%x: f32", """
        return %x""", "returns (f32) but function @k declares ()"),
]

MODULE_BROKEN = [
    ("call of an unknown function", kernel("%x: f32", """
        %r = call %x {callee = "missing"} : f32
        return"""), "callee @missing is not a function of this module"),
    ("call argument types", kernel("%x: f32", """
        %r = call %x {callee = "sq"} : f32
        return""", extra="""
        func @sq(%a: i32) -> (f32) {
          %c = constant {value = 1.0} : f32
          return %c
        }
    """), "arguments (f32) do not match @sq's parameters (i32)"),
    ("call result types", kernel("%x: f32", """
        %r = call %x {callee = "sq"} : i32
        return""", extra="""
        func @sq(%a: f32) -> (f32) {
          return %a
        }
    """), "results (i32) do not match @sq's result types (f32)"),
    ("call callee not a string", kernel("%x: f32", """
        %r = call %x {callee = 3} : f32
        return"""), "callee must be a function name string"),
    ("return count", kernel("%x: f32", """
        return""", results="f32, f32"), "returns () but function @k declares (f32, f32)"),
    ("non-integer argument fact", kernel('%x: ptr<f32> {divisibility = "16"}', """
        return"""), "argument #0 fact divisibility must be an integer"),
]


def _check(text: str, fragment: str) -> IRError:
    module = parse_module(text)  # the broken IR is well-formed text
    with pytest.raises(IRError, match=re.escape(fragment)) as info:
        verify(module)
    return info.value


@pytest.mark.parametrize("name,params,body,fragment", BROKEN, ids=[c[0] for c in BROKEN])
def test_verifier_rejects(name, params, body, fragment):
    err = _check(kernel(params, body), fragment)
    assert str(err).startswith("in function @k: ")


@pytest.mark.parametrize("name,text,fragment", MODULE_BROKEN, ids=[c[0] for c in MODULE_BROKEN])
def test_verifier_rejects_module(name, text, fragment):
    _check(text, fragment)


def test_error_quotes_the_op():
    text = kernel("%x: tensor<4xf32>, %y: tensor<8xf32>", """
        %z = add %x, %y : tensor<4xf32>
        return""")
    err = _check(text, "operands must all have one type")
    assert str(err).splitlines()[-1].strip() == "%z = add %x, %y : tensor<4xf32>"


def test_error_in_a_region_quotes_the_inner_op():
    text = kernel("%n: i32, %x: f32", """
        %r = for %n, %n, %n, %x : f32 {
        ^(%i: i32, %a: f32):
          %b = exp %i : i32
          yield %a
        }
        return""")
    err = _check(text, "operands must be floats, got i32")
    assert "%b = exp %i : i32" in str(err) and "for" not in str(err)


def test_verify_a_single_function_and_return_value():
    m = parse_module(kernel("%x: f32", "return"))
    assert verify(m) is m
    fn = m.functions["k"]
    assert verify(fn) is fn
    with pytest.raises(TypeError):
        verify("module {}")


# -- breakage only programs make: dominance, use-lists, links ----------------------------------

def _fn_with_two_adds():
    fn = Function("k", [f32], arg_names=["x"])
    m = Module()
    m.add(fn)
    b = Builder(fn.body.block)
    a = b.op1("add", [fn.args[0], fn.args[0]], f32)
    c = b.op1("mul", [a, a], f32)
    b.create("return")
    return m, fn, a, c


def test_operand_used_before_its_definition():
    m, fn, a, c = _fn_with_two_adds()
    ops = fn.body.block.ops
    ops[0], ops[1] = ops[1], ops[0]
    with pytest.raises(IRError, match="operand #0 is used before its definition"):
        verify(m)


def test_value_from_a_sibling_region():
    fn = Function("k", [i1, f32], arg_names=["c", "x"])
    m = Module()
    m.add(fn)
    b = Builder(fn.body.block)
    then_r, else_r = Region(), Region()
    with b.at_end_of(then_r.block):
        inner = b.op1("neg", [fn.args[1]], f32)
        b.create("yield", [inner])
    with b.at_end_of(else_r.block):
        b.create("yield", [inner])  # not visible here
    b.create("if", [fn.args[0]], [f32], regions=[then_r, else_r])
    b.create("return")
    with pytest.raises(IRError, match="inside a region that does not enclose this use"):
        verify(m)


def test_result_of_an_enclosing_op_used_in_its_region():
    fn = Function("k", [i1, f32], arg_names=["c", "x"])
    m = Module()
    m.add(fn)
    then_r, else_r = Region(), Region()
    op = Operation("if", [fn.args[0]], [f32], regions=[then_r, else_r])
    then_r.block.append(Operation("yield", [op.results[0]]))
    else_r.block.append(Operation("yield", [fn.args[1]]))
    fn.body.block.append(op)
    fn.body.block.append(Operation("return"))
    with pytest.raises(IRError, match="result of the enclosing 'if'"):
        verify(m)


def test_value_defined_later_in_an_enclosing_block():
    fn = Function("k", [i32, f32], arg_names=["n", "x"])
    m = Module()
    m.add(fn)
    late = Operation("neg", [fn.args[1]], [f32])
    body = Region(Block([i32]))
    body.block.append(Operation("neg", [late.results[0]], [f32]))
    body.block.append(Operation("yield"))
    n = fn.args[0]
    fn.body.block.append(Operation("for", [n, n, n], [], regions=[body]))
    fn.body.block.append(late)
    fn.body.block.append(Operation("return"))
    with pytest.raises(IRError, match="is used before its definition"):
        verify(m)


def test_value_from_another_function():
    m, fn, a, c = _fn_with_two_adds()
    other = Function("other", [f32])
    m.add(other)
    Builder(other.body.block).op1("neg", [fn.args[0]], f32)
    other.body.block.append(Operation("return"))
    with pytest.raises(IRError, match="in function @other: 'neg': operand #0 is an argument of "
                                      "another function"):
        verify(m)


def test_result_of_an_erased_op():
    m, fn, a, c = _fn_with_two_adds()
    mul = fn.body.block.ops[1]
    fn.body.block.ops.remove(a.owner)  # detached while 'mul' still uses its result
    a.owner.parent = None
    with pytest.raises(IRError, match="an op that is no longer in the IR"):
        verify(m)
    assert mul.operands[0] is a


def test_stale_use_left_by_a_careless_erase():
    m, fn, a, c = _fn_with_two_adds()
    mul = fn.body.block.ops[1]
    fn.body.block.ops.remove(mul)  # neither mul.erase() nor drop_operands(): uses remain
    with pytest.raises(IRError, match="stale use by 'mul', an op no longer in the function"):
        verify(m)


def test_operand_missing_from_use_list():
    m, fn, a, c = _fn_with_two_adds()
    mul = fn.body.block.ops[1]
    a.uses.remove((mul, 1))
    with pytest.raises(IRError, match="'mul': operand #1 appears 0 times in its value's use-list"):
        verify(m)


def test_operand_replaced_without_set_operand():
    m, fn, a, c = _fn_with_two_adds()
    fn.body.block.ops[1].operands[1] = fn.args[0]  # bypasses set_operand
    with pytest.raises(IRError, match="says 'mul' uses it as operand #1, which it does not"):
        verify(m)


def test_broken_parent_link():
    m, fn, a, c = _fn_with_two_adds()
    fn.body.block.ops[1].parent = Block()
    with pytest.raises(IRError, match="parent link does not point to its block"):
        verify(m)


def test_function_registered_under_another_name():
    m, fn, a, c = _fn_with_two_adds()
    m.functions["alias"] = m.functions.pop("k")
    with pytest.raises(IRError, match="lists function @k under the name @alias"):
        verify(m)


def test_arg_attrs_length():
    m, fn, a, c = _fn_with_two_adds()
    fn.arg_attrs.append({})
    with pytest.raises(IRError, match="2 arg_attrs entries for 1 arguments"):
        verify(m)


def test_numpy_scalar_attributes_are_accepted():
    fn = Function("k", [])
    m = Module()
    m.add(fn)
    b = Builder(fn.body.block)
    b.constant(np.float32(2.5), f32)
    b.op1("make_range", [], tensor([8], i32), start=np.int64(0), end=np.int64(8))
    b.create("return")
    verify(m)
    b2 = Builder(fn.body.block, before=fn.body.block.ops[-1])
    b2.constant(np.float32(2.5), i32)
    with pytest.raises(IRError, match="integer constant of type i32 has float value 2.5"):
        verify(m)


# -- hooks for ops registered later ------------------------------------------------------------

@pytest.fixture
def gpu_op():
    """A stand-in for a GPU-IR op, removed from the catalog again after the test."""
    register_op(OpDef("test_convert", 1, 1, 0, (), frozenset({"pure"})))
    yield "test_convert"
    del ops_mod.OPS["test_convert"]


def test_registered_verifier_runs_and_can_be_removed(gpu_op):
    text = kernel("%x: tensor<4xf32>", """
        %y = test_convert %x : tensor<4xf16>
        return""")
    m = parse_module(text)
    verify(m)  # structural checks only

    def same_element(op):
        if op.operands[0].type.scalar != op.results[0].type.scalar:
            return "convert must keep the element type"

    register_verifier(gpu_op, same_element)
    try:
        with pytest.raises(IRError, match="'test_convert': convert must keep the element type"):
            verify(m)
    finally:
        unregister_verifier(gpu_op, same_element)
    verify(m)


def test_registered_verifier_with_context_may_raise(gpu_op):
    seen = []

    def needs_kernel(op, ctx):
        seen.append((ctx.function.name, ctx.module is not None))
        if not ctx.function.attrs.get("kernel"):
            raise IRError("only allowed in kernels")

    register_verifier(gpu_op, needs_kernel)
    try:
        helper = """
            func @h(%x: f32) -> (f32) {
              %y = test_convert %x : f32
              return %y
            }
        """
        m = parse_module(kernel("", "return", extra=helper))
        with pytest.raises(IRError, match="in function @h: 'test_convert': only allowed in "
                                          "kernels"):
            verify(m)
        assert seen == [("h", True)]
    finally:
        unregister_verifier(gpu_op, needs_kernel)


def test_extra_rules_on_core_ops_run_after_the_builtin_ones():
    def no_sub_of_self(op):
        if op.operands[0] is op.operands[1]:
            return "x - x should have been folded"

    register_verifier("sub", no_sub_of_self)
    try:
        with pytest.raises(IRError, match="x - x should have been folded"):
            verify(parse_module(kernel("%x: f32", "%y = sub %x, %x : f32\nreturn")))
        with pytest.raises(IRError, match="operands must all have one type"):
            verify(parse_module(kernel("%x: f32, %n: i32", "%y = sub %x, %n : f32\nreturn")))
    finally:
        unregister_verifier("sub", no_sub_of_self)
    verify(parse_module(kernel("%x: f32", "%y = sub %x, %x : f32\nreturn")))


def test_unregistering_an_unknown_rule_fails():
    with pytest.raises(ValueError):
        unregister_verifier("add", lambda op: None)


def test_block_argument_of_a_sibling_region():
    fn = Function("k", [i1], arg_names=["c"])
    m = Module()
    m.add(fn)
    n = Operation("constant", [], [i32], {"value": 4})
    first, second = Region(Block([i32])), Region(Block([i32]))
    first.block.append(Operation("yield"))
    second.block.append(Operation("neg", [first.block.args[0]], [i32]))
    second.block.append(Operation("yield"))
    fn.body.block.append(n)
    for body in (first, second):
        fn.body.block.append(Operation("for", [n.results[0]] * 3, [], regions=[body]))
    fn.body.block.append(Operation("return"))
    with pytest.raises(IRError, match="is a block argument of a region that does not enclose"):
        verify(m)


def test_types_the_parser_cannot_produce():
    m, fn, a, c = _fn_with_two_adds()
    mul = fn.body.block.ops[1]
    mul.results[0].type = tensor([4], tensor([2], f32))
    with pytest.raises(IRError, match="a tensor's element must be a scalar or a pointer"):
        verify(m)
    mul.results[0].type = "f32"
    with pytest.raises(IRError, match="is not an IR type"):
        verify(m)


def test_use_list_pointing_at_the_wrong_operand():
    m, fn, a, c = _fn_with_two_adds()
    mul = fn.body.block.ops[1]
    fn.args[0].uses.append((mul, 0))  # mul's operand 0 is `a`, not the argument
    with pytest.raises(IRError, match="says 'mul' uses it as operand #0, which it does not"):
        verify(m)


def test_region_op_without_terminator_table_needs_a_terminator(gpu_region_op):
    text = kernel("%x: f32", """
        test_region {
          %y = neg %x : f32
        }
        return""")
    with pytest.raises(IRError, match="region #0 of 'test_region' must end in a terminator, "
                                      "not 'neg'"):
        verify(parse_module(text))
    verify(parse_module(kernel("%x: f32", """
        test_region {
          %y = neg %x : f32
          yield
        }
        return""")))


@pytest.fixture
def gpu_region_op():
    register_op(OpDef("test_region", 0, 0, 1))
    yield "test_region"
    del ops_mod.OPS["test_region"]


def test_detached_function_skips_callee_lookup():
    m = parse_module(kernel("%x: f32", """
        %r = call %x {callee = "elsewhere"} : f32
        return"""))
    fn = m.functions["k"]
    with pytest.raises(IRError, match="callee @elsewhere is not a function"):
        verify(fn)
    fn.module = None
    verify(fn)


def test_long_ops_are_cut_in_messages():
    body = "\n".join(f"  %v{i} = neg %a : f32" for i in range(30))
    text = kernel("%n: i32, %x: f32", f"""
        %r = for %n, %n, %n, %x : f32 {{
        ^(%i: i32, %a: f32):
        {body}
          yield %i
        }}
        return""")
    err = _check(text, "region #0 'yield' gives (i32) but the loop carries (f32)")
    lines = str(err).splitlines()
    assert len(lines) == 13 and lines[-1].strip() == "..."


def test_register_verifier_needs_a_callable():
    with pytest.raises(TypeError):
        register_verifier("add", "not callable")


def test_use_listed_twice():
    m, fn, a, c = _fn_with_two_adds()
    mul = fn.body.block.ops[1]
    a.uses.append((mul, 1))
    with pytest.raises(IRError, match="'mul': operand #1 appears 2 times"):
        verify(m)


def test_messages_name_outer_values_inside_regions():
    """print_op names values from outside the op, so region bodies read as in the module."""
    err = _check(kernel("%c: i1, %x: f32, %n: i32", """
        %r = if %c : f32 {
          %s = add %x, %x : f32
          yield %s
        } {
          yield %n
        }
        return"""), "region #1 'yield' gives (i32)")
    assert "%s = add %x, %x : f32" in str(err) and "yield %n" in str(err)
    assert "undefined" not in str(err)


def test_same_op_inserted_twice():
    m, fn, a, c = _fn_with_two_adds()
    fn.body.block.ops.insert(1, a.owner)
    with pytest.raises(IRError, match="appears twice in the IR"):
        verify(m)
