"""The catalog of tile-IR operations: one :class:`OpDef` per op name, the single source of truth
for arity, attributes, regions and traits. The verifier, the passes and every backend consult it;
the GPU layer registers its own ops (``convert_layout``, ...) through :func:`register_op`.

Conventions (all ops are strictly typed; the frontend inserts casts/splats/broadcasts):
* Elementwise ops take operands of one type (scalar or tensor) and give that type
  (``cmp`` gives i1 of the same shape). Integer signedness lives in the type (``i32`` vs ``u32``).
* ``div`` on integers rounds toward zero; ``rem`` takes the dividend's sign (ints; on floats it is
  an exact C ``fmod``); ``shr`` is arithmetic on signed and logical on unsigned types; ``umulhi``
  is the high half of the unsigned product of the operands' bits.
* ``cast`` float->int truncates toward zero and saturates (NaN gives 0); a float downcast rounds
  to nearest even, or toward zero with attribute ``fp_downcast_rounding = "rtz"``.
  Conversions to and from the float8 types (``f8e5 f8e4nv f8e4b8 f8e5b16 f8e4b15``) follow
  ``naiad.ir.float8`` (nearest even, saturation or inf, NaN rules); no other op computes in
  float8 (the frontend refuses it).
* ``reduce``/``scan`` combine in the element type (f16/bf16 round after every combine).
* Optional operands are positional: ``load(ptr[, mask[, other]])``, ``store(ptr, value[, mask])``,
  ``atomic_rmw(ptr, value[, mask])``.
* ``reduce``/``scan`` take N tensors; their region's block has 2N scalar args (accumulators, then
  new elements) and yields N scalars. ``reduce`` drops ``axis`` (a rank-1 input gives scalars).
* ``for(lb, ub, step, inits...)``: body block args are (iv, iter args...), ends in ``yield``.
  ``while(inits...)``: region 0 ("before", args = inits) ends in ``condition(cond, values...)``;
  region 1 ("after", args = values) ends in ``yield`` of new inits; results = values' types.
  ``if(cond)``: regions then/else end in ``yield``; results = yielded types.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# traits
PURE = "pure"                # no side effects: may be CSE'd, hoisted, deleted when unused
TERMINATOR = "terminator"    # must end its block
ELEMENTWISE = "elementwise"  # applies per element; operands and result share a shape
COMMUTATIVE = "commutative"
LOOP = "loop"


@dataclass(frozen=True)
class OpDef:
    name: str
    #: allowed operand counts: an int, a (min, max) tuple (max None = variadic)
    operands: int | tuple[int, int | None]
    #: result count: an int, or None when it varies (control flow, calls, reduce)
    results: int | None
    regions: int = 0
    required_attrs: tuple[str, ...] = ()
    traits: frozenset[str] = field(default_factory=frozenset)
    doc: str = ""

    def has(self, trait: str) -> bool:
        return trait in self.traits

    def operand_count_ok(self, n: int) -> bool:
        if isinstance(self.operands, int):
            return n == self.operands
        lo, hi = self.operands
        return n >= lo and (hi is None or n <= hi)


OPS: dict[str, OpDef] = {}


def register_op(opdef: OpDef) -> OpDef:
    if opdef.name in OPS and OPS[opdef.name] != opdef:
        raise ValueError(f"op {opdef.name!r} registered twice with different definitions")
    OPS[opdef.name] = opdef
    return opdef


def opdef(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def _def(name, operands, results, *traits, regions=0, attrs=(), doc=""):
    register_op(OpDef(name, operands, results, regions, tuple(attrs), frozenset(traits), doc))


P, E, C = PURE, ELEMENTWISE, COMMUTATIVE

# -- constants, ids, ranges -------------------------------------------------------------------
_def("constant", 0, 1, P, attrs=("value",), doc="scalar, or a tensor filled with `value`")
_def("program_id", 0, 1, P, attrs=("axis",), doc="i32 program index along axis 0..2")
_def("num_programs", 0, 1, P, attrs=("axis",), doc="i32 grid size along axis 0..2")
_def("make_range", 0, 1, P, attrs=("start", "end"), doc="tensor<(end-start)xi32> [start, end)")

# -- shape ops ---------------------------------------------------------------------------------
_def("splat", 1, 1, P, doc="scalar -> tensor filled with it")
_def("broadcast", 1, 1, P, doc="tensor -> same rank, size-1 dims stretched")
_def("expand_dims", 1, 1, P, attrs=("axis",), doc="insert a size-1 dim at axis")
_def("reshape", 1, 1, P, doc="same number of elements, row-major order kept")
_def("trans", 1, 1, P, attrs=("order",), doc="permute dims: result dim i = operand dim order[i]")
_def("join", 2, 1, P, doc="two same-typed tensors -> new minor dim of size 2")
_def("split", 1, 2, P, doc="tensor with minor dim 2 -> its two halves")
_def("hint", 1, 1, P, doc="identity carrying facts for axis info (divisibility, contiguity)")
_def("gather", 2, 1, P, attrs=("axis",),
     doc="gather(src, index): src's elements at index along axis (index's shape; 0 where the "
         "index is outside the axis)")
_def("histogram", (1, 2), 1, P, attrs=("num_bins",),
     doc="histogram(x[, mask]): int32[num_bins] counts of the values 0..num_bins-1 of a 1-D "
         "integer tensor; values outside and elements where mask is false are not counted")

# -- pointers and memory -----------------------------------------------------------------------
_def("addptr", 2, 1, P, E, doc="ptr + offset elements (offset int, same shape)")
_def("load", (1, 3), 1, doc="load(ptr[, mask[, other]]); masked-off lanes give other (or undef)")
_def("store", (2, 3), 0, doc="store(ptr, value[, mask])")
_def("atomic_rmw", (2, 3), 1, attrs=("kind",),
     doc="kind in add|max|min|xchg|and|or|xor; returns the old values; every lane applies")
_def("atomic_cas", 3, 1, doc="atomic_cas(ptr, cmp, value) -> old value")
_def("atomic_poll", (2, 3), 1,
     doc="atomic_poll(ptr, expected[, timeout_ns u64]) -> i1 per element: spin on atomic loads "
         "until the value equals expected (true) or the shared timeout expires (false); each "
         "element is loaded at least once; attrs sem (acquire|relaxed), scope")

# -- elementwise arithmetic --------------------------------------------------------------------
for _n in ("add", "mul"):
    _def(_n, 2, 1, P, E, C)
for _n in ("sub", "rem"):
    _def(_n, 2, 1, P, E)
_def("div", 2, 1, P, E, doc="integers round toward zero; floats: correctly rounded unless attr "
     "approx is true (then a backend may use Triton's fast division, docs/language.md)")
for _n in ("and", "or", "xor"):
    _def(_n, 2, 1, P, E, C, doc="integers (i1 included) only")
for _n in ("shl", "shr"):
    _def(_n, 2, 1, P, E, doc="integers only; shr is arithmetic for signed, logical for unsigned")
_def("max", 2, 1, P, E, C, doc="float max propagates NaN when attr propagate_nan is true")
_def("min", 2, 1, P, E, C, doc="float min propagates NaN when attr propagate_nan is true")
_def("neg", 1, 1, P, E)
_def("not", 1, 1, P, E, doc="bitwise not (logical not on i1)")
_def("cmp", 2, 1, P, E, attrs=("pred",), doc="pred in eq|ne|lt|le|gt|ge; result i1")
_def("select", 3, 1, P, E, doc="select(cond i1, a, b)")
_def("cast", 1, 1, P, E, doc="value conversion int/float/bool/pointer (float->int truncates "
                              "and saturates; fp_downcast_rounding=\"rtz\" rounds toward zero)")
_def("bitcast", 1, 1, P, E, doc="reinterpret bits between same-width types")
#: ``sqrt`` is Triton's "fast square root": a backend may use its approximate instruction (its
#: bound documented in docs/language.md); ``sqrt_rn`` is always correctly rounded. ``exp`` with
#: attr ``approx`` (``tl.exp``) may be Triton's fast exp; without it (libdevice) it is accurate
MATH_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "erf",
              "floor", "ceil", "abs")
for _n in MATH_UNARY:
    _def(_n, 1, 1, P, E, doc="math function (abs also on integers)")
_def("fma", 3, 1, P, E, doc="a * b + c, one rounding")
_def("umulhi", 2, 1, P, E, doc="high half of the unsigned integer product of the bits")

# -- reductions, scans, dot --------------------------------------------------------------------
_def("reduce", (1, None), None, P, regions=1, attrs=("axis",))
_def("scan", (1, None), None, P, regions=1, attrs=("axis", "reverse"))
_def("dot", 3, 1, P, doc="dot(a MxK, b KxN, acc MxN) -> MxN; attr input_precision")

# -- debugging, hints and escapes ------------------------------------------------------------
_def("debug_barrier", 0, 0, doc="block-wide barrier (tl.debug_barrier); a no-op between programs")
_def("descriptor_access", (0, None), 0, attrs=("access", "kind", "block"),
     doc="descriptor_access([map, ]offsets...): the tensor-descriptor block `block` at `offsets` "
         "that the load/store whose `descriptor_access` attr equals `access` reads/writes, for a "
         "backend that moves it as a unit (NVIDIA TMA through `map`); with no map, `portable` "
         "says why not. The memory op itself is the portable lowering; a backend drops this op "
         "(the core's lowering drops what a backend left)")
_def("descriptor_make", (1, None), 1, P, attrs=("block", "padding"),
     doc="descriptor_make(base, shape..., strides...) -> ptr<u8>: the hardware tensor map of a "
         "descriptor made in the kernel (tl.make_tensor_descriptor), for `descriptor_access` "
         "ops; a backend that builds maps on the device lowers it, any other drops it (with its "
         "accesses) and the result is then never read")
_def("print", (0, None), 0, attrs=("prefix", "hex"),
     doc="print every element of each operand with its program id and index (tl.device_print)")
_def("assert", 1, 0, attrs=("message",),
     doc="fail the launch where the i1 operand is false (tl.device_assert in debug mode)")
_def("assume", 1, 0,
     doc="a promise that the i1 operand is true wherever this op is reached (tl.assume): axis "
         "info reads facts such as x >= 0 from it; lowers to llvm.assume for a scalar")
_def("inline_asm", (0, None), None, E, attrs=("asm", "constraints", "pure", "pack"),
     doc="elementwise inline assembly (tl.inline_asm_elementwise); operands and results share "
         "a shape")

# -- control flow -----------------------------------------------------------------------------
_def("for", (3, None), None, LOOP, regions=1)
_def("while", (0, None), None, LOOP, regions=2)
_def("if", 1, None, regions=2)
_def("yield", (0, None), 0, TERMINATOR)
_def("condition", (1, None), 0, TERMINATOR)
_def("return", (0, None), 0, TERMINATOR)
_def("call", (0, None), None, attrs=("callee",))

BINARY_ARITH = ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "max", "min")
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
ATOMIC_KINDS = ("add", "max", "min", "xchg", "and", "or", "xor")
