"""The op-by-op evaluator: runs a function's tile IR for a *batch* of programs at once.

Every value has a leading program axis (see :mod:`naiad_reference.runtime.values`). Control flow that
differs between programs runs under a per-program *active mask*: an ``if`` on a per-program
condition runs each branch for the programs that take it and merges the results; a ``for`` whose
trip count differs runs the longest trip count with programs dropping out; a ``while`` runs until
no program continues. Memory operations AND their lane mask with the active mask, so a program
that does not execute a branch never loads, stores or faults in it. A batch of one program is the
plain sequential interpreter.
"""
from __future__ import annotations

import numpy as np

from naiad.errors import NaiadError
from naiad.backend import BINARY_ARITH, MATH_UNARY

from . import arith, debugging
from .collectives import dot, reduce_op, scan_op
from .values import Ptr, narrow_base, lead, merge, undefined, where


def _dtype(t) -> np.dtype:
    return t.scalar.numpy_dtype


def _wrap_int(value, elem) -> int:
    value = int(value)
    bits = elem.bitwidth
    value &= (1 << bits) - 1
    if elem.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def make_constant(value, type_) -> object:
    """The array for a ``constant`` op (program axis of length 1)."""
    elem = type_.scalar
    shape = (1,) + tuple(type_.shape)
    if elem.is_pointer:
        raise NaiadError("reference executor: pointer constants are not supported")
    if elem.is_bool:
        scalar = np.array(bool(value))
    elif elem.is_int:
        scalar = np.array(_wrap_int(value, elem), dtype=elem.numpy_dtype)
    else:
        scalar = np.array(float(value), dtype=np.float64).astype(elem.numpy_dtype)
    return np.broadcast_to(scalar.reshape((1,) * len(shape)), shape)


