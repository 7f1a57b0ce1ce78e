"""An executable model of the TMA ring's mbarrier protocol, run on a compiled kernel's GPU IR.

Why: a TMA ring whose mbarrier protocol is wrong does not fail, it hangs the GPU (tutorial 06's
causal forward never finished on the H200 with the multi-dot TMA ring, issue 9), and there is
no GPU in CI. This model interprets the ``nvidia.tma_*`` ops exactly as the passes emitted them,
with the scalar control flow (program ids, loop bounds, the carried ``slot`` and ``phase``)
evaluated for concrete launch values -- the real iteration counts of every program -- and
raises :class:`ProtocolError` naming the op at the first step that would hang or race.

One CTA is modelled as one sequential stream (the ring's control flow is uniform: every thread
runs the same loops; thread 0 alone issues ``expect`` and copies). The copies complete
*lazily*: a phase completes only when a wait needs it, which is the adversarial order for
stale reads. The rules, after the PTX ISA's mbarrier semantics (arrival count 1):

* ``tma_init`` makes ``slots`` mbarriers live in phase 0; ``tma_release`` invalidates them
  (any later use before a new init is undefined: reported);
* ``tma_expect`` arms the current phase with the byte count; arming a phase that no wait has
  consumed yet is a second arrival on a one-arrival barrier (or a refill of a slot not read);
* ``tma_copy`` adds the bytes its boxes deliver: each box is the *tensor map's* box
  (``box_dims`` x element bytes, from the map the launch builds), one per swizzle panel;
* ``tma_wait(slot, p)`` passes at once when the barrier's current phase parity differs from
  ``p`` -- reported as a stale pass if a copy of the current phase is in flight -- and
  otherwise blocks until the armed phase completes: never, if nothing is armed (deadlock) or
  the copies deliver other than the expected bytes (the tx-count never reaches zero).
* the kernel must not end (or release) with a copy in flight; no copy or TMA store writes
  shared memory over a live mbarrier.

And the slots' data races, with the wgmmas that read them (``nvidia.wgmma_ring``: its B tile
at ``b_offset`` of the slot, or the whole slot in the single-dot ring):

* a wgmma may read a slot's bytes only once the phase of the copy that wrote them completed
  and was waited on (read after write);
* a copy may overwrite bytes an earlier wgmma read only once that wgmma's group retired
  (``wgmma.wait_group``: an in-flight ``nvidia.wgmma_ring`` retires at a later
  ``nvidia.wgmma_wait``) *and* a CTA ``barrier`` followed -- thread 0 copies, every warpgroup
  reads (write after read).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from naiad_nvidia.ir.tma_op import MBARRIER_BYTES
from naiad_nvidia.ir.wgmma_op import WGMMA_RING_OP as WGMMA_RING, WGMMA_WAIT_OP as WGMMA_WAIT
from naiad_nvidia.ir.wgmma_smem import KIND_BYTES

TMA = "nvidia.tma_"


class ProtocolError(AssertionError):
    """A step of the ring that would hang or read stale data on the GPU."""


class ModelError(Exception):
    """The model cannot evaluate the kernel (a value it needs is unknown)."""


@dataclass(frozen=True)
class MapInfo:
    """What a copy needs of a tensor map: its box (innermost first) and element bytes."""

    box_dims: tuple
    elem_bytes: int

    @property
    def box_bytes(self) -> int:
        return math.prod(self.box_dims) * self.elem_bytes


@dataclass
class Barrier:
    address: int
    live: bool = True
    completed: int = 0          # phases completed so far (the current phase's index)
    armed: bool = False         # the current phase has its arrival; bytes outstanding
    expected: int = 0
    landed: int = 0


@dataclass
class Trace:
    """What the run did, for assertions: inits, copies, waits and phases completed."""

    inits: int = 0
    copies: int = 0
    waits: int = 0
    phases: int = 0


def _where(op) -> str:
    loc = op.loc
    where = f" at {loc[0]}:{loc[1]}" if isinstance(loc, tuple) and len(loc) >= 2 else ""
    return f"{op.name}{where} {dict((k, v) for k, v in op.attrs.items() if k != 'scratch')}"


def _int_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: _int_div(a, b) if isinstance(a, int) else a / b,
    "rem": lambda a, b: a - _int_div(a, b) * b,
    "xor": lambda a, b: a ^ b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "min": min, "max": max, "minimum": min, "maximum": max,
}
_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


class RingModel:
    """Runs one program (``pid``) of ``function`` with ``args`` (name -> int, float or
    :class:`MapInfo`; unknown arguments stay unknown)."""

    def __init__(self, function, args: dict, pid=(0, 0, 0), num_programs=(1, 1, 1),
                 shared_bytes: int | None = None):
        self.fn = function
        #: the kernel's shared memory (bytes): no mbarrier or copy may lie past it
        self.shared_bytes = shared_bytes
        self.resident = resident_regions(function)
        self.pid, self.nprog = tuple(pid), tuple(num_programs)
        self.env: dict = {}
        for a in function.args:
            self.env[a] = args.get(a.name_hint)
        self.barriers: dict[int, Barrier] = {}
        #: slot bytes written by a copy not yet waited on: (start, end, mbarrier address)
        self.unlanded: list[tuple[int, int, int]] = []
        #: wgmma groups reading slot bytes, oldest first: [start, end, retired]; dropped at
        #: the first CTA barrier after they retired
        self.readers: list[list] = []
        self.trace = Trace()
        self._relevant: dict = {}

    # -- driving ---------------------------------------------------------------------------
    def run(self) -> Trace:
        self._block(self.fn.body.block)
        for bar in self.barriers.values():
            if bar.live and bar.armed:
                raise ProtocolError(f"the kernel ends with a TMA copy in flight on the mbarrier "
                                    f"at byte {bar.address} (its phase {bar.completed} was "
                                    "never waited on)")
        return self.trace

    def _relevant_ops(self, block):
        """The ops of ``block`` the model executes: control flow, TMA ops and scalar ops (tensor
        arithmetic is skipped: the protocol never depends on it)."""
        found = self._relevant.get(id(block))
        if found is None:
            found = [op for op in block.ops if op.regions or op.name.startswith(TMA)
                     or op.name in ("nvidia.tensormap_make", "yield", "barrier", WGMMA_RING,
                                    WGMMA_WAIT)
                     or (op.results and not any(r.type.is_tensor for r in op.results))]
            self._relevant[id(block)] = found
        return found

    def _block(self, block):
        """Execute ``block``; returns its terminator's operand values."""
        for op in self._relevant_ops(block):
            if op.name == "yield":
                return [self.env.get(v) for v in op.operands]
            self._op(op)
        return []

    def _get(self, v, op, what="value"):
        x = self.env.get(v)
        if x is None:
            raise ModelError(f"{_where(op)}: its {what} ({v.name_hint or v}) is unknown to the "
                             "model; pass the argument it depends on")
        return x

    def _op(self, op):
        name = op.name
        if name.startswith(TMA):
            getattr(self, "_" + name[len(TMA):])(op)
        elif name == "for":
            self._for(op)
        elif name == "if":
            self._if(op)
        elif op.regions:
            if any(o.name.startswith(TMA) for r in op.regions for o in r.block.ops):
                raise ModelError(f"{_where(op)}: the model runs no {name} holding TMA ops")
        elif name == WGMMA_RING:
            self._wgmma(op)
        elif name == WGMMA_WAIT:
            self._retire(int(op.attrs["pending"]))
        elif name == "barrier":
            self.readers = [r for r in self.readers if not r[2]]
        elif name == "nvidia.tensormap_make":
            self.env[op.results[0]] = MapInfo(tuple(op.attrs["box_dims"]),
                                              int(op.attrs["elem_bytes"]))
        else:
            self._scalar(op)

    def _scalar(self, op):
        name, vals = op.name, [self.env.get(v) for v in op.operands]
        out = None
        if name == "constant":
            out = op.attrs["value"]
        elif name == "program_id":
            out = self.pid[int(op.attrs["axis"])]
        elif name == "num_programs":
            out = self.nprog[int(op.attrs["axis"])]
        elif None in vals:
            out = None
        elif name in _BINARY and len(vals) == 2:
            out = _BINARY[name](*vals)
        elif name == "cmp":
            out = _CMP[op.attrs["pred"]](*vals)
        elif name == "select":
            out = vals[1] if vals[0] else vals[2]
        elif name in ("hint", "cast", "bitcast") and len(vals) == 1:
            out = vals[0]
            if name == "cast" and isinstance(out, (int, float)) and not isinstance(out, MapInfo):
                t = op.results[0].type
                out = float(out) if getattr(t, "is_float", False) else int(out)
        for r in op.results:
            self.env[r] = out

    def _for(self, op):
        lb, ub, step = (self._get(v, op, "loop bound") for v in op.operands[:3])
        carried = [self.env.get(v) for v in op.operands[3:]]
        body = op.regions[0].block
        iv = lb
        while iv < ub:
            self.env[body.args[0]] = iv
            for a, x in zip(body.args[1:], carried):
                self.env[a] = x
            carried = self._block(body)
            iv += step
        for r, x in zip(op.results, carried):
            self.env[r] = x

    def _if(self, op):
        cond = self._get(op.operands[0], op, "condition")
        region = op.regions[0] if cond else (op.regions[1] if len(op.regions) > 1 else None)
        outs = self._block(region.block) if region is not None else []
        for r, x in zip(op.results, outs or [None] * len(op.results)):
            self.env[r] = x

    # -- the mbarrier protocol -------------------------------------------------------------
    def _address(self, op, slot) -> int:
        return (int(op.attrs["bar_offset"]) + int(op.attrs.get("ring_base", 0))
                + slot * MBARRIER_BYTES)

    def _barrier(self, op, slot) -> Barrier:
        addr = self._address(op, slot)
        bar = self.barriers.get(addr)
        if bar is None or not bar.live:
            state = "invalidated by an earlier nvidia.tma_release" if bar else "never initialised"
            raise ProtocolError(f"{_where(op)} (slot {slot}) uses the mbarrier at byte {addr}, "
                                f"{state}: undefined on the GPU (a hang)")
        return bar

    def _check_bytes(self, op, start: int, end: int, what: str) -> None:
        """``what`` at shared bytes ``start..end`` lies in the kernel's shared memory and off
        every resident buffer (the loop-invariant wgmma A tiles, deferred stores' buffers)."""
        if self.shared_bytes is not None and end > self.shared_bytes:
            raise ProtocolError(f"{_where(op)}: {what} at bytes {start}..{end} lies past the "
                                f"kernel's {self.shared_bytes} bytes of shared memory")
        for name, lo, hi in self.resident:
            if start < hi and lo < end:
                raise ProtocolError(f"{_where(op)}: {what} at bytes {start}..{end} overlaps "
                                    f"{name}'s resident buffer at {lo}..{hi}")

    def _init(self, op):
        if op.attrs.get("resident_ring") is not None and "ring_base" not in op.attrs:
            raise ModelError(f"{_where(op)}: a resident ring not yet allocated")
        for s in range(int(op.attrs["slots"])):
            addr = self._address(op, s)
            if addr % MBARRIER_BYTES:
                raise ProtocolError(f"{_where(op)}: the mbarrier at byte {addr} is not 8-byte "
                                    "aligned")
            self._check_bytes(op, addr, addr + MBARRIER_BYTES, "an mbarrier")
            old = self.barriers.get(addr)
            if old is not None and old.live and old.armed:
                raise ProtocolError(f"{_where(op)} re-initialises the mbarrier at byte {addr} "
                                    "while a copy is in flight on it")
            self.barriers[addr] = Barrier(addr)
        self.trace.inits += 1

    def _release(self, op):
        for s in range(int(op.attrs["slots"])):
            bar = self._barrier(op, s)
            if bar.armed:
                raise ProtocolError(f"{_where(op)} invalidates the mbarrier at byte "
                                    f"{bar.address} with a copy in flight")
            bar.live = False

    def _expect(self, op):
        valid, slot = (self._get(v, op) for v in op.operands)
        if not valid:
            return
        bar = self._barrier(op, slot)
        if bar.armed:
            raise ProtocolError(f"{_where(op)} arms slot {slot}'s mbarrier (byte {bar.address}) "
                                f"again before its phase {bar.completed} was waited on: a second "
                                "arrival on a one-arrival barrier, and a refill of a slot not read")
        bar.armed, bar.expected, bar.landed = True, int(op.attrs["bytes"]), 0

    def _copy(self, op):
        valid, slot = (self._get(v, op) for v in op.operands[:2])
        if not valid:
            return
        tmap = self._get(op.operands[2], op, "tensor map")
        if not isinstance(tmap, MapInfo):
            raise ModelError(f"{_where(op)}: its map operand is not a modelled tensor map")
        bar = self._barrier(op, slot)
        if not bar.armed:
            raise ProtocolError(f"{_where(op)} completes bytes on slot {slot}'s mbarrier (byte "
                                f"{bar.address}) with no expect in its phase")
        rows, cols, elem = (int(op.attrs[k]) for k in ("rows", "cols", "elem_bytes"))
        panel = min(cols, 128 // elem)
        boxes = cols // panel
        # the ring's slot bytes this copy writes must not cover a live mbarrier
        start = slot * int(op.attrs["stage_bytes"]) + int(op.attrs["offset"]) \
            + int(op.attrs.get("ring_base", 0))
        end = start + boxes * tmap.box_bytes
        if tmap.box_dims[0] * elem == 128 and start % 1024:
            raise ProtocolError(f"{_where(op)}: a 128-byte-swizzled box lands at byte {start}, "
                                "not 1024-byte aligned")
        self._check_bytes(op, start, end, f"slot {slot}'s tile")
        for addr, other in self.barriers.items():
            if other.live and start <= addr < end:
                raise ProtocolError(f"{_where(op)} writes bytes {start}..{end} of shared memory, "
                                    f"over the live mbarrier at byte {addr}")
        for lo, hi, retired in self.readers:
            if start < hi and lo < end:
                state = ("retired, but no CTA barrier since" if retired else "still in flight")
                raise ProtocolError(f"{_where(op)} overwrites bytes {start}..{end} (slot {slot}) "
                                    f"that a wgmma reads at {lo}..{hi}, {state}")
        bar.landed += boxes * tmap.box_bytes
        self.unlanded.append((start, end, bar.address))
        self.trace.copies += 1

    def _store(self, op):
        """A TMA store stages its block in shared memory: not over a live mbarrier."""
        base = int(op.attrs.get("smem_offset", 0))
        size = int(op.attrs.get("scratch_bytes") or op.attrs.get("resident_bytes") or 0)
        for addr, bar in self.barriers.items():
            if bar.live and base <= addr < base + size:
                raise ProtocolError(f"{_where(op)} stages bytes {base}..{base + size} over the "
                                    f"live mbarrier at byte {addr}")

    def _store_drain(self, op):
        pass

    def _wait(self, op):
        slot, parity = (self._get(v, op) for v in op.operands)
        bar = self._barrier(op, slot)
        self.trace.waits += 1
        if bar.completed % 2 != parity % 2:
            if bar.armed:
                raise ProtocolError(f"{_where(op)} (slot {slot}, parity {parity}) passes on the "
                                    f"completed phase {bar.completed - 1} while this phase's "
                                    "copy is still in flight: the dot reads stale data")
            return
        if not bar.armed:
            raise ProtocolError(f"{_where(op)} (slot {slot}, parity {parity}) waits for phase "
                                f"{bar.completed} of the mbarrier at byte {bar.address}, which "
                                "no copy will complete: the kernel hangs")
        if bar.landed != bar.expected:
            raise ProtocolError(f"{_where(op)} (slot {slot}): the phase expects {bar.expected} "
                                f"bytes but the copies deliver {bar.landed} (the tensor map's "
                                "box differs from the block): the tx-count never reaches zero")
        bar.armed = False
        bar.completed += 1
        self.unlanded = [u for u in self.unlanded if u[2] != bar.address]
        self.trace.phases += 1

    # -- the wgmmas reading the slots ------------------------------------------------------
    def _wgmma(self, op):
        slot = self._get(op.operands[1], op, "slot")
        stage = int(op.attrs["stage_bytes"])
        base = slot * stage + int(op.attrs.get("ring_base", 0))
        if len(op.operands) > 2:   # the multi-dot ring: B alone, at b_offset
            n = op.results[0].type.shape[1]
            start = base + int(op.attrs.get("b_offset", 0))
            end = start + int(op.attrs["k"]) * n * KIND_BYTES[op.attrs["kind"]]
        else:                      # the single-dot ring: A and B fill the slot
            start, end = base, base + stage
        for lo, hi, addr in self.unlanded:
            if start < hi and lo < end:
                raise ProtocolError(f"{_where(op)} reads bytes {start}..{end} (slot {slot}) "
                                    f"before the copy into {lo}..{hi} completed (its mbarrier at "
                                    f"byte {addr} not waited on): stale data")
        self.readers.append([start, end, False])
        if not op.attrs.get("in_flight"):
            self._retire(int(op.attrs.get("pending", 0)))

    def _retire(self, pending: int):
        """``wgmma.wait_group pending``: all but the newest ``pending`` groups are done."""
        live = [r for r in self.readers if not r[2]]
        for r in live[:max(0, len(live) - pending)]:
            r[2] = True


def resident_regions(function) -> list[tuple[str, int, int]]:
    """``(op, start, end)`` of the resident shared buffers placed in ``function``: the wgmma A
    tiles kept for a whole loop (``nvidia.wgmma_resident``'s ``smem_offset``)."""
    out = []
    for op in function.walk():
        if op.name == "nvidia.wgmma_resident" and "smem_offset" in op.attrs:
            t = op.results[0].type
            start = int(op.attrs["smem_offset"])
            out.append((op.name, start, start + math.prod(t.shape) * t.element.itemsize))
    return out


def run_programs(function, args: dict, grid, programs=None,
                 shared_bytes: int | None = None) -> Trace:
    """Run the model for each program id in ``programs`` (default: every ``(x, 0, 0)`` of
    ``grid``'s first axis -- the ring's trip counts depend on it in attention); returns the
    summed trace."""
    total = Trace()
    grid = tuple(grid) + (1,) * (3 - len(grid))
    for pid in programs if programs is not None else [(x, 0, 0) for x in range(grid[0])]:
        t = RingModel(function, args, pid, grid, shared_bytes).run()
        for k in ("inits", "copies", "waits", "phases"):
            setattr(total, k, getattr(total, k) + getattr(t, k))
    return total


def kernel_function(kernel):
    """The kernel's function in its GPU IR (``kernel.asm['gpu']`` parsed back; the layouts
    are registered once any NVIDIA kernel has compiled in this process)."""
    from naiad.ir.parser import parse_module

    module = parse_module(kernel.asm["gpu"])
    return next(iter(module.functions.values()))
