"""Lowering of the debugging ops and of inline assembly.

* ``debug_barrier``: the TargetInfo's block barrier.
* ``assume``: ``llvm.assume`` on a scalar condition (LLVM may then, e.g., treat ``x % n`` of a
  non-negative ``x`` as unsigned); on a tensor nothing -- axis info has already read it.
* ``print``: each element is printed once, by the thread that owns it (a scalar by thread 0),
  through ``TargetInfo.printf`` as ``pid (x, y, z) idx (i, j) prefix: value`` -- the reference
  executor's format.
* ``assert``: where the condition is false, ``TargetInfo.assert_fail`` with the message (which
  names the kernel line).
* ``descriptor_access`` / ``descriptor_make`` (tensor-descriptor annotations a backend left):
  nothing, and a null tensor map no one reads.
* ``inline_asm``: one LLVM inline-asm call per register (``pack`` = 1) or per ``pack``
  consecutive registers of each operand, packed into one 32-bit value.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import CodegenError
from ...ir.types import ScalarType, TensorType
from .context import KernelLowering, lowers
from .elementwise import _to_f32
from .types import F64, I32, call_intrinsic, i32


@lowers("debug_barrier")
def lower_debug_barrier(kl: KernelLowering, op) -> None:
    kl.ti.barrier(kl.b)


def _print_value(kl: KernelLowering, t: ScalarType, x, hex_: bool):
    """(printf conversion, LLVM value promoted as C varargs are)."""
    b = kl.b
    if t.is_float:
        wide = _to_f32(b, t, x) if t.name in ("f16", "bf16") else x
        if t.name != "f64":
            wide = b.fpext(wide, F64)
        return ("%a" if hex_ else "%f"), wide
    if t.bitwidth == 64:
        return ("0x%016llx" if hex_ else ("%llu" if t.is_unsigned else "%lld")), x
    widen = b.zext if (t.is_unsigned or t.bitwidth == 1 or hex_) else b.sext
    wide = widen(x, I32) if t.bitwidth < 32 else x
    if hex_:
        return f"0x%0{max(t.bitwidth // 4, 1)}x", wide
    return ("%u" if t.is_unsigned or t.bitwidth == 1 else "%d"), wide


@lowers("print")
def lower_print(kl: KernelLowering, op) -> None:
    try:
        _lower_print(kl, op)
    except CodegenError as e:
        where = f"{op.loc}: " if op.loc is not None else ""
        raise CodegenError(f"{where}{e}") from None


def _lower_print(kl: KernelLowering, op) -> None:
    prefix, hex_ = op.attrs.get("prefix", ""), bool(op.attrs.get("hex", False))
    pids = [kl.cached(("pid", a), lambda a=a: kl.ti.program_id(kl.entry, a)) for a in range(3)]
    head = "pid (%d, %d, %d)"
    if not op.operands:
        _guarded(kl, kl.first_thread_pred(),
                 lambda: kl.ti.printf(kl.b, f"{head} {prefix}".rstrip() + "\n", pids))
        return
    for k, v in enumerate(op.operands):
        label = prefix if len(op.operands) == 1 else f"{prefix} (operand {k})"
        t = v.type.scalar
        regs = kl.get(v)
        if not isinstance(v.type, TensorType):
            conv, val = _print_value(kl, t, regs[0], hex_)
            text = f"{head} {label}: {conv}\n"
            _guarded(kl, kl.first_thread_pred(), lambda: kl.ti.printf(kl.b, text, pids + [val]))
            continue
        ll = kl.linear(v)
        base = kl.thread_coords(ll)
        dims = ", ".join(["%d"] * len(base))
        for r in kl.owner_registers(ll):
            coords = [kl.b.xor(c, i32(rc)) for c, rc in zip(base, kl.reg_coords(ll, r))]
            conv, val = _print_value(kl, t, regs[r], hex_)
            text = f"{head} idx ({dims}) {label}: {conv}\n"
            _guarded(kl, kl.owner_pred(ll),
                     lambda coords=coords, val=val, text=text:
                     kl.ti.printf(kl.b, text, pids + coords + [val]))


def _guarded(kl: KernelLowering, pred, emit) -> None:
    if pred is None:
        emit()
    else:
        kl.if_then(pred, lambda: (emit(), [])[1], [])
    # a TargetInfo may have put stack slots at the top of the entry block: keep the lowering's
    # entry builder appending at its end
    kl.entry.position_at_end(kl.entry.block)


@lowers("descriptor_access")
def lower_descriptor_access(kl: KernelLowering, op) -> None:
    """A TMA annotation the backend did not consume: the memory op beside it does the work."""


@lowers("descriptor_make")
def lower_descriptor_make(kl: KernelLowering, op) -> None:
    """The tensor map of an in-kernel descriptor on a backend that builds none: only the
    annotations above read it, so a null pointer stands in for it."""
    kl.set(op.results[0], [ir.Constant(kl.ltype(op.results[0].type), None)])


@lowers("assume")
def lower_assume(kl: KernelLowering, op) -> None:
    if not op.operands[0].type.is_tensor:
        (cond,) = kl.get(op.operands[0])
        call_intrinsic(kl.b, "llvm.assume", ir.VoidType(), [cond])


@lowers("assert")
def lower_assert(kl: KernelLowering, op) -> None:
    message = op.attrs.get("message", "device_assert failed")
    for ok in kl.get(op.operands[0]):
        failed = kl.b.not_(ok)
        _guarded(kl, failed, lambda: kl.ti.assert_fail(kl.b, message))


@lowers("inline_asm")
def lower_inline_asm(kl: KernelLowering, op) -> None:
    if not getattr(kl.ti, "supports_inline_asm", True):
        where = op.attrs.get("where") or (str(op.loc) if op.loc is not None else "")
        raise CodegenError(f"{where + ': ' if where else ''}tl.inline_asm_elementwise is not "
                           f"supported by this backend's toolchain ({type(kl.ti).__name__})")
    asm, constraints = op.attrs["asm"], op.attrs["constraints"]
    pure, pack = bool(op.attrs.get("pure", True)), int(op.attrs.get("pack", 1))
    b = kl.b
    in_types = [v.type.scalar for v in op.operands]
    out_types = [r.type.scalar for r in op.results]
    if pack != 1:
        _check_packable(in_types + out_types, pack, op)
    ins = [kl.get(v) for v in op.operands]
    n = kl.num_regs(op.results[0]) if op.results else (len(ins[0]) if ins else 1)
    if n % pack:
        where = op.attrs.get("where") or (str(op.loc) if op.loc is not None else "")
        raise CodegenError(f"{where + ': ' if where else ''}inline_asm_elementwise with "
                           f"pack={pack}: each thread holds {n} element(s) of the result, "
                           f"not a multiple of {pack}; use larger blocks or pack=1")
    outs: list[list] = [[] for _ in op.results]
    for start in range(0, n, pack):
        args = [_pack(b, t, regs[start:start + pack]) if pack != 1 else regs[start]
                for t, regs in zip(in_types, ins)]
        rtys = [_lltype(kl, t, pack) for t in out_types]
        ret = rtys[0] if len(rtys) == 1 else (ir.LiteralStructType(rtys) if rtys
                                             else ir.VoidType())
        fnty = ir.FunctionType(ret, [a.type for a in args])
        call = b.asm(fnty, asm, constraints, args, side_effect=not pure)
        values = [call] if len(rtys) == 1 else [b.extract_value(call, i)
                                                for i in range(len(rtys))]
        for i, (t, val) in enumerate(zip(out_types, values)):
            outs[i].extend(_unpack(b, t, val, pack) if pack != 1 else [val])
    for r, regs in zip(op.results, outs):
        kl.set(r, regs)


def _lltype(kl, t: ScalarType, pack: int):
    if pack == 1:
        return kl.ltype(t)
    return ir.IntType(t.bitwidth * pack)


def _check_packable(types, pack, op) -> None:
    for t in types:
        if not t.is_int and t.name not in ("f16", "bf16"):
            raise CodegenError(f"inline_asm_elementwise with pack={pack} packs integer or "
                               f"16-bit float elements into one register; got {t}")
        if t.bitwidth * pack > 64:
            raise CodegenError(f"inline_asm_elementwise: pack={pack} elements of {t} do not "
                               "fit a 64-bit register")


def _pack(b, t: ScalarType, regs):
    width = t.bitwidth
    acc = ir.Constant(ir.IntType(width * len(regs)), 0)
    for i, x in enumerate(regs):
        bits = x if isinstance(x.type, ir.IntType) else b.bitcast(x, ir.IntType(width))
        wide = b.zext(bits, acc.type) if acc.type.width > width else bits
        acc = b.or_(acc, b.shl(wide, ir.Constant(acc.type, i * width)))
    return acc


def _unpack(b, t: ScalarType, value, pack: int):
    width = t.bitwidth
    out = []
    for i in range(pack):
        part = b.lshr(value, ir.Constant(value.type, i * width)) if i else value
        part = b.trunc(part, ir.IntType(width)) if value.type.width > width else part
        if t.name == "f16":
            part = b.bitcast(part, ir.HalfType())
        out.append(part)
    return out

