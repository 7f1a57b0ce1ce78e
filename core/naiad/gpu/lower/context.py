"""The state of lowering one kernel: LLVM builder, the registers of every IR value, thread
indices, and helpers every op family uses.

A tensor value becomes a Python list with one LLVM value per register of its layout (register
``r`` holds the element at ``layout(r, lane, warp)``); a scalar becomes a one-element list.
Per-thread setup (thread/lane/warp ids, the thread's part of each layout's coordinates, owner
predicates, program ids) is emitted once in the entry block, which dominates everything.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from ...errors import IRError
from ...ir.core import Block, Function, Operation, Value
from ...ir.printer import print_op
from ...ir.types import TensorType
from ..layouts import linear_of
from ..linear_layout import LinearLayout
from .types import i32, llvm_type, memory_type

#: registers per thread one tensor may take before the kernel is rejected as too large
MAX_REGISTERS = 1 << 14

#: op name -> lowering function(kl, op); filled by the op-family modules. Ops not found here
#: are asked of the backend: ``TargetInfo.op_lowering(name)`` (see naiad.plugins.contract).
LOWERINGS: dict[str, Callable[["KernelLowering", Operation], None]] = {}


def lowers(*names: str):
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


class KernelLowering:
    def __init__(self, fn: Function, module: ir.Module, target_info, num_warps: int,
                 shared_bytes: int):
        self.fn = fn
        self.module = module
        self.ti = target_info
        self.num_warps = num_warps
        self.warp_size = int(target_info.warp_size)
        self.global_as = int(getattr(target_info, "global_address_space", 1))
        self.shared_as = int(getattr(target_info, "shared_address_space", 3))
        self.shared_bytes = shared_bytes
        self.values: dict[Value, list] = {}
        self.llfn: ir.Function | None = None
        self.b: ir.IRBuilder | None = None
        self.entry: ir.IRBuilder | None = None
        self._thread_coords: dict[LinearLayout, list] = {}
        self._owner: dict[LinearLayout, object] = {}
        self._cache: dict = {}
        self._smem = None
        self.current_op: Operation | None = None

    # -- types --------------------------------------------------------------------------------
    def ltype(self, t) -> ir.Type:
        return llvm_type(t.scalar if isinstance(t, TensorType) else t, self.global_as)

    def mtype(self, t) -> ir.Type:
        return memory_type(t.scalar if isinstance(t, TensorType) else t, self.global_as)

    # -- values -------------------------------------------------------------------------------
    def get(self, v: Value) -> list:
        try:
            return self.values[v]
        except KeyError:
            raise self.error(f"internal: value {v} has not been lowered") from None

    def set(self, v: Value, regs: list) -> None:
        want = self.num_regs(v)
        if len(regs) != want:
            raise self.error(f"internal: {len(regs)} registers for a value that has {want}")
        self.values[v] = list(regs)

    def linear(self, v_or_type) -> LinearLayout:
        t = v_or_type.type if isinstance(v_or_type, Value) else v_or_type
        if not isinstance(t, TensorType):
            raise self.error(f"internal: {t} is not a tensor")
        if t.layout is None:
            raise self.error(f"tensor {t} has no layout: run the layout passes first")
        ll = linear_of(t.layout, t.shape)
        if ll.in_size("lane") != self.warp_size:
            raise self.error(f"layout {t.layout} has {ll.in_size('lane')} lanes per warp but the "
                             f"target's warps have {self.warp_size}")
        if ll.in_size("warp") != self.num_warps:
            raise self.error(f"layout {t.layout} has {ll.in_size('warp')} warps but the kernel "
                             f"runs {self.num_warps}")
        if ll.in_size("register") > MAX_REGISTERS:
            raise self.error(f"{t} needs {ll.in_size('register')} registers per thread with "
                             f"{self.num_warps} warps of {self.warp_size} (at most "
                             f"{MAX_REGISTERS}): use smaller blocks or more warps")
        return ll

    def num_regs(self, v: Value) -> int:
        if isinstance(v.type, TensorType):
            return self.linear(v).in_size("register")
        return 1

    def error(self, message: str) -> IRError:
        where = f" in\n{print_op(self.current_op)}" if self.current_op is not None else ""
        return IRError(f"@{self.fn.name}: {message}{where}")

    # -- thread indices (entry block) -----------------------------------------------------------
    def cached(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def tid(self):
        return self.cached("tid", lambda: self.ti.thread_id(self.entry, 0))

    @property
    def lane(self):
        return self.cached("lane", lambda: self.ti.lane_id(self.entry))

    @property
    def warp(self):
        return self.cached("warp", lambda: self.entry.udiv(self.tid, i32(self.warp_size)))

    def thread_flat(self, ll: LinearLayout):
        """i32: this thread's part of the row-major element index (XOR of lane/warp bases)."""
        key = ("flat", ll)
        if key in self._cache:
            return self._cache[key]
        e = self.entry
        acc = None
        for dim in ("lane", "warp"):
            for bit, vec in enumerate(ll.flat_bases(dim)):
                if vec == 0:
                    continue
                part = self._thread_bit_part(dim, bit, vec)
                acc = part if acc is None else e.xor(acc, part)
        acc = i32(0) if acc is None else acc
        self._cache[key] = acc
        return acc

    def _thread_bit_part(self, dim: str, bit: int, vec: int):
        """``((idx >> bit) & 1) * vec`` for the lane or warp index ``idx``, built once per
        kernel: the layouts of one kernel share most of these terms (tutorial 03's eight
        layouts rebuilt the same bit extracts ~60 times; LLVM merges the copies, but each was
        built, printed, parsed and optimised first)."""
        def sel():
            idx = self.lane if dim == "lane" else self.warp
            e = self.entry
            return e.and_(e.lshr(idx, i32(bit)) if bit else idx, i32(1))

        s = self.cached(("thread bit", dim, bit), sel)
        if vec == 1:
            return s
        return self.cached(("thread bit part", dim, bit, vec), lambda: self.entry.mul(s, i32(vec)))

    def thread_coords(self, ll: LinearLayout) -> list:
        """i32 per tensor dim: this thread's part of the coordinates of its elements."""
        if ll in self._thread_coords:
            return self._thread_coords[ll]
        e = self.entry
        flat = self.thread_flat(ll)
        out, shift = [], 0
        bits = [s.bit_length() - 1 for s in ll.out_shape]
        for d in reversed(range(ll.rank)):
            part = e.lshr(flat, i32(shift)) if shift else flat
            out.append(e.and_(part, i32((1 << bits[d]) - 1)))
            shift += bits[d]
        coords = list(reversed(out))
        self._thread_coords[ll] = coords
        return coords

    def reg_coords(self, ll: LinearLayout, r: int) -> tuple[int, ...]:
        return ll.unflatten(ll.flat_values("register")[r])

    def owner_pred(self, ll: LinearLayout):
        """i1 true in the one thread that owns each of its elements; None when every thread
        owns its elements (no broadcast across lanes or warps)."""
        if ll in self._owner:
            return self._owner[ll]
        masks = ll.free_masks(("register", "lane", "warp"))
        pred = None
        e = self.entry
        for dim, idx in (("lane", self.lane), ("warp", self.warp)):
            m = masks.get(dim, 0)
            if m:
                ok = e.icmp_unsigned("==", e.and_(idx, i32(m)), i32(0))
                pred = ok if pred is None else e.and_(pred, ok)
        self._owner[ll] = pred
        return pred

    def owner_registers(self, ll: LinearLayout) -> list[int]:
        free = ll.free_masks(("register", "lane", "warp")).get("register", 0)
        return [r for r in range(ll.in_size("register")) if not r & free]

    def first_thread_pred(self):
        return self.cached("tid0", lambda: self.entry.icmp_unsigned("==", self.tid, i32(0)))

    # -- shared memory ----------------------------------------------------------------------------
    @property
    def smem(self):
        if self._smem is None:
            g = ir.GlobalVariable(self.module, ir.ArrayType(ir.IntType(8), 0), "global_smem",
                                  addrspace=self.shared_as)
            g.linkage = "external"
            g.align = 16
            # llvmlite types globals with typed pointers; the module uses opaque ones
            g.type = ir.PointerType(addrspace=self.shared_as)
            self._smem = g
        return self._smem

    def smem_ptr(self, byte_offset):
        """Pointer into the scratch buffer at ``byte_offset`` (an i32 value or int)."""
        if isinstance(byte_offset, int):
            byte_offset = i32(byte_offset)
        return self.b.gep(self.smem, [byte_offset], source_etype=ir.IntType(8))

    # -- control flow helpers -----------------------------------------------------------------
    def new_block(self, name: str) -> ir.Block:
        return self.llfn.append_basic_block(name)

    def if_then(self, pred, emit_then: Callable[[], list], results_else: list) -> list:
        """Run ``emit_then`` only where ``pred`` holds; returns phis of its results (or of
        ``results_else`` where it did not run)."""
        b = self.b
        before = b.block
        then_bb, cont_bb = self.new_block("then"), self.new_block("cont")
        b.cbranch(pred, then_bb, cont_bb)
        b.position_at_end(then_bb)
        vals = emit_then()
        then_end = b.block
        b.branch(cont_bb)
        b.position_at_end(cont_bb)
        out = []
        for v, other in zip(vals, results_else):
            phi = b.phi(v.type)
            phi.add_incoming(v, then_end)
            phi.add_incoming(other, before)
            out.append(phi)
        return out

    # -- lowering driver ------------------------------------------------------------------------
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            if op.name in ("yield", "condition", "return"):
                continue
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        fn = LOWERINGS.get(op.name)
        if fn is None:
            # a backend's own op (e.g. a matrix instruction its lowering pass introduced)
            ask = getattr(self.ti, "op_lowering", None)
            fn = ask(op.name) if ask is not None else None
        if fn is None:
            raise IRError(f"@{self.fn.name}: the GPU lowering has no rule for op "
                          f"'{op.name}':\n{print_op(op)}")
        saved = self.current_op
        self.current_op = op
        try:
            fn(self, op)
        finally:
            self.current_op = saved

    def inline_region(self, block: Block, args: list) -> list:
        """Lower a scalar region (a combine function) with its block args bound to ``args``;
        returns the LLVM values it yields."""
        for a, v in zip(block.args, args):
            self.values[a] = [v]
        self.lower_block(block)
        return [self.get(v)[0] for v in block.terminator.operands]
