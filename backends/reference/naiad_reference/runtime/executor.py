"""``execute(module, kernel_name, grid, args)``: run a kernel's tile IR over a grid with numpy.

How a launch runs (decided per kernel by :mod:`naiad_reference.runtime.analysis`, per launch by the
arguments):

1. **Lockstep over the grid** (the default). Every value gets a leading program axis and the whole
   grid (or batches of it, sized so no value exceeds ``BATCH_ELEMENTS`` elements) executes op by op:
   ``program_id`` is an ``arange`` over the batch, a vector add over 1024 programs is a handful of
   numpy calls. Control flow that differs between programs (an ``if`` on a per-program scalar, a
   ``for`` with per-program bounds, ``while``) runs under a per-program active mask, and every
   load/store/atomic honours that mask. Programs interact only through memory; lockstep gives
   exactly the result of running them one after another in program order whenever no program
   reads what another one wrote (the only data race free pattern without order-dependent atomics).
   Atomics whose old values are unused (``atomic_add`` histograms...) are order-independent and
   apply every lane of every program.
2. **Checked lockstep** when the kernel loads, after a store, from a buffer the store may write
   (read-after-write in program order or across loop iterations). The written buffers are
   snapshotted, every store records which program wrote each element, and a load of an element
   written by another program aborts: the snapshot is restored and the launch re-runs as in 3.
   When such a read-after-write goes through two arguments that share memory (numpy views of one
   array), the launch runs as in 3 directly.
3. **One program at a time**, in program order (axis 0 fastest), when the result depends on that
   order: ``atomic_cas``, ``atomic_xchg``, atomics whose old value is used, volatile loads,
   ``atomic_poll``. Also forced by ``mode="sequential"`` (or ``NAIAD_REFERENCE_MODE=sequential``)
   for testing. A program whose ``atomic_poll`` waits for a value not written yet is undone and
   run again after the programs behind it (a spin on a later program's write ends as on a GPU);
   when every waiting program stays blocked, the poll could never end: an error names it.

Racy kernels (a program reads, before writing, what another program writes) have no single right
answer on a GPU; the reference gives the lockstep one.
"""
from __future__ import annotations

import collections

import os
from dataclasses import dataclass

import numpy as np

from naiad.errors import NaiadError

from .analysis import ANY, KernelAnalysis, analyze
from .interpreter import BatchContext, Interpreter
from .memory import Buffer, CrossProgramHazard, Memory, PollBlocked, ReferenceArgumentError
from .values import Ptr

#: upper bound on the elements of one value across a lockstep batch (memory per value)
BATCH_ELEMENTS = 1 << 22

MODES = ("auto", "grid", "sequential")


@dataclass
class RunInfo:
    """How a launch was executed (returned by :func:`execute`, for tests and curious users)."""

    mode: str          # "grid", "grid-checked" or "sequential"
    reason: str        # why (empty for plain lockstep)
    batches: int       # interpreter batches run (programs when sequential)


class PreparedKernel:
    """A kernel ready to launch: its function, analysis and program-independent constants."""

    def __init__(self, module, kernel_name: str):
        fn = module.functions.get(kernel_name)
        if fn is None:
            raise NaiadError(f"module has no function @{kernel_name} (it has: "
                             f"{', '.join(module.functions) or 'none'})")
        self.module = module
        self.fn = fn
        self.name = kernel_name
        self.analysis: KernelAnalysis = analyze(fn)
        self.cache: dict = {}
        self.arg_names = [a.name_hint or f"arg{i}" for i, a in enumerate(fn.args)]

    def __call__(self, grid, args, mode: str = "auto") -> RunInfo:
        return run(self, grid, args, mode)


def execute(module, kernel_name: str, grid, args, *, mode: str | None = None) -> RunInfo:
    """Run ``module``'s kernel ``kernel_name`` on ``grid`` (1-3 ints) with ``args`` (numpy arrays
    for pointers, Python/numpy scalars otherwise; arrays are written in place).

    ``mode``: ``"auto"`` (default, see the module docstring), ``"grid"`` (lockstep, no hazard
    checks) or ``"sequential"`` (one program at a time). The module is analysed on every call;
    launchers keep a :class:`PreparedKernel` instead."""
    return run(PreparedKernel(module, kernel_name), grid, args, mode)


def normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        g = tuple(int(x) for x in grid)
    except TypeError:
        raise NaiadError(f"grid must be a tuple of 1 to 3 ints, got {grid!r}") from None
    if not 1 <= len(g) <= 3 or any(x < 0 for x in g):
        raise NaiadError(f"grid must be a tuple of 1 to 3 non-negative ints, got {grid!r}")
    return g + (1,) * (3 - len(g))


def _scalar_arg(value, t, name: str):
    elem = t.scalar
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.ndarray):
        raise ReferenceArgumentError(f"argument {name!r} is a scalar ({elem}); got an array")
    if elem.is_bool:
        if not isinstance(value, (bool, np.bool_, int, np.integer)):
            raise ReferenceArgumentError(f"argument {name!r} is i1; got {type(value).__name__}")
        return np.array([bool(value)])
    if elem.is_int:
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise ReferenceArgumentError(f"argument {name!r} is {elem}; got the float {value}")
        if not isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating)):
            raise ReferenceArgumentError(f"argument {name!r} is {elem}; got "
                                         f"{type(value).__name__}")
        v = int(value)
        bits = elem.bitwidth
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if elem.is_signed \
            else (0, (1 << bits) - 1)
        if not lo <= v <= hi:
            raise ReferenceArgumentError(f"argument {name!r} = {v} does not fit {elem} "
                                         f"[{lo}, {hi}]")
        return np.array([v], dtype=elem.numpy_dtype)
    if not isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating)):
        raise ReferenceArgumentError(f"argument {name!r} is {elem}; got {type(value).__name__}")
    return np.array([float(value)], dtype=np.float64).astype(elem.numpy_dtype)


def bind_arguments(pk: PreparedKernel, args):
    """Turn launch arguments into the kernel's argument values and its memory."""
    fn = pk.fn
    args = list(args)
    if len(args) != len(fn.args):
        raise ReferenceArgumentError(
            f"kernel {pk.name!r} takes {len(fn.args)} arguments "
            f"({', '.join(pk.arg_names)}), got {len(args)}")
    values, buffers = [], {}
    for i, (a, value) in enumerate(zip(fn.args, args)):
        name = pk.arg_names[i]
        if a.type.scalar.is_pointer:
            if a.type.is_tensor:
                raise ReferenceArgumentError(f"argument {name!r}: tensor-of-pointer arguments "
                                             "are not supported")
            buffers[i] = Buffer(i, name, value)
            values.append(Ptr(i, np.zeros(1, dtype=np.int64), zero=True))
        else:
            values.append(_scalar_arg(value, a.type, name))
    return values, Memory(pk.name, buffers)


def _alias_classes(buffers: dict) -> dict[int, int]:
    """Map each pointer argument to a representative of the arguments sharing its memory."""
    rep = {i: i for i in buffers}
    items = list(buffers.items())
    for x in range(len(items)):
        for y in range(x + 1, len(items)):
            i, bi = items[x]
            j, bj = items[y]
            if np.may_share_memory(bi.flat, bj.flat):
                ri, rj = rep[i], rep[j]
                for k, r in rep.items():
                    if r == rj:
                        rep[k] = ri
    return rep


def _hazard_bases(analysis: KernelAnalysis, buffers: dict):
    """Bases needing write tracking (read after written; empty when lockstep is exact), and
    whether two of them are distinct arguments sharing memory (then tracking by element offset
    is not possible and the launch runs one program at a time)."""
    if not analysis.raw_pairs:
        return set(), False
    rep = _alias_classes(buffers)
    classes = set(rep.values())
    tracked = set()
    for written, read in analysis.raw_pairs:
        wcls = classes if written is ANY else {rep[b] for b in written if b in rep}
        rcls = classes if read is ANY else {rep[b] for b in read if b in rep}
        common = wcls & rcls
        if common:
            tracked |= {b for b, r in rep.items() if r in common}
    aliased = len({rep[b] for b in tracked}) < len(tracked)
    return tracked, aliased