class BatchContext:
    """Which programs a batch holds: their linear indices (axis 0 fastest) and the grid."""

    def __init__(self, grid: tuple[int, int, int], program_index: np.ndarray):
        self.grid = grid
        self.program_index = program_index  # int64, shape (P,)
        gx, gy, _ = grid
        self.pids = [(program_index % gx).astype(np.int32),
                     ((program_index // gx) % gy).astype(np.int32),
                     (program_index // (gx * gy)).astype(np.int32)]

    def program_of(self, i: int) -> tuple[int, int, int]:
        """Program id (x, y, z) of the batch's ``i``-th program (0 for uniform values)."""
        i = min(i, self.program_index.shape[0] - 1)
        return tuple(int(p[i]) for p in self.pids)


class Interpreter:
    """Evaluates a module's functions for one batch of programs against one :class:`Memory`."""

    def __init__(self, module, memory, ctx: BatchContext, cache: dict):
        self.module = module
        self.memory = memory
        self.ctx = ctx
        self.cache = cache  # per-kernel cache of constants / ranges (program-independent)
        self.env: dict = {}
        self.depth = 0

    # -- blocks -----------------------------------------------------------------------------
    def run_block(self, block, args, active):
        env = self.env
        for a, v in zip(block.args, args):
            env[a] = v
        ops = block.ops
        for op in ops[:-1]:
            handler = _HANDLERS.get(op.name)
            if handler is None:
                raise NaiadError(f"reference executor does not implement op {op.name!r}")
            handler(self, op, active)
        term = ops[-1]
        return [env[v] for v in term.operands]

    def run_function(self, fn, args, active=None):
        if self.depth > 64:
            raise NaiadError(f"reference executor: call depth exceeded in @{fn.name}")
        self.depth += 1
        try:
            return self.run_block(fn.body.block, args, active)
        finally:
            self.depth -= 1

    def eval_region(self, block, args):
        """Evaluate a combine region on arrays (reduce/scan bodies): no memory, no masks."""
        return self.run_block(block, args, None)

    def _set(self, op, value):
        self.env[op.results[0]] = value

    def _args(self, op):
        env = self.env
        return [env[v] for v in op.operands]

    # -- constants, ids, ranges -------------------------------------------------------------
    def op_constant(self, op, active):
        v = self.cache.get(op)
        if v is None:
            v = make_constant(op.attrs["value"], op.results[0].type)
            self.cache[op] = v
        self._set(op, v)

    def op_program_id(self, op, active):
        self._set(op, self.ctx.pids[op.attrs["axis"]])

    def op_num_programs(self, op, active):
        self._set(op, np.array([self.ctx.grid[op.attrs["axis"]]], dtype=np.int32))

    def op_make_range(self, op, active):
        v = self.cache.get(op)
        if v is None:
            v = np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)[None, :]
            self.cache[op] = v
        self._set(op, v)

    # -- shape ops --------------------------------------------------------------------------
    def _shape_op(self, op, fn):
        x = self.env[op.operands[0]]
        self._set(op, x.map(fn) if isinstance(x, Ptr) else fn(x))

    def op_splat(self, op, active):
        shape = tuple(op.results[0].type.shape)

        def fn(x):
            n = x.shape[0]
            return np.broadcast_to(x.reshape((n,) + (1,) * len(shape)), (n,) + shape)

        self._shape_op(op, fn)

    def op_broadcast(self, op, active):
        shape = tuple(op.results[0].type.shape)
        self._shape_op(op, lambda x: np.broadcast_to(x, (x.shape[0],) + shape))

    def op_expand_dims(self, op, active):
        axis = op.attrs["axis"]
        if axis < 0:
            axis += len(op.results[0].type.shape)
        self._shape_op(op, lambda x: np.expand_dims(x, axis + 1))

    def op_reshape(self, op, active):
        shape = tuple(op.results[0].type.shape)
        self._shape_op(op, lambda x: x.reshape((x.shape[0],) + shape))

    def op_trans(self, op, active):
        order = (0,) + tuple(int(o) + 1 for o in op.attrs["order"])
        self._shape_op(op, lambda x: np.transpose(x, order))

    def op_identity(self, op, active):
        self._set(op, self.env[op.operands[0]])

    def op_join(self, op, active):
        a, b = self._args(op)
        if isinstance(a, Ptr):
            off = np.stack(np.broadcast_arrays(a.off, b.off), axis=-1)
            base = np.stack(np.broadcast_arrays(a.base_array(), b.base_array()), axis=-1)
            self._set(op, Ptr(narrow_base(base), off))
            return
        self._set(op, np.stack(np.broadcast_arrays(a, b), axis=-1))

    def op_gather(self, op, active):
        src, index = self._args(op)
        axis = op.attrs["axis"] + 1                      # past the program axis
        n = src.shape[axis]
        inside = (index >= 0) & (index < n)
        picked = np.take_along_axis(
            np.broadcast_to(src, (max(src.shape[0], index.shape[0]),) + src.shape[1:]),
            np.broadcast_to(np.where(inside, index, 0).astype(np.int64),
                            (max(src.shape[0], index.shape[0]),) + index.shape[1:]), axis)
        self._set(op, np.where(inside, picked, np.zeros((), src.dtype)))

    def op_histogram(self, op, active):
        """Per program, ``bincount`` of the values in ``[0, num_bins)`` where the mask holds."""
        args = self._args(op)
        x = args[0]
        bins = int(op.attrs["num_bins"])
        counted = (x >= 0) & (x < bins)
        if len(args) > 1:
            counted = counted & args[1]
        programs = counted.shape[0]
        x = np.broadcast_to(x, counted.shape)
        slot = np.where(counted, x, 0).astype(np.int64) + \
            (np.arange(programs, dtype=np.int64) * bins)[:, None]
        counts = np.bincount(slot[counted], minlength=programs * bins)
        self._set(op, counts.astype(np.int32).reshape(programs, bins))

    def op_split(self, op, active):
        x = self.env[op.operands[0]]
        for i, r in enumerate(op.results):
            self.env[r] = x.map(lambda y: y[..., i]) if isinstance(x, Ptr) else x[..., i]

    # -- pointers and memory ----------------------------------------------------------------
    def op_addptr(self, op, active):
        p, o = self._args(op)
        if p.zero and o.dtype.kind in "iu" and (o.dtype.kind == "i" or o.dtype.itemsize < 8):
            # first offset onto an argument: keep the offset array itself (no copy); shapes as
            # for an add (offsets may be per program while the pointer is uniform)
            shape = np.broadcast_shapes(p.off.shape, o.shape)
            off = o if o.shape == shape else np.broadcast_to(o, shape)
            self._set(op, Ptr(p.base, off))
            return
        self._set(op, Ptr(p.base, np.add(p.off, o, dtype=np.int64)))

    def op_load(self, op, active):
        args = self._args(op)
        ptr = args[0]
        mask = args[1] if len(args) > 1 else None
        other = args[2] if len(args) > 2 else None
        rt = op.results[0].type
        if rt.scalar.is_pointer:
            raise NaiadError("reference executor: loading pointers from memory is not supported")
        self._set(op, self.memory.load(ptr, _dtype(rt), mask, other, active, self.ctx, op))

    def op_store(self, op, active):
        args = self._args(op)
        mask = args[2] if len(args) > 2 else None
        self.memory.store(args[0], args[1], mask, active, self.ctx, op)

    def op_atomic_rmw(self, op, active):
        args = self._args(op)
        mask = args[2] if len(args) > 2 else None
        want = bool(op.results[0].uses)
        old = self.memory.atomic_rmw(op.attrs["kind"], args[0], args[1], mask, active, want,
                                     self.ctx, op)
        if old is None:
            old = np.zeros((1,) + tuple(op.results[0].type.shape), _dtype(op.results[0].type))
        self._set(op, old)

    def op_atomic_cas(self, op, active):
        ptr, cmp, val = self._args(op)
        self._set(op, self.memory.atomic_cas(ptr, cmp, val, active, self.ctx, op))

    def op_atomic_poll(self, op, active):
        args = self._args(op)
        self._set(op, self.memory.atomic_poll(args[0], args[1], len(args) > 2, active,
                                              self.ctx, op))

    # -- elementwise ------------------------------------------------------------------------
    def op_binary(self, op, active):
        a, b = self._args(op)
        self._set(op, arith.binary(op.name, a, b, op.operands[0].type.scalar, op.attrs))

    def op_neg(self, op, active):
        self._set(op, arith.neg(self.env[op.operands[0]], op.operands[0].type.scalar))

    def op_not(self, op, active):
        self._set(op, arith.bitnot(self.env[op.operands[0]], op.operands[0].type.scalar))

    def op_cmp(self, op, active):
        a, b = self._args(op)
        self._set(op, arith.compare(op.attrs["pred"], a, b, op.operands[0].type.scalar))

    def op_select(self, op, active):
        c, a, b = self._args(op)
        self._set(op, where(c, a, b))

    def op_cast(self, op, active):
        x = self.env[op.operands[0]]
        self._set(op, arith.cast(x, op.operands[0].type.scalar, op.results[0].type.scalar,
                                 op.attrs))

    def op_bitcast(self, op, active):
        x = self.env[op.operands[0]]
        self._set(op, arith.bitcast(x, op.operands[0].type.scalar, op.results[0].type.scalar))

    def op_math(self, op, active):
        self._set(op, arith.math_unary(op.name, self.env[op.operands[0]],
                                       op.operands[0].type.scalar))

    def op_fma(self, op, active):
        a, b, c = self._args(op)
        self._set(op, arith.fma(a, b, c, op.operands[0].type.scalar))

    def op_umulhi(self, op, active):
        a, b = self._args(op)
        self._set(op, arith.umulhi(a, b, op.operands[0].type.scalar))

    # -- reductions, scans, dot -------------------------------------------------------------
    def op_reduce(self, op, active):
        for r, v in zip(op.results, reduce_op(self, op, self._args(op))):
            self.env[r] = v

    def op_scan(self, op, active):
        for r, v in zip(op.results, scan_op(self, op, self._args(op))):
            self.env[r] = v

    def op_dot(self, op, active):
        a, b, c = self._args(op)
        self._set(op, dot(a, b, c, op))

    # -- control flow -----------------------------------------------------------------------
    def _set_results(self, op, values):
        for r, v in zip(op.results, values):
            self.env[r] = v

    def _undefined(self, op):
        return [undefined(r.type, lambda e: e.numpy_dtype) for r in op.results]

    def op_for(self, op, active):
        env = self.env
        lb, ub, step = (env[v] for v in op.operands[:3])
        carried = [env[v] for v in op.operands[3:]]
        block = op.regions[0].block
        iv_type = block.args[0].type
        if active is not None and not active.any():
            self._set_results(op, carried)
            return
        uniform = _uniform_among(active, lb, ub, step)
        if uniform is not None:
            lo, hi, st = uniform
            if st == 0:
                raise NaiadError("reference executor: for loop with step 0 never ends")
            dtype = iv_type.numpy_dtype
            for i in range(_trip_count(lo, hi, st)):
                iv = np.array([_wrap_int(lo + i * st, iv_type)], dtype=dtype)
                carried = self.run_block(block, [iv] + carried, active)
            self._set_results(op, carried)
            return
        # per-program trip counts: run the longest, programs drop out as they finish
        lo = lb.astype(np.int64)
        hi = ub.astype(np.int64)
        st = step.astype(np.int64)
        act = _as_mask(active, max(lead(lb), lead(ub), lead(step), self.ctx.pids[0].shape[0]))
        if (st[act] == 0).any() if st.shape[0] > 1 else (st[0] == 0):
            raise NaiadError("reference executor: for loop with step 0 never ends")
        safe_st = np.where(st == 0, 1, st)
        span = np.where(safe_st > 0, hi - lo, lo - hi)
        trips = np.where(span > 0, (span + np.abs(safe_st) - 1) // np.abs(safe_st), 0)
        trips = np.where(act, np.broadcast_to(trips, act.shape), 0)
        for i in range(int(trips.max(initial=0))):
            on = trips > i
            iv = (lo + i * st).astype(iv_type.numpy_dtype)
            new = self.run_block(block, [iv] + carried, on)
            carried = [merge(on, n, c) for n, c in zip(new, carried)]
        self._set_results(op, carried)

    def op_while(self, op, active):
        env = self.env
        before, after = op.regions[0].block, op.regions[1].block
        carried = [env[v] for v in op.operands]
        if active is not None and not active.any():
            self._set_results(op, self._undefined(op))
            return
        act = active
        final = None
        while True:
            vals = self.run_block(before, carried, act)
            cond, vals = vals[0], vals[1:]
            if act is None and cond.shape[0] == 1:
                # every program agrees: plain loop
                if not cond[0]:
                    final = vals
                    break
                carried = self.run_block(after, vals, None)
                continue
            act_m = _as_mask(act, cond.shape[0])
            stay = act_m & cond
            leaving = act_m & ~cond
            # programs leaving now keep this iteration's values as the loop's results
            final = vals if final is None else [merge(leaving, v, f) for v, f in zip(vals, final)]
            if not stay.any():
                break
            carried = self.run_block(after, vals, stay)
            act = stay
        self._set_results(op, final)

    def op_if(self, op, active):
        cond = self.env[op.operands[0]]
        then_b, else_b = op.regions[0].block, op.regions[1].block
        if cond.shape[0] == 1 or _all_same(cond, active):
            pick = bool(cond[0]) if active is None or cond.shape[0] == 1 \
                else bool(cond[np.argmax(active)])
            self._set_results(op, self.run_block(then_b if pick else else_b, [], active))
            return
        act = _as_mask(active, cond.shape[0])
        on_then, on_else = act & cond, act & ~cond
        then_v = self.run_block(then_b, [], on_then) if on_then.any() else None
        else_v = self.run_block(else_b, [], on_else) if on_else.any() else None
        if then_v is None:
            vals = else_v
        elif else_v is None:
            vals = then_v
        else:
            vals = [merge(cond, t, e) for t, e in zip(then_v, else_v)]
        self._set_results(op, vals)

    def op_call(self, op, active):
        name = op.attrs["callee"]
        fn = self.module.functions.get(name)
        if fn is None:
            raise NaiadError(f"reference executor: call to unknown function @{name}")
        self._set_results(op, self.run_function(fn, self._args(op), active))


def _as_mask(active, n: int) -> np.ndarray:
    if active is None:
        return np.ones(n, dtype=bool)
    return np.broadcast_to(active, (max(n, active.shape[0]),))


def _all_same(cond: np.ndarray, active) -> bool:
    c = cond if active is None else cond[active]
    return c.size == 0 or bool(c.all()) or not c.any()


def _uniform_among(active, *vals):
    """Python ints of scalar values equal in every active program, or None."""
    out = []
    for v in vals:
        if v.shape[0] == 1:
            out.append(int(v[0]))
            continue
        sel = v if active is None else v[active]
        if sel.size == 0 or not (sel == sel[0]).all():
            return None
        out.append(int(sel[0]))
    return tuple(out)


def _trip_count(lo: int, hi: int, st: int) -> int:
    if st > 0:
        return max(0, -(-(hi - lo) // st))
    return max(0, -(-(lo - hi) // -st))


_HANDLERS = {
    "constant": Interpreter.op_constant,
    "program_id": Interpreter.op_program_id,
    "num_programs": Interpreter.op_num_programs,
    "make_range": Interpreter.op_make_range,
    "splat": Interpreter.op_splat,
    "broadcast": Interpreter.op_broadcast,
    "expand_dims": Interpreter.op_expand_dims,
    "reshape": Interpreter.op_reshape,
    "trans": Interpreter.op_trans,
    "join": Interpreter.op_join,
    "split": Interpreter.op_split,
    "gather": Interpreter.op_gather,
    "histogram": Interpreter.op_histogram,
    "hint": Interpreter.op_identity,
    "convert_layout": Interpreter.op_identity,
    "addptr": Interpreter.op_addptr,
    "load": Interpreter.op_load,
    "store": Interpreter.op_store,
    "atomic_rmw": Interpreter.op_atomic_rmw,
    "atomic_cas": Interpreter.op_atomic_cas,
    "atomic_poll": Interpreter.op_atomic_poll,
    "neg": Interpreter.op_neg,
    "not": Interpreter.op_not,
    "cmp": Interpreter.op_cmp,
    "select": Interpreter.op_select,
    "cast": Interpreter.op_cast,
    "bitcast": Interpreter.op_bitcast,
    "fma": Interpreter.op_fma,
    "umulhi": Interpreter.op_umulhi,
    "reduce": Interpreter.op_reduce,
    "scan": Interpreter.op_scan,
    "dot": Interpreter.op_dot,
    "for": Interpreter.op_for,
    "while": Interpreter.op_while,
    "if": Interpreter.op_if,
    "call": Interpreter.op_call,
    "print": debugging.op_print,
    "assert": debugging.op_assert,
    "debug_barrier": debugging.op_debug_barrier,
    "assume": debugging.op_assume,
    "descriptor_access": debugging.op_descriptor_access,
    "descriptor_make": debugging.op_descriptor_make,
    "inline_asm": debugging.op_inline_asm,
}
for _n in BINARY_ARITH:
    _HANDLERS[_n] = Interpreter.op_binary
for _n in MATH_UNARY:
    _HANDLERS[_n] = Interpreter.op_math

#: every op the executor implements (the tests check the catalog is covered)
IMPLEMENTED_OPS = frozenset(_HANDLERS) | {"yield", "condition", "return"}
