"""Checked memory: the kernel's pointer arguments as flat buffers, and the loads, stores and
atomics that read and write them.

Every access is bounds-checked against the buffer its pointer was derived from; an active lane
(mask true, program active) outside it raises :class:`naiad.OutOfBoundsError` naming the kernel,
the program id, the argument, the offset and the buffer's size. Masked-off lanes are never read.

Ordering inside one operation follows the lanes in row-major order with the program axis first
(program 0's lanes, then program 1's ...): a repeated address in a store keeps the last lane's
value; atomics apply every lane in that order and return each lane's old value.

In *checked* lockstep mode (see :mod:`naiad_reference.runtime.executor`) the buffers that a kernel writes
and later reads carry an owner array: each store records the program that wrote an element, and a
load of an element another program wrote raises :class:`CrossProgramHazard`, so the executor can
roll back and run the kernel one program at a time.
"""
from __future__ import annotations

import linecache

import numpy as np

from naiad.errors import NaiadError, OutOfBoundsError

try:  # the runtime's argument error, so callers can catch one class for every backend
    from naiad.backend import ArgumentError as _ArgumentBase
except ImportError:  # pragma: no cover - runtime not present
    class _ArgumentBase(NaiadError, TypeError):
        pass

from .values import NO_BUFFER, Ptr, align


class ReferenceArgumentError(_ArgumentBase):
    """A launch argument the reference executor cannot use (wrong kind, layout or range)."""


class CrossProgramHazard(Exception):
    """Internal: a program read memory another program of the same lockstep batch wrote."""


def flat_memory(array, name: str) -> np.ndarray:
    """A 1-D view of the memory an array occupies, starting at its first element (what a GPU
    kernel would receive as the pointer); strided arrays with non-negative strides are allowed."""
    if not isinstance(array, np.ndarray):
        raise ReferenceArgumentError(
            f"argument {name!r} is a pointer; the reference backend takes a numpy array for it, "
            f"got {type(array).__name__}")
    if array.ndim == 0:
        array = array.reshape(1)
    if array.flags.c_contiguous:
        return array.reshape(-1)
    item = array.itemsize
    if any(s < 0 or s % item for s in array.strides):
        raise ReferenceArgumentError(
            f"argument {name!r} has strides {array.strides} the reference backend cannot map to "
            "flat memory (negative or not a multiple of the item size); pass "
            "np.ascontiguousarray(...)")
    span = 0 if array.size == 0 else 1 + sum((d - 1) * s // item
                                             for d, s in zip(array.shape, array.strides))
    return np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(item,),
                                           writeable=array.flags.writeable)


class Buffer:
    """One pointer argument's memory, viewable as any element type (pointer casts)."""

    def __init__(self, index: int, name: str, array: np.ndarray):
        self.index = index
        self.name = name
        self.array = array
        flat = flat_memory(array, name)
        self.flat = flat
        self.writeable = flat.flags.writeable
        self.nbytes = flat.nbytes
        self._views = {flat.dtype: flat}
        self._raw = None

    def view(self, dtype: np.dtype) -> np.ndarray:
        v = self._views.get(dtype)
        if v is None:
            if dtype.itemsize == self.flat.itemsize:
                v = self.flat.view(dtype)
            else:
                if self._raw is None:
                    self._raw = self.flat.view(np.uint8)
                n = self.nbytes // dtype.itemsize
                v = self._raw[: n * dtype.itemsize].view(dtype)
            self._views[dtype] = v
        return v


def per_program(ctx, *arrays):
    """Broadcast lane arrays to the batch's program count. Uniform values (a constant pointer or
    value) keep a program axis of length 1; an atomic must still apply once per program."""
    programs = ctx.program_index.shape[0]
    arrays = np.broadcast_arrays(*arrays)
    if arrays[0].shape[0] == programs:
        return arrays
    return [np.broadcast_to(a, (programs,) + a.shape[1:]) for a in arrays]


