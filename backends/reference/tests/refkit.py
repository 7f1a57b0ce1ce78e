"""A small kernel-building kit over naiad's IR Builder, for the reference executor's tests.

It writes strictly typed tile IR the way the frontend does (explicit splats, broadcasts, casts),
so the tests exercise the executor without depending on the frontend.
"""
from __future__ import annotations

from contextlib import contextmanager

import ml_dtypes
import numpy as np

from naiad.ir import (Block, Builder, Function, Module, Operation, PointerType, Region,
                      ScalarType, tensor)


#: naiad scalar type name -> numpy dtype
NP = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}


def ty(text: str):
    """'*f32' -> ptr<f32>, 'i32' -> i32, 'f32[64x32]' -> tensor<64x32xf32>."""
    if text.startswith("*"):
        return PointerType(ty(text[1:]))
    if "[" in text:
        elem, dims = text[:-1].split("[")
        return tensor([int(d) for d in dims.split("x")], ty(elem))
    return ScalarType(text)


def as_type(t):
    return ty(t) if isinstance(t, str) else t


class K:
    """One kernel under construction: ``K("add", x="*f32", n="i32")``."""

    def __init__(self, name: str, **params):
        self.module = Module()
        names = list(params)
        types = [as_type(params[n]) for n in names]
        self.fn = Function(name, types, arg_names=names, attrs={"kernel": True})
        self.module.add(self.fn)
        self.b = Builder(self.fn.body.block)
        self.a = dict(zip(names, self.fn.args))
        self.name = name

    # -- plain ops ---------------------------------------------------------------------------
    def op(self, name, *operands, type=None, **attrs):
        rt = as_type(type) if type is not None else operands[0].type
        return self.b.op1(name, list(operands), rt, **attrs)

    def const(self, value, t):
        return self.b.constant(value, as_type(t))

    def pid(self, axis=0):
        return self.op("program_id", type="i32", axis=axis)

    def nprog(self, axis=0):
        return self.op("num_programs", type="i32", axis=axis)

    def arange(self, start, end):
        return self.op("make_range", type=tensor([end - start], ty("i32")), start=start, end=end)

    def splat(self, v, shape):
        return self.op("splat", v, type=tensor(shape, v.type))

    def bcast(self, v, shape):
        return self.op("broadcast", v, type=tensor(shape, v.type.scalar))

    def expand(self, v, axis):
        shape = list(v.type.shape)
        shape.insert(axis, 1)
        return self.op("expand_dims", v, type=tensor(shape, v.type.scalar), axis=axis)

    def addptr(self, p, off):
        if off.type.is_tensor and not p.type.is_tensor:
            p = self.splat(p, off.type.shape)
        return self.op("addptr", p, off, type=p.type)

    def load(self, p, mask=None, other=None, **attrs):
        ops = [p] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        rt = p.type.scalar.pointee
        if p.type.is_tensor:
            rt = tensor(p.type.shape, rt)
        return self.b.op1("load", ops, rt, **attrs)

    def store(self, p, v, mask=None):
        ops = [p, v] + ([mask] if mask is not None else [])
        self.b.create("store", ops, [])

    def atomic(self, kind, p, v, mask=None):
        ops = [p, v] + ([mask] if mask is not None else [])
        return self.b.op1("atomic_rmw", ops, v.type, kind=kind)

    def cmp(self, pred, a, b):
        rt = tensor(a.type.shape, ty("i1")) if a.type.is_tensor else ty("i1")
        return self.b.op1("cmp", [a, b], rt, pred=pred)

    def cast(self, v, elem, **attrs):
        elem = as_type(elem)
        rt = tensor(v.type.shape, elem) if v.type.is_tensor else elem
        return self.b.op1("cast", [v], rt, **attrs)

    def full(self, value, shape, elem):
        return self.const(value, tensor(shape, as_type(elem)))

    def offsets(self, block, axis=0):
        """pid * block + arange(block)."""
        pid = self.pid(axis)
        start = self.op("mul", pid, self.const(block, "i32"))
        return self.op("add", self.splat(start, [block]), self.arange(0, block))

    # -- regions -----------------------------------------------------------------------------
    @contextmanager
    def into(self, block):
        with self.b.at_end_of(block):
            yield

    def region_op(self, name, operands, result_types, blocks, **attrs):
        op = Operation(name, list(operands), [as_type(t) for t in result_types], attrs,
                       [Region(b) for b in blocks])
        self.b.insert(op)
        return op

    def for_(self, lb, ub, step, inits, body):
        """``body(iv, *carried) -> list of new carried``; returns the loop's results."""
        block = Block([lb.type] + [v.type for v in inits])
        op = self.region_op("for", [lb, ub, step, *inits], [v.type for v in inits], [block])
        with self.into(block):
            new = body(*block.args)
            self.b.create("yield", list(new or []), [])
        return op.results

    def if_(self, cond, result_types, then, else_):
        tb, eb = Block(), Block()
        op = self.region_op("if", [cond], result_types, [tb, eb])
        for blk, fn in ((tb, then), (eb, else_)):
            with self.into(blk):
                vals = fn() if fn is not None else []
                self.b.create("yield", list(vals or []), [])
        return op.results

    def while_(self, inits, before, after):
        """``before(*carried) -> (cond, [values])``; ``after(*values) -> [new carried]``."""
        bb = Block([v.type for v in inits])
        with self.into(bb):
            cond, vals = before(*bb.args)
            self.b.create("condition", [cond, *vals], [])
        ab = Block([v.type for v in vals])
        with self.into(ab):
            new = after(*ab.args)
            self.b.create("yield", list(new), [])
        op = self.region_op("while", inits, [v.type for v in vals], [bb, ab])
        return op.results

    def _combine_block(self, elems, combine):
        blk = Block(list(elems) + list(elems))
        n = len(elems)
        with self.into(blk):
            outs = combine(self, blk.args[:n], blk.args[n:])
            self.b.create("yield", list(outs), [])
        return blk

    def reduce(self, inputs, axis, combine):
        elems = [v.type.scalar for v in inputs]
        shape = list(inputs[0].type.shape)
        del shape[axis]
        rts = [tensor(shape, e) if shape else e for e in elems]
        blk = self._combine_block(elems, combine)
        return self.region_op("reduce", inputs, rts, [blk], axis=axis).results

    def scan(self, inputs, axis, combine, reverse=False):
        elems = [v.type.scalar for v in inputs]
        blk = self._combine_block(elems, combine)
        return self.region_op("scan", inputs, [v.type for v in inputs], [blk], axis=axis,
                              reverse=reverse).results

    def finish(self) -> Module:
        self.b.create("return", [], [])
        return self.module


def binop(name, **attrs):
    """A combine function applying one binary op (for reduce/scan)."""
    return lambda k, acc, new: [k.op(name, acc[0], new[0], **attrs)]


def rng(seed=None):
    return np.random.default_rng(seed)


def poison(shape, dtype):
    """An output buffer filled with NaN (floats) or a sentinel (ints) so unwritten lanes show."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.full(shape, np.nan, dtype=dtype)
    if dtype == np.bool_:
        return np.zeros(shape, dtype=bool)
    return np.full(shape, np.iinfo(dtype).max // 3 + 7, dtype=dtype)


def random_array(r, shape, dtype, low=None, high=None):
    """Fresh random data of ``dtype`` (never all zeros)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return r.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = info.min if low is None else low
        hi = info.max if high is None else high
        return r.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64 if dtype.kind == "i"
                          else np.uint64).astype(dtype)
    lo = -4.0 if low is None else low
    hi = 4.0 if high is None else high
    return r.uniform(lo, hi, size=shape).astype(dtype)
