"""Elementwise ops, one register at a time, with the exact semantics of :mod:`naiad.ir.ops`.

* integers: ``div`` rounds toward zero (sdiv/udiv), ``rem`` takes the dividend's sign
  (srem/urem), ``shr`` is arithmetic for signed and logical for unsigned types, comparisons and
  ``max``/``min`` follow signedness (``i1`` compares as unsigned: false < true);
* shift amounts outside ``[0, bitwidth)`` give 0 (``shl``, logical ``shr``) or the sign fill
  (arithmetic ``shr``), as numpy does; Triton leaves them undefined (LLVM: poison), so naiad
  pins them down rather than let two targets disagree;
* floats: ``rem`` is an exact C ``fmod`` (dividend's sign), emitted by :mod:`.fmod`; ``max``/``min`` ignore a NaN operand
  (``llvm.maxnum``) unless ``propagate_nan`` is set (``llvm.maximum``: NaN wins, -0 < +0);
  ``ne`` is unordered (true for NaN), every other comparison ordered;
* f16 computes natively; bf16 widens to f32 and rounds back (nearest even) after each op;
  math functions on f16/bf16 run in f32 through the TargetInfo;
* ops with attr ``approx`` (float ``/``, ``tl.exp``) take the backend's fast version when its
  ``TargetInfo.fast_math`` has one (Triton's numerics, docs/language.md), else the exact op;
* casts: int->int sign- or zero-extends by the *source*'s signedness (i1 zero-extends),
  float->int truncates toward zero and saturates (NaN gives 0), anything->i1 is ``!= 0``
  (NaN is true); a float downcast
  rounds to nearest even, or toward zero with ``fp_downcast_rounding="rtz"``.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import IRError
from ...ir.ops import MATH_UNARY
from ...ir.types import PointerType, ScalarType
from .context import KernelLowering, lowers
from .fmod import emit_fmod
from .float8 import emit_float8_cast
from .types import (F32, F64, I16, I64, bf16_to_f32, call_intrinsic, constant,
                    f32_to_bf16, f64_to_f32_round_to_odd, float_suffix, llvm_type)

_INT_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLOAT_CMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}


def _elem(v) -> ScalarType | PointerType:
    return v.type.scalar


def _is_bf16(t) -> bool:
    return isinstance(t, ScalarType) and t.name == "bf16"


def _is_unsigned_like(t) -> bool:
    return isinstance(t, ScalarType) and (t.is_unsigned or t.name == "i1")


# -- scalar emitters --------------------------------------------------------------------------

#: ops that map to one IRBuilder method regardless of signedness
_FLOAT_BUILDERS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_INT_BUILDERS = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor"}


def emit_binary(b: ir.IRBuilder, name: str, t: ScalarType, x, y, attrs) -> ir.Value:
    if _is_bf16(t):
        r = emit_binary(b, name, ScalarType("f32"), bf16_to_f32(b, x), bf16_to_f32(b, y), attrs)
        return f32_to_bf16(b, r)
    if t.is_float:
        if name == "rem":
            return emit_fmod(b, x, y)  # never LLVM's frem: GPU targets expand it inexactly
        if name in _FLOAT_BUILDERS:
            return getattr(b, _FLOAT_BUILDERS[name])(x, y)
        if name in ("max", "min"):
            nan = bool(attrs.get("propagate_nan", False))
            base = {"max": "maximum" if nan else "maxnum",
                    "min": "minimum" if nan else "minnum"}[name]
            return call_intrinsic(b, f"llvm.{base}.{float_suffix(x.type)}", x.type, [x, y])
        raise IRError(f"'{name}' is not defined on floats")
    unsigned = _is_unsigned_like(t)
    if name in _INT_BUILDERS:
        return getattr(b, _INT_BUILDERS[name])(x, y)
    if name in ("div", "rem"):
        return getattr(b, ("u" if unsigned else "s") + name)(x, y)
    if name in ("shl", "shr"):
        width = ir.Constant(x.type, t.bitwidth)
        in_range = b.icmp_unsigned("<", y, width)
        safe = b.select(in_range, y, ir.Constant(x.type, 0))
        if name == "shl":
            return b.select(in_range, b.shl(x, safe), ir.Constant(x.type, 0))
        if unsigned:
            return b.select(in_range, b.lshr(x, safe), ir.Constant(x.type, 0))
        fill = b.ashr(x, ir.Constant(x.type, t.bitwidth - 1))
        return b.select(in_range, b.ashr(x, safe), fill)
    if name in ("max", "min"):
        op = ">" if name == "max" else "<"
        cmp = b.icmp_unsigned(op, x, y) if unsigned else b.icmp_signed(op, x, y)
        return b.select(cmp, x, y)
    if name == "umulhi":
        w = t.bitwidth
        wide = ir.IntType(2 * w)
        prod = b.mul(b.zext(x, wide), b.zext(y, wide))
        return b.trunc(b.lshr(prod, ir.Constant(wide, w)), x.type)
    raise IRError(f"'{name}' is not defined on {t}")


def emit_cmp(b: ir.IRBuilder, pred: str, t, x, y) -> ir.Value:
    if isinstance(t, PointerType):
        return b.icmp_unsigned(_INT_CMP[pred], x, y)
    if _is_bf16(t):
        return emit_cmp(b, pred, ScalarType("f32"), bf16_to_f32(b, x), bf16_to_f32(b, y))
    if t.is_float:
        return b.fcmp_ordered(_FLOAT_CMP[pred], x, y)  # full predicate names pass through
    if _is_unsigned_like(t):
        return b.icmp_unsigned(_INT_CMP[pred], x, y)
    return b.icmp_signed(_INT_CMP[pred], x, y)


def _to_f32(b, t: ScalarType, x):
    """f16/bf16 widened to f32 (other types unchanged)."""
    if _is_bf16(t):
        return bf16_to_f32(b, x)
    if t.name == "f16":
        return b.fpext(x, F32)
    return x


def _from_f32(b, t: ScalarType, x):
    if _is_bf16(t):
        return f32_to_bf16(b, x)
    if t.name == "f16":
        return b.fptrunc(x, llvm_type(t, 1))
    return x


def _fast(kl: KernelLowering, name: str, t: ScalarType, args: list) -> ir.Value | None:
    """The backend's fast ``name`` (``TargetInfo.fast_math``) on float ``args``, or None where
    it has none; bf16 goes through f32 (f16 is passed as is: the backend may widen it)."""
    b = kl.b
    if _is_bf16(t):
        v = kl.ti.fast_math(b, name, [bf16_to_f32(b, a) for a in args], "f32")
        return None if v is None else f32_to_bf16(b, v)
    return kl.ti.fast_math(b, name, list(args), t.name)


def emit_divide(kl: KernelLowering, t: ScalarType, x, y, attrs) -> ir.Value:
    """Float ``x / y``: the backend's fast division for attr ``approx``, else correctly
    rounded (LLVM's fdiv)."""
    if attrs.get("approx", False):
        v = _fast(kl, "div", t, [x, y])
        if v is not None:
            return v
    return emit_binary(kl.b, "div", t, x, y, attrs)


def emit_math(kl: KernelLowering, name: str, t: ScalarType, args: list,
              approx: bool = False) -> ir.Value:
    """Math function through the TargetInfo (f16/bf16 computed in f32); ``approx`` asks for
    the backend's fast version first (``TargetInfo.fast_math``)."""
    b = kl.b
    if approx and t.is_float:
        v = _fast(kl, name, t, args)
        if v is not None:
            return v
    if t.is_int:
        if name == "abs":
            x = args[0]
            if _is_unsigned_like(t):
                return x
            neg = b.icmp_signed("<", x, ir.Constant(x.type, 0))
            return b.select(neg, b.sub(ir.Constant(x.type, 0), x), x)
        if name == "umulhi":
            return emit_binary(b, "umulhi", t, args[0], args[1], {})
        raise IRError(f"math function {name} is not defined on {t}")
    if _is_bf16(t) and name == "abs":
        return b.and_(args[0], ir.Constant(I16, 0x7FFF))
    if t.name in ("f16", "bf16"):
        wide = [_to_f32(b, t, a) for a in args]
        return _from_f32(b, t, kl.ti.math(b, name, wide, "f32"))
    return kl.ti.math(b, name, list(args), t.name)


def emit_unary(kl: KernelLowering, name: str, t: ScalarType, x) -> ir.Value:
    b = kl.b
    if name == "neg":
        if _is_bf16(t):
            return b.xor(x, ir.Constant(I16, -0x8000))
        if t.is_float:
            return b.fneg(x)
        return b.sub(ir.Constant(x.type, 0), x)
    if name == "not":
        return b.xor(x, ir.Constant(x.type, -1 if t.bitwidth > 1 else 1))
    if name in MATH_UNARY:
        return emit_math(kl, name, t, [x])
    raise IRError(f"unknown unary op {name}")


def emit_cast(kl: KernelLowering, src, dst, x, rounding: str | None = None) -> ir.Value:
    """Value conversion ``src -> dst`` of one element; ``rounding="rtz"`` makes a float downcast
    round toward zero (``fp_downcast_rounding``)."""
    b = kl.b
    if src == dst:
        return x
    if rounding == "rtz" and isinstance(src, ScalarType) and isinstance(dst, ScalarType) \
            and src.is_float and dst.is_float and dst.bitwidth < src.bitwidth:
        return _downcast_toward_zero(b, src, dst, x)
    dl = llvm_type(dst, kl.global_as)
    if isinstance(src, PointerType) or isinstance(dst, PointerType):
        if isinstance(src, PointerType) and isinstance(dst, PointerType):
            return x if x.type == dl else b.addrspacecast(x, dl)
        if isinstance(src, PointerType):
            if dst.name == "i1":
                return b.icmp_unsigned("!=", x, ir.Constant(x.type, None))
            return b.ptrtoint(x, dl)
        if x.type.width < 64:
            x = b.zext(x, ir.IntType(64)) if _is_unsigned_like(src) else b.sext(x, ir.IntType(64))
        return b.inttoptr(x, dl)
    if src.is_fp8 or dst.is_fp8:
        return emit_float8_cast(b, src, dst, x, lambda t, v: _to_f32(b, t, v),
                                lambda s, d, v: emit_cast(kl, s, d, v))
    if dst.name == "i1":
        if src.is_float:
            v = _to_f32(b, src, x)
            return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if src.is_int and dst.is_int:
        sw, dw = src.bitwidth, dst.bitwidth
        if sw == dw:
            return x
        if sw > dw:
            return b.trunc(x, dl)
        return b.zext(x, dl) if _is_unsigned_like(src) else b.sext(x, dl)
    if src.is_int and dst.is_float:
        conv = b.uitofp if _is_unsigned_like(src) else b.sitofp
        if _is_bf16(dst):
            if src.bitwidth <= 16:
                return f32_to_bf16(b, conv(x, F32))
            return f32_to_bf16(b, f64_to_f32_round_to_odd(b, conv(x, F64)))
        return conv(x, dl)
    if src.is_float and dst.is_int:
        # saturating (NaN -> 0), so out-of-range values have one answer on every target
        v = _to_f32(b, src, x)
        kind = "fptoui" if dst.is_unsigned else "fptosi"
        name = f"llvm.{kind}.sat.i{dst.bitwidth}.{float_suffix(v.type)}"
        return call_intrinsic(b, name, dl, [v])
    # float -> float
    if _is_bf16(dst):
        if src.name == "f64":
            return f32_to_bf16(b, f64_to_f32_round_to_odd(b, x))
        return f32_to_bf16(b, _to_f32(b, src, x))
    if _is_bf16(src):
        v = bf16_to_f32(b, x)
        return v if dst.name == "f32" else (b.fpext(v, dl) if dst.name == "f64"
                                            else b.fptrunc(v, dl))
    if src.bitwidth < dst.bitwidth:
        return b.fpext(x, dl)
    return b.fptrunc(x, dl)


def _downcast_toward_zero(b: ir.IRBuilder, src: ScalarType, dst: ScalarType, x) -> ir.Value:
    """Float downcast rounding toward zero. To bf16: the f32 value (itself rounded toward zero
    from f64; bf16's values are a subset of f32's, so two truncations are one) keeps its top 16
    bits, NaN stays a quiet NaN. Otherwise: round to nearest, then step one ulp toward zero where
    that overshot the magnitude (so overflow gives the largest finite value)."""
    if _is_bf16(dst):
        v = _downcast_toward_zero(b, src, ScalarType("f32"), x) if src.name == "f64" else x
        bits = b.bitcast(v, ir.IntType(32))
        high = b.lshr(bits, ir.Constant(ir.IntType(32), 16))
        quiet = b.or_(high, ir.Constant(ir.IntType(32), 0x40))
        is_nan = b.fcmp_unordered("uno", v, v)
        return b.trunc(b.select(is_nan, quiet, high), I16)
    dl = llvm_type(dst, 1)
    near = b.fptrunc(x, dl)
    back = b.fpext(near, x.type)
    fabs = "llvm.fabs." + float_suffix(x.type)
    over = b.fcmp_ordered(">", call_intrinsic(b, fabs, x.type, [back]),
                          call_intrinsic(b, fabs, x.type, [x]))
    it = ir.IntType(dst.bitwidth)
    bits = b.bitcast(near, it)
    return b.bitcast(b.select(over, b.sub(bits, ir.Constant(it, 1)), bits), dl)


def emit_bitcast(kl: KernelLowering, src, dst, x) -> ir.Value:
    dl = llvm_type(dst, kl.global_as)
    if x.type == dl:
        return x
    if isinstance(src, PointerType) or isinstance(dst, PointerType):
        return kl.b.ptrtoint(x, dl) if isinstance(src, PointerType) else kl.b.inttoptr(x, dl)
    return kl.b.bitcast(x, dl)


# -- op lowerings ---------------------------------------------------------------------------------

def _per_register(kl: KernelLowering, op, fn) -> None:
    """``fn`` once per distinct tuple of operand registers: a broadcast or splat operand
    repeats one LLVM value over many registers, and its result is that one value again
    (rather than IR that LLVM's optimiser must find equal and fold)."""
    regs = [kl.get(v) for v in op.operands]
    done: dict[tuple, object] = {}
    out = []
    for vals in zip(*regs):
        key = tuple(map(id, vals))     # the registers live in ``regs``: ids stay unique
        if key not in done:
            done[key] = fn(*vals)
        out.append(done[key])
    kl.set(op.results[0], out)


@lowers("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "max", "min",
        "umulhi")
def lower_binary(kl: KernelLowering, op) -> None:
    t = _elem(op.operands[0])
    if op.name == "umulhi":
        _per_register(kl, op, lambda x, y: emit_math(kl, "umulhi", t, [x, y]))
        return
    if op.name == "div" and t.is_float:
        _per_register(kl, op, lambda x, y: emit_divide(kl, t, x, y, op.attrs))
        return
    _per_register(kl, op, lambda x, y: emit_binary(kl.b, op.name, t, x, y, op.attrs))


@lowers("neg", "not", *MATH_UNARY)
def lower_unary(kl: KernelLowering, op) -> None:
    t = _elem(op.operands[0])
    if op.attrs.get("approx", False):
        _per_register(kl, op, lambda x: emit_math(kl, op.name, t, [x], approx=True))
        return
    _per_register(kl, op, lambda x: emit_unary(kl, op.name, t, x))


@lowers("fma")
def lower_fma(kl: KernelLowering, op) -> None:
    t = _elem(op.operands[0])
    _per_register(kl, op, lambda x, y, z: emit_math(kl, "fma", t, [x, y, z]))


@lowers("cmp")
def lower_cmp(kl: KernelLowering, op) -> None:
    t = _elem(op.operands[0])
    pred = op.attrs["pred"]
    run = _uniform_run(kl, op)
    if run == 1:
        _per_register(kl, op, lambda x, y: emit_cmp(kl.b, pred, t, x, y))
        return
    xs, ys = kl.get(op.operands[0]), kl.get(op.operands[1])
    out = []
    for r in range(0, len(xs), run):   # one compare per run of equal results
        out += [emit_cmp(kl.b, pred, t, xs[r], ys[r])] * run
    kl.set(op.results[0], out)


def _uniform_run(kl: KernelLowering, op) -> int:
    """Consecutive registers of ``op``'s result that axis info proves equal (the ``uniform``
    constancy per dimension that layout assignment recorded), along the dimension the layout's
    first register bits step; 1 when unknown."""
    uniform = op.attrs.get("uniform")
    res = op.results[0]
    if not uniform or not res.type.shape or len(uniform) != len(res.type.shape):
        return 1
    ll = kl.linear(res)
    regs = ll.bases.get("register", ())
    if not regs:
        return 1
    dims = [d for d, c in enumerate(regs[0]) if c]
    if len(dims) != 1:
        return 1
    limit = 1
    while limit * 2 <= int(uniform[dims[0]]):
        limit *= 2
    from .memory import vector_run

    return vector_run(ll, limit)


@lowers("select")
def lower_select(kl: KernelLowering, op) -> None:
    _per_register(kl, op, lambda c, x, y: kl.b.select(c, x, y))


@lowers("cast")
def lower_cast(kl: KernelLowering, op) -> None:
    src, dst = _elem(op.operands[0]), _elem(op.results[0])
    rounding = op.attrs.get("fp_downcast_rounding")
    _per_register(kl, op, lambda x: emit_cast(kl, src, dst, x, rounding))


@lowers("bitcast")
def lower_bitcast(kl: KernelLowering, op) -> None:
    src, dst = _elem(op.operands[0]), _elem(op.results[0])
    _per_register(kl, op, lambda x: emit_bitcast(kl, src, dst, x))


@lowers("addptr")
def lower_addptr(kl: KernelLowering, op) -> None:
    pointee = op.operands[0].type.scalar.pointee
    etype = kl.mtype(pointee)
    off_t = _elem(op.operands[1])

    unsigned = _is_unsigned_like(off_t)
    wide: dict[int, ir.Value] = {}     # id(offset) -> its i64 (a splat offset extends once)

    def to_i64(off):
        width = off.type.width
        if width >= 64:
            return off
        if isinstance(off, ir.Constant) and isinstance(off.constant, int):
            v = off.constant & ((1 << width) - 1)
            if not unsigned and v >> (width - 1):
                v -= 1 << width
            return ir.Constant(I64, v)
        if id(off) not in wide:
            # offsets are sign- or zero-extended by their own signedness
            wide[id(off)] = kl.b.zext(off, I64) if unsigned else kl.b.sext(off, I64)
        return wide[id(off)]

    def add(p, off):
        return kl.b.gep(p, [to_i64(off)], source_etype=etype)

    _per_register(kl, op, add)


@lowers("constant")
def lower_constant(kl: KernelLowering, op) -> None:
    r = op.results[0]
    c = constant(r.type.scalar, op.attrs["value"], kl.global_as)
    kl.set(r, [c] * kl.num_regs(r))


@lowers("program_id")
def lower_program_id(kl: KernelLowering, op) -> None:
    axis = op.attrs["axis"]
    kl.set(op.results[0], [kl.cached(("pid", axis), lambda: kl.ti.program_id(kl.entry, axis))])


@lowers("num_programs")
def lower_num_programs(kl: KernelLowering, op) -> None:
    axis = op.attrs["axis"]
    kl.set(op.results[0], [kl.cached(("nprog", axis),
                                     lambda: kl.ti.num_programs(kl.entry, axis))])


@lowers("barrier")
def lower_barrier(kl: KernelLowering, op) -> None:
    kl.ti.barrier(kl.b)