def lane_mask(mask, active, ndim: int):
    """Combine an op's lane mask with the per-program active mask (None means all lanes)."""
    if active is None:
        return mask
    act = align(active, ndim)
    return act if mask is None else (mask & act)


_AT = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
       "or": np.bitwise_or, "xor": np.bitwise_xor}
_BOOL_AT = {"add": np.logical_xor, "max": np.logical_or, "min": np.logical_and,
            "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


class PollBlocked(NaiadError):
    """A program's ``tl.atomic_poll`` waits for a value no program that ran so far wrote."""

    def __init__(self, program: int, where: str):
        super().__init__(f"reference executor: {where} waits for a value that no other program "
                         "writes (every program still waiting was retried after the others "
                         "ran); on a GPU this poll would never end")
        self.program = program


class Memory:
    """The argument buffers of one launch plus the bounds checks and access semantics."""

    def __init__(self, kernel_name: str, buffers: dict[int, Buffer]):
        self.kernel_name = kernel_name
        self.buffers = buffers
        #: base -> (dtype, owner array) while running in checked lockstep mode
        self.owners: dict[int, tuple[np.dtype, np.ndarray]] | None = None

    # -- helpers --------------------------------------------------------------------------
    def _buffer(self, base: int, ctx, op, access: str) -> Buffer:
        buf = self.buffers.get(base)
        if buf is None:
            raise NaiadError(f"kernel {self.kernel_name!r}: {access} through a pointer that does "
                             f"not point into any argument buffer{_where(op)}")
        return buf

    def _oob(self, ctx, op, buf: Buffer, access: str, off, bad, n: int, dtype):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        program = ctx.program_of(idx[0])
        offset = int(off[idx])
        err = OutOfBoundsError(
            f"kernel {self.kernel_name!r}: program {program} {access} argument {buf.name!r} at "
            f"element offset {offset}, outside its buffer of {n} {np.dtype(dtype).name} elements "
            f"(valid offsets 0..{n - 1}){_where(op)}")
        err.kernel, err.program_id, err.argument = self.kernel_name, program, buf.name
        err.offset, err.size, err.access = offset, n, access
        raise err

    def _check(self, ctx, op, buf, access, off, m, n, dtype):
        """Raise for the first active lane outside [0, n)."""
        if off.size == 0:
            return
        probe = off if m is None else np.where(m, off, 0)
        if probe.min() >= 0 and probe.max() < n:
            return
        bad = (off < 0) | (off >= n)
        if m is not None:
            bad &= m
        if bad.any():
            self._oob(ctx, op, buf, access, off, bad, n, dtype)

    # -- write tracking (checked lockstep) --------------------------------------------------
    def _owner(self, base: int, dtype: np.dtype, n: int):
        if self.owners is None or base not in self.owners:
            return None
        entry = self.owners[base]
        if entry is None:
            entry = (dtype, np.full(n, -1, dtype=np.int64))
            self.owners[base] = entry
        if entry[0].itemsize != dtype.itemsize:
            raise CrossProgramHazard()  # reinterpreted buffer: give up on precise tracking
        return entry[1]

    def _record_writes(self, base, dtype, n, off_sel, prog_sel):
        owner = self._owner(base, dtype, n)
        if owner is not None:
            owner[off_sel] = prog_sel

    def _check_reads(self, base, dtype, n, off, m, ctx):
        owner = self._owner(base, dtype, n)
        if owner is None:
            return
        prog = align(ctx.program_index, off.ndim)
        who = owner[off if m is None else np.where(m, off, 0)]
        foreign = (who >= 0) & (who != prog)
        if m is not None:
            foreign &= m
        if foreign.any():
            raise CrossProgramHazard()

    # -- loads ------------------------------------------------------------------------------
    def load(self, ptr: Ptr, dtype: np.dtype, mask, other, active, ctx, op) -> np.ndarray:
        m = lane_mask(mask, active, ptr.off.ndim)
        if isinstance(ptr.base, np.ndarray):
            return self._split_bases(ptr, m, ctx, op, "loads",
                                     lambda p, mm: self.load(p, dtype, mm, other, None, ctx, op),
                                     dtype)
        buf = self._buffer(ptr.base, ctx, op, "load")
        data = buf.view(dtype)
        n = data.shape[0]
        off = ptr.off
        if m is None:
            self._check(ctx, op, buf, "loads", off, None, n, dtype)
            self._check_reads(ptr.base, dtype, n, off, None, ctx)
            return data[off]
        m, off = np.broadcast_arrays(m, off)
        if m.all():
            self._check(ctx, op, buf, "loads", off, None, n, dtype)
            self._check_reads(ptr.base, dtype, n, off, None, ctx)
            return data[off]
        safe = np.where(m, off, 0)
        if safe.size and (safe.min() < 0 or safe.max() >= n):
            self._check(ctx, op, buf, "loads", off, m, n, dtype)
        self._check_reads(ptr.base, dtype, n, off, m, ctx)
        vals = data[safe] if n else np.zeros(off.shape, dtype)
        fill = other if other is not None else np.zeros((), dtype)
        return np.where(m, vals, fill)

    def _split_bases(self, ptr: Ptr, m, ctx, op, access, fn, dtype):
        """Lanes pointing into different buffers: run ``fn`` once per buffer and merge."""
        base = ptr.base_array()
        if m is None:
            live = base
        else:
            mb, bb = np.broadcast_arrays(m, base)
            live = np.where(mb, bb, -2)
        out = None
        for b in np.unique(live):
            if b == -2:
                continue
            if b == NO_BUFFER:
                raise NaiadError(f"kernel {self.kernel_name!r}: {access} through a pointer that "
                                 f"does not point into any argument buffer{_where(op)}")
            sel = live == b
            res = fn(Ptr(int(b), ptr.off), sel)
            if res is not None:
                out = res if out is None else np.where(sel, res, out)
        if out is None and dtype is not None:
            out = np.zeros(ptr.off.shape, dtype)
        return out

    # -- stores -----------------------------------------------------------------------------
    def store(self, ptr: Ptr, value: np.ndarray, mask, active, ctx, op) -> None:
        m = lane_mask(mask, active, ptr.off.ndim)
        if isinstance(ptr.base, np.ndarray):
            self._split_bases(ptr, m, ctx, op, "stores",
                              lambda p, mm: self.store(p, value, mm, None, ctx, op), None)
            return
        buf = self._buffer(ptr.base, ctx, op, "store")
        dtype = value.dtype
        data = buf.view(dtype)
        n = data.shape[0]
        if m is not None and m.all():
            m = None
        if m is None:
            off, val = np.broadcast_arrays(ptr.off, value)
        else:
            off, val, m = np.broadcast_arrays(ptr.off, value, m)
        if not buf.writeable:
            raise ReferenceArgumentError(f"kernel {self.kernel_name!r} stores into argument "
                                         f"{buf.name!r}, a read-only numpy array{_where(op)}")
        self._check(ctx, op, buf, "stores", off, m, n, dtype)
        if m is None:
            data[off] = val
            sel_off = off
            prog_sel = None
        else:
            sel_off = off[m]
            data[sel_off] = val[m]
            prog_sel = None
        if self.owners is not None and ptr.base in self.owners:
            prog = np.broadcast_to(align(ctx.program_index, off.ndim), off.shape)
            prog_sel = prog if m is None else prog[m]
            self._record_writes(ptr.base, dtype, n, sel_off, prog_sel)

    # -- atomics ----------------------------------------------------------------------------
    def atomic_rmw(self, kind: str, ptr: Ptr, value, mask, active, want_old: bool, ctx, op):
        """Every active lane applies, in lane order; returns old values (0 for masked lanes)
        when ``want_old``."""
        m = lane_mask(mask, active, ptr.off.ndim)
        if isinstance(ptr.base, np.ndarray):
            return self._split_bases(
                ptr, m, ctx, op, "atomically updates",
                lambda p, mm: self.atomic_rmw(kind, p, value, mm, None, want_old, ctx, op),
                value.dtype if want_old else None)
        buf = self._buffer(ptr.base, ctx, op, "atomic")
        dtype = value.dtype
        data = buf.view(dtype)
        n = data.shape[0]
        if m is None:
            off, val = per_program(ctx, ptr.off, value)
            sel_off, sel_val = off.reshape(-1), val.reshape(-1)
        else:
            off, val, m = per_program(ctx, ptr.off, value, m)
            sel_off, sel_val = off[m], val[m]
        if not buf.writeable:
            raise ReferenceArgumentError(f"kernel {self.kernel_name!r} atomically updates "
                                         f"argument {buf.name!r}, a read-only numpy array"
                                         f"{_where(op)}")
        self._check(ctx, op, buf, "atomically updates", off, m, n, dtype)
        if self.owners is not None and ptr.base in self.owners:
            if want_old:
                self._check_reads(ptr.base, dtype, n, off, m, ctx)
            prog = np.broadcast_to(align(ctx.program_index, off.ndim), off.shape)
            self._record_writes(ptr.base, dtype, n, sel_off,
                                prog.reshape(-1) if m is None else prog[m])
        if not want_old and kind != "xchg":
            ufunc = (_BOOL_AT if dtype == np.bool_ else _AT)[kind]
            ufunc.at(data, sel_off, sel_val)
            return None
        old_sel = _sequential_rmw(data, kind, sel_off, sel_val)
        if not want_old:
            return None
        out = np.zeros(off.shape, dtype)
        if m is None:
            out = old_sel.reshape(off.shape)
        else:
            out[m] = old_sel
        return out

    def atomic_cas(self, ptr: Ptr, cmp, value, active, ctx, op):
        """Compare-and-swap per lane, lanes in order; returns the old values."""
        m = lane_mask(None, active, ptr.off.ndim)
        if isinstance(ptr.base, np.ndarray):
            return self._split_bases(
                ptr, m, ctx, op, "atomically updates",
                lambda p, mm: self._cas_one(p, cmp, value, mm, ctx, op), value.dtype)
        return self._cas_one(ptr, cmp, value, m, ctx, op)

    def atomic_poll(self, ptr: Ptr, expected, timed: bool, active, ctx, op) -> np.ndarray:
        """One load per element, compared with ``expected``. Programs run one at a time here
        (the analysis makes a poll sequential), so nothing changes the value while this program
        waits: an unmatched element is ``False`` once a timeout exists (the budget runs out
        with the value unchanged); without one the program is blocked (:class:`PollBlocked`:
        the executor undoes it and runs it again after the others)."""
        expected = np.asarray(expected)
        seen = self.load(ptr, expected.dtype, None, None, active, ctx, op)
        matched = np.asarray(seen == expected)
        m = lane_mask(None, active, matched.ndim)
        waiting = ~matched if m is None else (~matched & np.broadcast_to(m, matched.shape))
        if not timed and waiting.any():
            prog = int(np.broadcast_to(align(ctx.program_index, matched.ndim),
                                       matched.shape)[waiting].flat[0])
            raise PollBlocked(prog, f"tl.atomic_poll in program {prog} of kernel "
                                    f"{self.kernel_name!r}{_where(op)}")
        return matched

    def _cas_one(self, ptr, cmp, value, m, ctx, op):
        buf = self._buffer(ptr.base, ctx, op, "atomic_cas")
        if not buf.writeable:
            raise ReferenceArgumentError(f"kernel {self.kernel_name!r} applies atomic_cas to "
                                         f"argument {buf.name!r}, a read-only numpy array"
                                         f"{_where(op)}")
        dtype = value.dtype
        data = buf.view(dtype)
        n = data.shape[0]
        if m is None:
            off, cv, val = per_program(ctx, ptr.off, cmp, value)
            m = np.ones(off.shape, dtype=bool)
        else:
            off, cv, val, m = per_program(ctx, ptr.off, cmp, value, m)
        self._check(ctx, op, buf, "atomically updates", off, m, n, dtype)
        sel_off, sel_cmp, sel_val = off[m], cv[m], val[m]
        old = np.zeros(sel_off.shape, dtype)
        bits = np.dtype(f"u{dtype.itemsize}") if dtype.kind == "f" else dtype
        for lanes in _lanes_by_rank(sel_off):
            cur = data[sel_off[lanes]]
            same = cur.view(bits) == sel_cmp[lanes].astype(dtype).view(bits)
            data[sel_off[lanes]] = np.where(same, sel_val[lanes], cur)
            old[lanes] = cur
        out = np.zeros(off.shape, dtype)
        out[m] = old
        return out


def _lanes_by_rank(offsets: np.ndarray):
    """Yield lane-index groups: first every address's first lane, then its second, ... so that
    applying groups in turn applies lanes of one address in lane order."""
    if offsets.size == 0:
        return
    order = np.argsort(offsets, kind="stable")
    so = offsets[order]
    starts = np.r_[True, so[1:] != so[:-1]]
    seg_start = np.maximum.accumulate(np.where(starts, np.arange(so.size), 0))
    rank = np.arange(so.size) - seg_start
    for r in range(int(rank.max()) + 1):
        yield order[rank == r]


def _sequential_rmw(data: np.ndarray, kind: str, off: np.ndarray, val: np.ndarray) -> np.ndarray:
    """Apply ``kind`` for every lane in lane order; return each lane's old value. Lanes sharing an
    address are combined with a segmented prefix scan (log steps), so heavy repetition is cheap."""
    if off.size == 0:
        return np.zeros(0, data.dtype)
    order = np.argsort(off, kind="stable")
    so, sv = off[order], val[order]
    k = so.size
    pos = np.arange(k)
    starts = np.r_[True, so[1:] != so[:-1]]
    seg_start = np.maximum.accumulate(np.where(starts, pos, 0))
    ends = np.r_[so[1:] != so[:-1], True]
    first = np.flatnonzero(starts)
    mem0 = data[so[first]]
    seg_of = np.cumsum(starts) - 1
    base = mem0[seg_of]
    old = np.empty_like(sv)
    old[starts] = base[starts]
    if kind == "xchg":
        old[~starts] = sv[np.flatnonzero(~starts) - 1]
        data[so[ends]] = sv[ends]
    else:
        fn = (_BOOL_AT if data.dtype == np.bool_ else _AT)[kind]
        y = sv.copy()
        d = 1
        while True:
            can = (pos - d) >= seg_start
            if not can.any():
                break
            idx = np.flatnonzero(can)
            y2 = y.copy()
            y2[idx] = fn(y[idx - d], y[idx])
            y = y2
            d *= 2
        rest = np.flatnonzero(~starts)
        old[rest] = fn(base[rest], y[rest - 1])
        data[so[ends]] = fn(base[ends], y[ends])
    out = np.empty_like(old)
    out[order] = old
    return out


def _where(op) -> str:
    """`` (at file:line: <the source line>)`` for an op that carries its kernel-source location
    (kept through the printed tile IR as ``loc(...)``), else empty."""
    loc = getattr(op, "loc", None) if op is not None else None
    if isinstance(loc, tuple) and len(loc) >= 2:
        filename, line = loc[0], loc[1]
    elif loc is not None and hasattr(loc, "lineno"):
        filename, line = getattr(loc, "filename", "?"), loc.lineno
    else:
        return ""
    text = linecache.getline(filename, line).strip() if isinstance(line, int) else ""
    return f" (at {filename}:{line}: {text})" if text else f" (at {filename}:{line})"
