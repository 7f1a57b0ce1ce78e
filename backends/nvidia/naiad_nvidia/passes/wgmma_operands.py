"""Where a staged wgmma (``nvidia.wgmma_staged``) takes its A operand from, besides storing it
to shared memory at every execution.

* **Registers** (attribute ``a_regs``): a 16-bit A that reaches wgmma's A-fragment layout
  without shared memory -- computed in registers, like attention's ``p`` from the first dot's
  accumulator (for 16-bit elements the accumulator layout *is* the A-fragment layout, so the
  conversion is a register renaming) -- is passed to ``wgmma.mma_async`` as four 32-bit
  registers per instruction; only B goes through shared memory.
* **Resident in shared memory** (``nvidia.wgmma_resident``): an A defined outside the dot's
  loop (attention's ``q``; ``k`` and ``v`` in its backward pass) is stored once, before the
  loop, into a buffer of its own (``register_resident_scratch``: the core allocator places it
  after the common scratch and nobody else reuses it), in wgmma's K-major swizzled layout; the
  dot reads it there through a matrix descriptor. The tile is then not live in registers
  across the loop, which is what kept such kernels at 255 registers with spills.

Both keep the op's scratch (the per-execution staging buffer) to B alone. A 16-bit B whose
registers run along K is stored K-major (``b_k_major``, wgmma's untransposed B) so its stores
are vectors.
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op, register_resident_scratch, register_verifier
from naiad.backend import linear_of, scratch_bytes
from naiad.ir import Operation

from ..ir.wgmma_op import KIND_ELEMENT
from ..ir.wgmma_smem import KIND_BYTES, OperandTile

RESIDENT_OP = "nvidia.wgmma_resident"
#: operand kinds wgmma can read from registers (16-bit elements)
REGISTER_A_KINDS = ("f16", "bf16")

register_op(OpDef(RESIDENT_OP, 1, 1, 0, ("kind",), frozenset(),
                  "stores a wgmma A tile once into its own shared buffer (K-major, swizzled); "
                  "returns its operand"))


def resident_tile(op: Operation) -> OperandTile:
    m, k = op.operands[0].type.shape
    return OperandTile(m, k, "K", KIND_BYTES[op.attrs["kind"]])


register_resident_scratch(RESIDENT_OP, lambda op: resident_tile(op).bytes)


def _verify_resident(op):
    t = op.operands[0].type
    kind = op.attrs.get("kind")
    if KIND_ELEMENT.get(kind) != t.element.name or len(t.shape) != 2:
        return f"kind {kind!r} does not match the rank-2 operand {t}"
    if op.results[0].type != t:
        return "result must have the operand's type"
    return None


register_verifier(RESIDENT_OP, _verify_resident)


def a_from_registers(a, acc, kind: str) -> bool:
    """A (given to the dot in its fragment layout) got there without shared memory: by a
    register-only conversion of a computed value, or computed in that layout. A tile as
    loaded is better stored once for wgmma than converted to the fragment layout."""
    from ..lowering.wgmma import a_in_registers_layout

    if kind not in REGISTER_A_KINDS or not a_in_registers_layout(a.type, acc.type):
        return False
    d = a.defining_op
    if d is not None and d.name == "convert_layout":
        if scratch_bytes(d) != 0:
            return False
        d = d.operands[0].defining_op
    return d is not None and d.name not in ("load", "for", "while", "if")


def b_runs_along_k(b, kind: str) -> bool:
    """A 16-bit B whose registers run along K (``k.T`` of a row-major tile): stored K-major
    (wgmma's untransposed B) its stores are 16-byte vectors instead of one per element."""
    if kind not in REGISTER_A_KINDS or b.type.layout is None:
        return False
    regs = linear_of(b.type.layout, tuple(b.type.shape)).bases.get("register", ())
    return bool(regs) and tuple(regs[0]) == (1, 0)


def enclosing_loop(op: Operation) -> Operation | None:
    parent = op.parent_op
    while isinstance(parent, Operation):
        if parent.name in ("for", "while"):
            return parent
        parent = parent.parent_op
    return None


def _defined_outside(v, loop: Operation) -> bool:
    if v.is_block_arg:
        block = v.owner
        region = getattr(block, "parent", None)
        owner = getattr(region, "parent", None)
        return isinstance(owner, Operation) and owner is not loop \
            and not loop.is_ancestor_of(owner)
    d = v.defining_op
    return d is not None and d is not loop and not loop.is_ancestor_of(d)


#: shared memory all resident tiles of a kernel may take (the rest of the 227 KiB an sm_90
#: block can have is left to the staging buffers); a tile beyond it is staged each time
RESIDENT_BUDGET = 160 * 1024


def resident_a(dot: Operation, a, kind: str):
    """``a`` stored once in its own shared buffer when the dot is in a loop and ``a`` is
    defined outside it (the same value feeding several dots is stored once), within
    :data:`RESIDENT_BUDGET`; else None."""
    loop = enclosing_loop(dot)
    if loop is None or not _defined_outside(a, loop) or a.is_block_arg:
        return None
    for use, _ in a.uses:
        if use.name == RESIDENT_OP:
            return use.results[0]
    fn_body = dot
    while fn_body.parent_op is not None:
        fn_body = fn_body.parent_op
    taken = sum(resident_tile(o).bytes for o in _walk_from(fn_body) if o.name == RESIDENT_OP)
    m, k = a.type.shape
    if taken + OperandTile(m, k, "K", KIND_BYTES[kind]).bytes > RESIDENT_BUDGET:
        return None
    d = a.defining_op
    store = Operation(RESIDENT_OP, [a], [a.type], {"kind": kind}, loc=dot.loc)
    block = d.parent
    at = block.ops.index(d) + 1
    block.insert(at, store)
    return store.results[0]


def _walk_from(top: Operation):
    """``top``'s block and everything nested in it (the function body's ops)."""
    block = top.parent
    for op in block.ops:
        yield from op.walk()


def a_source_is_resident(a) -> Operation | None:
    """The ``nvidia.wgmma_resident`` op that holds ``a``, if any."""
    d = a.defining_op
    return d if d is not None and d.name == RESIDENT_OP else None


#: f32 ops whose lowering divides with IEEE rounding (``div.rn.f32``): ptxas compiles that to a
#: call of its slow path, and a kernel with a call has every ``wgmma.mma_async`` serialized
#: (ptxas "C7509 Potential Performance Loss ... presence of Extern calls"). A ``div`` marked
#: ``approx`` (Python's ``/`` on f32) is ``div.full.f32``: no call.
DIVIDING_OPS = ("div", "log", "log2")


def _calls_slow_division(op) -> bool:
    return (op.name in DIVIDING_OPS and bool(op.results)
            and str(op.results[0].type.scalar) == "f32"
            and not (op.name == "div" and op.attrs.get("approx", False)))


def remark_serializing_calls(module, fn) -> None:
    """A kernel using wgmma: a remark at each f32 division (or log) that makes ptxas serialize
    its wgmmas."""
    from naiad.backend import remarks

    ops = list(fn.walk())
    if not any(o.name.startswith("nvidia.wgmma") for o in ops):
        return
    for o in ops:
        if _calls_slow_division(o):
            remarks.remark(module, o.loc, "division" if o.name == "div" else o.name,
                           "(f32) compiles to a subroutine call (the slow path of a division "
                           "rounded to nearest): ptxas may then serialize every "
                           "wgmma.mma_async of the kernel (nvJitLink 13.5's does)")