def run(pk: PreparedKernel, grid, args, mode: str | None = None) -> RunInfo:
    grid = normalize_grid(grid)
    mode = mode or os.environ.get("NAIAD_REFERENCE_MODE", "auto") or "auto"
    if mode not in MODES:
        raise NaiadError(f"reference executor mode must be one of {', '.join(MODES)}, "
                         f"got {mode!r}")
    values, memory = bind_arguments(pk, args)
    total = grid[0] * grid[1] * grid[2]
    if total == 0:
        return RunInfo("grid", "empty grid", 0)
    reasons = pk.analysis.sequential_reasons
    with np.errstate(all="ignore"):
        if mode == "sequential" or (mode == "auto" and reasons):
            why = "forced" if mode == "sequential" else "; ".join(reasons)
            _run_sequential(pk, grid, total, values, memory)
            return RunInfo("sequential", why, total)
        tracked, aliased = _hazard_bases(pk.analysis, memory.buffers) if mode == "auto" \
            else (set(), False)
        if not tracked:
            return RunInfo("grid", "", _run_lockstep(pk, grid, total, values, memory))
        if aliased:
            _run_sequential(pk, grid, total, values, memory)
            return RunInfo("sequential", "read-after-write through arguments sharing memory (" +
                           _names(pk, tracked) + ")", total)
        snapshot = {b: memory.buffers[b].flat.copy() for b in tracked}
        memory.owners = {b: None for b in tracked}
        try:
            n = _run_lockstep(pk, grid, total, values, memory)
            return RunInfo("grid-checked", "read-after-write on " + _names(pk, tracked), n)
        except CrossProgramHazard:
            for b, saved in snapshot.items():
                memory.buffers[b].flat[...] = saved
            memory.owners = None
            _run_sequential(pk, grid, total, values, memory)
            return RunInfo("sequential", "a program read memory another program wrote (" +
                           _names(pk, tracked) + ")", total)
        finally:
            memory.owners = None


def _names(pk, bases) -> str:
    return ", ".join(pk.arg_names[b] for b in sorted(bases))


def _batch_size(pk: PreparedKernel, total: int) -> int:
    return max(1, min(total, BATCH_ELEMENTS // max(pk.analysis.max_numel, 1)))


def _run_lockstep(pk, grid, total, values, memory) -> int:
    size = _batch_size(pk, total)
    batches = 0
    for start in range(0, total, size):
        index = np.arange(start, min(start + size, total), dtype=np.int64)
        ctx = BatchContext(grid, index)
        Interpreter(pk.module, memory, ctx, pk.cache).run_function(pk.fn, values)
        batches += 1
    return batches


def _run_sequential(pk, grid, total, values, memory) -> None:
    if pk.analysis.polls:
        _run_interleaving_polls(pk, grid, total, values, memory)
        return
    for i in range(total):
        _run_program(pk, grid, i, values, memory)


def _run_program(pk, grid, i, values, memory) -> None:
    ctx = BatchContext(grid, np.array([i], dtype=np.int64))
    Interpreter(pk.module, memory, ctx, pk.cache).run_function(pk.fn, values)


def _run_interleaving_polls(pk, grid, total, values, memory) -> None:
    """Programs in order, except that a program whose ``tl.atomic_poll`` waits for a value not
    written yet is undone (the writable argument buffers restored) and run again after the
    programs behind it -- the order a GPU's spinning program would see. A round in which every
    waiting program is still blocked would spin forever on a GPU: that is an error."""
    pending = collections.deque(range(total))
    blocked_in_a_row = 0
    while pending:
        i = pending.popleft()
        saved = {b: buf.flat.copy() for b, buf in memory.buffers.items() if buf.writeable}
        try:
            _run_program(pk, grid, i, values, memory)
            blocked_in_a_row = 0
        except PollBlocked:
            for b, flat in saved.items():
                memory.buffers[b].flat[...] = flat
            pending.append(i)
            blocked_in_a_row += 1
            if blocked_in_a_row > len(pending):
                raise
