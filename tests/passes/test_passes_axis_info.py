"""Axis info: the facts the brief names (vector add, 2-D offsets, hints, specialised arguments),
and, for every pattern, a brute-force check that each claimed contiguity/divisibility/constancy
holds on concretely evaluated values for random program ids and arguments."""
from __future__ import annotations

import numpy as np
import pytest

from passes_testutil import module_text
from naiad.ir.parser import parse_module
from naiad.ir.verifier import verify
from naiad.passes.axis_info import MAX_DIVISIBILITY, Info, analyze, pow2_divisor

# -- a tiny evaluator for index arithmetic (pointers are element addresses) -----------------------


def _np_int(t):
    return np.int64  # wide enough for the test values; no test relies on wrap-around


class Unsatisfied(Exception):
    """An ``assume`` of the kernel is false for the drawn arguments."""


def evaluate(fn, args: dict, pid: int) -> dict:
    """Values of every op result of ``fn`` (no loops) for argument values ``args`` by name;
    raises :class:`Unsatisfied` when an ``assume`` does not hold for them."""
    env = {}
    for a in fn.args:
        env[a] = np.asarray(args[a.name_hint], dtype=np.int64)

    def shape(v):
        return tuple(v.type.shape)

    for op in fn.body.block.ops:
        ins = [env.get(v) for v in op.operands]
        n, at = op.name, op.attrs
        if n == "return":
            break
        if n == "assume":
            if not ins[0].all():
                raise Unsatisfied
            continue
        if n == "constant":
            r = np.full(shape(op.results[0]), int(at["value"]), dtype=np.int64)
        elif n == "program_id":
            r = np.asarray(pid, dtype=np.int64)
        elif n == "make_range":
            r = np.arange(at["start"], at["end"], dtype=np.int64)
        elif n in ("splat", "broadcast"):
            r = np.broadcast_to(ins[0], shape(op.results[0])).copy()
        elif n == "expand_dims":
            r = np.expand_dims(ins[0], at["axis"])
        elif n == "reshape":
            r = ins[0].reshape(shape(op.results[0]))
        elif n == "trans":
            r = np.transpose(ins[0], at["order"])
        elif n in ("add", "addptr"):
            r = ins[0] + ins[1]
        elif n == "sub":
            r = ins[0] - ins[1]
        elif n == "mul":
            r = ins[0] * ins[1]
        elif n == "div":
            r = np.fix(ins[0] / ins[1]).astype(np.int64)
        elif n == "rem":
            r = np.fmod(ins[0], ins[1])
        elif n == "shl":
            r = ins[0] << ins[1]
        elif n == "shr":
            r = ins[0] >> ins[1]
        elif n == "and":
            r = ins[0] & ins[1]
        elif n == "or":
            r = ins[0] | ins[1]
        elif n == "max":
            r = np.maximum(ins[0], ins[1])
        elif n == "cmp":
            r = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                 "eq": np.equal, "ne": np.not_equal}[at["pred"]](ins[0], ins[1]).astype(np.int64)
        elif n == "select":
            r = np.where(ins[0] != 0, ins[1], ins[2])
        elif n in ("cast", "hint"):
            r = ins[0]
        elif n == "load":
            r = np.random.default_rng(0).integers(-50, 50, size=shape(op.results[0]))
        else:
            raise AssertionError(f"evaluator lacks {n}")
        env[op.results[0]] = np.asarray(r, dtype=np.int64)
    return env


def holds(info: Info, value: np.ndarray) -> str | None:
    """None when ``value`` satisfies every claim of ``info``; else what fails."""
    a = value.reshape(value.shape or (1,))
    for d in range(a.ndim):
        x = np.moveaxis(a, d, -1)
        n = x.shape[-1]
        c, dv, k = info.contiguity[d], info.divisibility[d], info.constancy[d]
        if n % c or n % k:
            return f"dim {d}: run length does not divide {n}"
        runs = x.reshape(x.shape[:-1] + (n // c, c))
        if c > 1 and not (np.diff(runs, axis=-1) == 1).all():
            return f"dim {d}: not contiguous in runs of {c}"
        starts = runs[..., 0]
        if dv < MAX_DIVISIBILITY and (starts % dv).any():
            return f"dim {d}: run starts not divisible by {dv}"
        if dv >= MAX_DIVISIBILITY and starts.any():
            return f"dim {d}: claimed all-zero run starts"
        kr = x.reshape(x.shape[:-1] + (n // k, k))
        if k > 1 and not (kr == kr[..., :1]).all():
            return f"dim {d}: not constant in runs of {k}"
    if info.constant is not None and not (a == info.constant).all():
        return f"claimed constant {info.constant}"
    if info.non_negative and (a < 0).any():
        return "claimed non-negative"
    return None


def random_args(fn, rng):
    """Arguments honouring each ``arg_attrs`` fact (pointers as element addresses)."""
    out = {}
    for a, attrs in zip(fn.args, fn.arg_attrs):
        t = a.type
        if attrs.get("equal_to") == 1:
            out[a.name_hint] = 1
            continue
        div = attrs.get("divisibility", 1)
        if t.is_pointer:
            size = t.pointee.itemsize
            byte = int(rng.integers(1, 1 << 20)) * div
            byte -= byte % size
            out[a.name_hint] = byte // size
        else:
            out[a.name_hint] = int(rng.integers(-(1 << 12), 1 << 12)) * div
    return out


def brute_force(text: str, trials: int = 25, nonneg_args=False, assume=False,
                positive_divisors=False) -> dict:
    """Analyze ``text``'s kernel and check every value's Info on ``trials`` random evaluations;
    returns {name: Info}. ``assume``: analyze with ``assume_non_negative``;
    ``positive_divisors``: with that flag (either way the arguments are drawn non-negative, as
    the assumption requires)."""
    m = parse_module(text)
    verify(m)
    fn = m.functions["k"]
    ai = analyze(fn, assume_non_negative=assume, positive_divisors=positive_divisors)
    nonneg_args = nonneg_args or assume or positive_divisors
    rng = np.random.default_rng(1234)
    names = ai.names()
    checked = 0
    for _ in range(trials * 20):   # draws where an assume is false do not count
        args = random_args(fn, rng)
        if nonneg_args:
            args = {k: abs(v) for k, v in args.items()}
        try:
            env = evaluate(fn, args, pid=int(rng.integers(0, 5000)))
        except Unsatisfied:
            continue
        checked += 1
        if checked > trials:
            break
        for v, val in env.items():
            problem = holds(ai.get(v), val)
            assert problem is None, f"{names[v]} = {ai.get(v)}: {problem}\nargs {args}"
    assert checked >= trials, f"only {checked} draws satisfied the kernel's assumptions"
    return {names[v][1:]: ai.get(v) for v in names}


# -- the kernels --------------------------------------------------------------------------------
VECTOR_ADD = module_text("""
    %pid = program_id {axis = 0} : i32
    %c = constant {value = 1024} : i32
    %base = mul %pid, %c : i32
    %r = make_range {start = 0, end = 1024} : tensor<1024xi32>
    %b = splat %base : tensor<1024xi32>
    %offs = add %b, %r : tensor<1024xi32>
    %ns = splat %n : tensor<1024xi32>
    %mask = cmp %offs, %ns {pred = "lt"} : tensor<1024xi1>
    %xs = splat %x : tensor<1024xptr<f32>>
    %xp = addptr %xs, %offs : tensor<1024xptr<f32>>
    %hs = splat %h : tensor<1024xptr<f16>>
    %hp = addptr %hs, %offs : tensor<1024xptr<f16>>
    %v = load %xp, %mask : tensor<1024xf32>
    return
""", "%x: ptr<f32> {divisibility = 16}, %h: ptr<f16> {divisibility = 16}, "
     "%n: i32 {divisibility = 16}")


def test_vector_add_offsets_mask_and_pointers():
    info = brute_force(VECTOR_ADD)
    assert info["offs"].contiguity == (1024,) and info["offs"].divisibility == (1024,)
    assert info["mask"].constancy == (16,)  # n is a multiple of 16
    assert info["xp"].contiguity == (1024,)
    assert info["xp"].divisibility == (4,)  # 16 bytes = 4 f32 elements
    assert info["hp"].divisibility == (8,)  # 16 bytes = 8 f16 elements
    assert info["v"] == Info((1,), (1,), (1,))  # loads: nothing known


def test_vector_add_helpers_for_backends():
    m = parse_module(VECTOR_ADD)
    fn = m.functions["k"]
    ai = analyze(fn)
    ops = {op.results[0].name_hint: op.results[0] for op in fn.walk() if op.results}
    assert ai.alignment_bytes(ops["xp"]) == 16 and ai.alignment_bytes(ops["hp"]) == 16
    assert ai.vector_elements(ops["xp"]) == 4
    assert ai.vector_elements(ops["hp"], mask=ops["mask"]) == 8
    assert ai.vector_elements(ops["xp"], max_bytes=8) == 2
    assert "%offs: contiguity=[1024], divisibility=[1024], constancy=[1]" in str(ai)


def test_vector_add_without_specialisation_knows_less():
    text = VECTOR_ADD.replace(" {divisibility = 16}", "")
    info = brute_force(text)
    assert info["offs"].contiguity == (1024,)
    assert info["mask"].constancy == (1,)
    assert info["xp"].divisibility == (1,)


OFFSETS_2D = module_text("""
    %rm = make_range {start = 0, end = 32} : tensor<32xi32>
    %rn = make_range {start = 0, end = 64} : tensor<64xi32>
    %row = expand_dims %rm {axis = 1} : tensor<32x1xi32>
    %col = expand_dims %rn {axis = 0} : tensor<1x64xi32>
    %st = splat %stride : tensor<32x1xi32>
    %rs = mul %row, %st : tensor<32x1xi32>
    %rsb = broadcast %rs : tensor<32x64xi32>
    %colb = broadcast %col : tensor<32x64xi32>
    %offs = add %rsb, %colb : tensor<32x64xi32>
    %ps = splat %p : tensor<32x64xptr<f16>>
    %ptrs = addptr %ps, %offs : tensor<32x64xptr<f16>>
    %t = trans %offs {order = [1, 0]} : tensor<64x32xi32>
    %ms = splat %m : tensor<32x1xi32>
    %rmask = cmp %row, %ms {pred = "lt"} : tensor<32x1xi1>
    %mask = broadcast %rmask : tensor<32x64xi1>
    return
""", "%p: ptr<f16> {divisibility = 16}, %stride: i32 {divisibility = 16}, %m: i32")


def test_2d_offsets_row_times_stride_plus_col():
    info = brute_force(OFFSETS_2D)
    assert info["offs"].contiguity == (1, 64)
    assert info["offs"].divisibility[1] == 16
    assert info["ptrs"].contiguity == (1, 64) and info["ptrs"].divisibility[1] == 8
    assert info["t"].contiguity == (64, 1) and info["t"].divisibility[0] == 16
    assert info["mask"].constancy == (1, 64)  # a row mask is constant along the row


def test_2d_without_stride_divisibility():
    info = brute_force(OFFSETS_2D.replace("%stride: i32 {divisibility = 16}", "%stride: i32"))
    assert info["offs"].contiguity == (1, 64) and info["offs"].divisibility[1] == 1


def test_hints_add_facts():
    text = module_text("""
        %q = load %idx : tensor<128xi32>
        %h = hint %q {contiguity = [128], divisibility = [32]} : tensor<128xi32>
        %ps = splat %p : tensor<128xptr<f32>>
        %ptrs = addptr %ps, %h : tensor<128xptr<f32>>
        %hp = hint %ptrs {divisibility = 64} : tensor<128xptr<f32>>
        %k = hint %q {constancy = [8]} : tensor<128xi32>
        return
    """, "%p: ptr<f32> {divisibility = 16}, %idx: tensor<128xptr<i32>>")
    fn = parse_module(text).functions["k"]
    ai = analyze(fn)
    assert ai.named("q") == Info((1,), (1,), (1,))
    assert ai.named("h").contiguity == (128,) and ai.named("h").divisibility == (32,)
    assert ai.named("ptrs").contiguity == (128,) and ai.named("ptrs").divisibility == (4,)
    assert ai.named("hp").divisibility == (16,)  # 64 bytes of f32
    assert ai.named("k").constancy == (8,)


def test_arguments():
    text = module_text("""
        return
    """, "%a: i32 {divisibility = 16}, %b: i64 {equal_to = 1}, %c: i32, %d: ptr<f64> "
         "{divisibility = 16}, %e: ptr<i8> {divisibility = 16}, %f: ptr<f32>, %g: u32")
    ai = analyze(parse_module(text).functions["k"])
    assert ai.named("a") == Info((1,), (16,), (1,))
    assert ai.named("b").constant == 1 and ai.named("b").divisibility == (1,)
    assert ai.named("c") == Info((1,), (1,), (1,))
    assert ai.named("d").divisibility == (2,)
    assert ai.named("e").divisibility == (16,)
    assert ai.named("f").divisibility == (1,)
    assert ai.named("g").non_negative


def test_div_rem_shift_and_mask_patterns():
    text = module_text("""
        %pid = program_id {axis = 0} : i32
        %c = constant {value = 256} : i32
        %base = mul %pid, %c : i32
        %r = make_range {start = 0, end = 256} : tensor<256xi32>
        %bs = splat %base : tensor<256xi32>
        %offs = add %bs, %r : tensor<256xi32>
        %c4 = constant {value = 4} : tensor<256xi32>
        %c64 = constant {value = 64} : tensor<256xi32>
        %c6 = constant {value = 6} : tensor<256xi32>
        %c63 = constant {value = 63} : tensor<256xi32>
        %c2 = constant {value = 2} : tensor<256xi32>
        %q = div %offs, %c4 : tensor<256xi32>
        %m = rem %offs, %c64 : tensor<256xi32>
        %s = shr %offs, %c6 : tensor<256xi32>
        %a = and %offs, %c63 : tensor<256xi32>
        %l = shl %offs, %c2 : tensor<256xi32>
        %m6 = rem %offs, %c6 : tensor<256xi32>
        %d = sub %offs, %r : tensor<256xi32>
        %x = splat %xv : tensor<256xi32>
        %xo = add %x, %r : tensor<256xi32>
        %xq = div %xo, %c4 : tensor<256xi32>
        %xs = shr %xo, %c6 : tensor<256xi32>
        %xa = and %xo, %c63 : tensor<256xi32>
        return
    """, "%xv: i32 {divisibility = 64}")
    info = brute_force(text)
    assert info["q"].constancy == (4,)
    assert info["m"].contiguity == (64,) and info["m"].divisibility == (64,)
    assert info["s"].constancy == (64,)
    assert info["a"].contiguity == (64,)
    assert info["l"].divisibility == (4,) and info["l"].contiguity == (1,)
    assert info["m6"].contiguity == (2,)  # 6 is even: pairs (2j, 2j+1) never straddle
    assert info["d"].constancy == (256,)
    # %xv may be negative: truncating division does not group, floor shift and masking do
    assert info["xq"].constancy == (1,)
    assert info["xs"].constancy == (64,)
    assert info["xa"].contiguity == (64,)


def test_rem_and_div_by_a_runtime_size():
    text = module_text("""
        %pid = program_id {axis = 0} : i32
        %c = constant {value = 64} : i32
        %pb = mul %pid, %c : i32
        %r = make_range {start = 0, end = 64} : tensor<64xi32>
        %ps = splat %pb : tensor<64xi32>
        %offs = add %ps, %r : tensor<64xi32>
        %ns = splat %n : tensor<64xi32>
        %m = rem %offs, %ns : tensor<64xi32>
        %q = div %offs, %ns : tensor<64xi32>
        %ss = splat %s : tensor<64xi32>
        %so = add %ss, %r : tensor<64xi32>
        %sm = rem %so, %ns : tensor<64xi32>
        return
    """, "%n: i32 {divisibility = 16}, %s: i32 {divisibility = 64}")
    info = brute_force(text)
    assert info["m"].contiguity == (16,) and info["m"].divisibility == (16,)
    assert info["q"].constancy == (16,)
    assert info["sm"].contiguity == (1,)  # %s may be negative: remainders are not runs
    info = brute_force(text, assume=True)
    assert info["sm"].contiguity == (16,)


# -- tl.assume -------------------------------------------------------------------------------------
#: Tutorial 03's grouped program ids: ``pid_n = (pid % num_pid_in_group) // group_size_m`` may be
#: negative as far as the rules know (``group_size_m`` is a runtime value), so ``% N`` of the
#: column offsets keeps no runs -- until ``tl.assume(pid_n >= 0)``.
GROUPED_COLUMNS = """
    %pid = program_id {axis = 0} : i32
    %g = rem %pid, %npg : i32
    %pid_n = div %g, %gsm : i32
    %c64 = constant {value = 64} : i32
    %r = make_range {start = 0, end = 64} : tensor<64xi32>
    %ns = splat %n : tensor<64xi32>
    %pb0 = mul %pid_n, %c64 : i32
    %ps0 = splat %pb0 : tensor<64xi32>
    %offs0 = add %ps0, %r : tensor<64xi32>
    %early = rem %offs0, %ns : tensor<64xi32>
    %c0 = constant {value = 0} : i32
    %ok = cmp %pid_n, %c0 {pred = "ge"} : i1
    assume %ok
    %pb = mul %pid_n, %c64 : i32
    %ps = splat %pb : tensor<64xi32>
    %offs = add %ps, %r : tensor<64xi32>
    %late = rem %offs, %ns : tensor<64xi32>
    return
"""
GROUPED_PARAMS = "%npg: i32, %gsm: i32, %n: i32 {divisibility = 16}"


def test_assume_non_negative_gives_the_remainder_its_runs():
    info = brute_force(module_text(GROUPED_COLUMNS, GROUPED_PARAMS))
    assert info["pid_n"].non_negative  # from the assume on
    assert info["late"].contiguity == (16,) and info["late"].divisibility == (16,)
    assert info["early"].contiguity == (1,)  # computed before the promise: not sharpened
    without = module_text(GROUPED_COLUMNS.replace("    assume %ok\n", ""), GROUPED_PARAMS)
    info = brute_force(without)
    assert not info["pid_n"].non_negative and info["late"].contiguity == (1,)


def test_positive_divisors_give_grouped_ids_their_sign_and_the_remainder_its_runs():
    """The assumption the layout passes make for access addresses (naiad.gpu.axis): a run-time
    divisor is positive, so ``(pid % npg) // gsm`` is non-negative without the assume, and
    ``% N`` of the columns keeps runs of 16 -- checked by evaluation with positive divisors."""
    without = module_text(GROUPED_COLUMNS.replace("    assume %ok\n", ""), GROUPED_PARAMS)
    info = brute_force(without, positive_divisors=True)
    assert info["pid_n"].non_negative
    assert info["late"].contiguity == (16,) and info["late"].divisibility == (16,)
    assert info["early"].contiguity == (16,)


#: An index negative by construction (program 0 reads 64 elements before ``x + 64``): no
#: divisor's sign is involved, so the remainder keeps no runs even under ``positive_divisors``.
SHIFTED_COLUMNS = """
    %pid = program_id {axis = 0} : i32
    %c64 = constant {value = 64} : i32
    %r = make_range {start = 0, end = 64} : tensor<64xi32>
    %pb = mul %pid, %c64 : i32
    %low = sub %pb, %c64 : i32
    %ps = splat %low : tensor<64xi32>
    %i = add %ps, %r : tensor<64xi32>
    %ns = splat %n : tensor<64xi32>
    %wrapped = rem %i, %ns : tensor<64xi32>
    %neg = constant {value = -64} : i32
    %q = div %pb, %neg : i32
    return
"""


def test_positive_divisors_leave_negative_indices_and_constant_divisors_alone():
    info = brute_force(module_text(SHIFTED_COLUMNS, "%n: i32 {divisibility = 16}"),
                       positive_divisors=True)
    assert not info["i"].non_negative and info["wrapped"].contiguity == (1,)
    assert not info["q"].non_negative  # a constant divisor keeps its own sign
    assume_all = analyze(parse_module(module_text(SHIFTED_COLUMNS, "%n: i32 {divisibility = 16}"))
                         .functions["k"], assume_non_negative=True)
    assert assume_all.named("wrapped").contiguity == (16,)  # what Triton's analysis would say


@pytest.mark.parametrize("cond,nonneg", [
    ('%c = cmp %x, %c0 {pred = "ge"} : i1', True),       # x >= 0
    ('%c = cmp %c0, %x {pred = "le"} : i1', True),       # 0 <= x
    ('%c = cmp %x, %c0 {pred = "gt"} : i1', True),       # x > 0
    ('%c = cmp %c0, %x {pred = "lt"} : i1', True),       # 0 < x
    ('%c = cmp %x, %c5 {pred = "ge"} : i1', True),       # x >= 5
    ('%c = cmp %x, %cm1 {pred = "gt"} : i1', True),      # x > -1
    ('%c = cmp %x, %cm1 {pred = "ge"} : i1', False),     # x >= -1
    ('%c = cmp %x, %y {pred = "ge"} : i1', False),       # x >= y, y of unknown sign
    ('%c = cmp %x, %pid {pred = "gt"} : i1', True),      # x > a program id
    ('%c = cmp %x, %c0 {pred = "le"} : i1', False),      # x <= 0 says nothing of the kind
    ('%c = cmp %x, %c0 {pred = "ne"} : i1', False),
    ('%c1 = cmp %x, %c0 {pred = "ge"} : i1\n%c2 = cmp %y, %c5 {pred = "gt"} : i1\n'
     '%c = and %c1, %c2 : i1', True),                    # (x >= 0) & (y > 5): both
])
def test_assume_forms(cond, nonneg):
    body = """
        %pid = program_id {axis = 0} : i32
        %c0 = constant {value = 0} : i32
        %c5 = constant {value = 5} : i32
        %cm1 = constant {value = -1} : i32
        COND
        assume %c
        %xs = splat %x : tensor<64xi32>
        %r = make_range {start = 0, end = 64} : tensor<64xi32>
        %o = add %xs, %r : tensor<64xi32>
        %ns = splat %n : tensor<64xi32>
        %m = rem %o, %ns : tensor<64xi32>
        return
    """.replace("COND", cond.replace("\n", "\n        "))
    info = brute_force(module_text(body, "%x: i32 {divisibility = 16}, %y: i32, "
                                         "%n: i32 {divisibility = 16}"))
    assert info["x"].non_negative == nonneg
    assert info["m"].contiguity == ((16,) if nonneg else (1,))
    if "%y, %c5" in cond:
        assert info["y"].non_negative


def test_assume_inside_a_branch_holds_only_there():
    text = module_text("""
        %c0 = constant {value = 0} : i32
        %r = make_range {start = 0, end = 64} : tensor<64xi32>
        %ns = splat %n : tensor<64xi32>
        %cond = cmp %n, %c0 {pred = "gt"} : i1
        %s = if %cond : tensor<64xi32> {
          %ok = cmp %x, %c0 {pred = "ge"} : i1
          assume %ok
          %xs = splat %x : tensor<64xi32>
          %o = add %xs, %r : tensor<64xi32>
          %inside = rem %o, %ns : tensor<64xi32>
          yield %inside
        } {
          yield %r
        }
        %xs2 = splat %x : tensor<64xi32>
        %o2 = add %xs2, %r : tensor<64xi32>
        %after = rem %o2, %ns : tensor<64xi32>
        return
    """, "%x: i32 {divisibility = 16}, %n: i32 {divisibility = 16}")
    ai = analyze(parse_module(text).functions["k"])
    assert ai.named("inside").contiguity == (16,)
    assert ai.named("after").contiguity == (1,)
    assert not ai.named("x").non_negative


def test_select_cmp_reshape_and_casts():
    text = module_text("""
        %r = make_range {start = 0, end = 128} : tensor<128xi32>
        %ns = splat %n : tensor<128xi32>
        %lt = cmp %r, %ns {pred = "lt"} : tensor<128xi1>
        %le = cmp %r, %ns {pred = "le"} : tensor<128xi1>
        %gt = cmp %ns, %r {pred = "gt"} : tensor<128xi1>
        %ge = cmp %r, %ns {pred = "ge"} : tensor<128xi1>
        %z = constant {value = 0} : tensor<128xi32>
        %big = constant {value = 96} : tensor<128xi32>
        %sh = add %r, %big : tensor<128xi32>
        %sel = select %lt, %r, %sh : tensor<128xi32>
        %selz = select %lt, %r, %z : tensor<128xi32>
        %two = reshape %r : tensor<4x32xi32>
        %unsq = reshape %r : tensor<1x128xi32>
        %w = cast %r : tensor<128xi64>
        %nw = cast %r : tensor<128xi16>
        return
    """, "%n: i32 {divisibility = 32}")
    info = brute_force(text)
    assert info["lt"].constancy == (32,) and info["ge"].constancy == (32,)
    assert info["gt"].constancy == (32,)
    assert info["le"].constancy == (1,)  # flips after n, not at a multiple of 32
    assert info["sel"].contiguity == (32,) and info["sel"].divisibility == (32,)
    assert info["selz"].contiguity == (1,)  # zeros where the mask is off: no runs
    assert info["unsq"].contiguity == (1, 128)
    assert info["w"].contiguity == (128,)
    assert info["sh"].contiguity == (128,) and info["sh"].divisibility == (32,)
    assert info["two"].contiguity == (1, 1)  # conservative


# -- loops ---------------------------------------------------------------------------------------
def test_for_loop_induction_variable_and_pointer_advancing_by_a_block():
    text = module_text("""
        %c0 = constant {value = 0} : i32
        %c32 = constant {value = 32} : i32
        %r = make_range {start = 0, end = 32} : tensor<32xi32>
        %ps = splat %p : tensor<32xptr<f32>>
        %ptrs = addptr %ps, %r : tensor<32xptr<f32>>
        %step = splat %c32 : tensor<32xi32>
        %out, %acc = for %c0, %n, %c32, %ptrs, %c0 : tensor<32xptr<f32>>, i32 {
        ^(%k: i32, %pp: tensor<32xptr<f32>>, %a: i32):
          %ks = splat %k : tensor<32xi32>
          %kk = add %ks, %r : tensor<32xi32>
          %next = addptr %pp, %step : tensor<32xptr<f32>>
          %a1 = add %a, %k : i32
          yield %next, %a1
        }
        %bad, %b2 = for %c0, %n, %c32, %ptrs, %c0 : tensor<32xptr<f32>>, i32 {
        ^(%k2: i32, %pp2: tensor<32xptr<f32>>, %z: i32):
          %one = constant {value = 1} : tensor<32xi32>
          %next2 = addptr %pp2, %one : tensor<32xptr<f32>>
          %z1 = add %z, %k2 : i32
          yield %next2, %z1
        }
        return
    """, "%p: ptr<f32> {divisibility = 16}, %n: i32")
    ai = analyze(parse_module(text).functions["k"])
    assert ai.named("k").divisibility == (32,)
    assert ai.named("kk").contiguity == (32,) and ai.named("kk").divisibility == (32,)
    assert ai.named("pp").contiguity == (32,) and ai.named("pp").divisibility == (4,)
    assert ai.named("out").contiguity == (32,) and ai.named("out").divisibility == (4,)
    assert ai.named("a").divisibility == (32,)  # 0 plus multiples of 32
    # a pointer moving by one element keeps contiguity but loses its alignment
    assert ai.named("pp2").contiguity == (32,) and ai.named("pp2").divisibility == (1,)
    assert ai.named("bad").divisibility == (1,)


def test_while_and_if_join_their_inputs():
    text = module_text("""
        %c0 = constant {value = 0} : i32
        %c16 = constant {value = 16} : i32
        %c8 = constant {value = 8} : i32
        %w = while %c0 : i32 {
        ^(%i: i32):
          %c = cmp %i, %n {pred = "lt"} : i1
          condition %c, %i
        } {
        ^(%j: i32):
          %j2 = add %j, %c16 : i32
          yield %j2
        }
        %cond = cmp %n, %c0 {pred = "gt"} : i1
        %s = if %cond : i32 {
          yield %c16
        } {
          yield %c8
        }
        return
    """, "%n: i32")
    ai = analyze(parse_module(text).functions["k"])
    assert ai.named("i").divisibility == (16,) and ai.named("w").divisibility == (16,)
    assert ai.named("s").divisibility == (8,) and ai.named("s").constant is None


def test_pow2_divisor():
    assert [pow2_divisor(n) for n in (1, 2, 3, 12, -48, 1 << 40)] == [1, 2, 1, 4, 16, MAX_DIVISIBILITY]
    assert pow2_divisor(0) == MAX_DIVISIBILITY


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("AXIS_SEEDS", 6))))
def test_random_index_expressions_claims_hold(seed):
    """Random chains of index arithmetic on ranges and specialised scalars: every claim the
    analysis makes must hold on the evaluated values."""
    rng = np.random.default_rng(seed)
    n = 64
    lines = ["%r = make_range {start = 0, end = 64} : tensor<64xi32>",
             "%pid = program_id {axis = 0} : i32",
             "%ps = splat %pid : tensor<64xi32>",
             "%as = splat %a : tensor<64xi32>"]
    names = ["%r", "%ps", "%as"]
    for i in range(12):
        op = rng.choice(["add", "sub", "mul", "div", "rem", "shl", "shr", "and", "max", "cmp",
                         "select"])
        x = rng.choice(names)
        cval = int(rng.choice([1, 2, 3, 4, 8, 16, 32, 63, 64]))
        lines.append(f"%k{i} = constant {{value = {cval}}} : tensor<{n}xi32>")
        if op in ("div", "rem", "shl", "shr", "and"):
            if op in ("shl", "shr"):
                lines[-1] = f"%k{i} = constant {{value = {cval % 5}}} : tensor<{n}xi32>"
            y = f"%k{i}"
        else:
            y = rng.choice(names + [f"%k{i}"])
        if op == "cmp":
            pred = rng.choice(["lt", "le", "gt", "ge"])
            lines.append(f'%c{i} = cmp {x}, {y} {{pred = "{pred}"}} : tensor<{n}xi1>')
            lines.append(f"%v{i} = select %c{i}, {x}, {y} : tensor<{n}xi32>")
        elif op == "select":
            lines.append(f'%c{i} = cmp {x}, %as {{pred = "lt"}} : tensor<{n}xi1>')
            lines.append(f"%v{i} = select %c{i}, {x}, {y} : tensor<{n}xi32>")
        else:
            lines.append(f"%v{i} = {op} {x}, {y} : tensor<{n}xi32>")
        names.append(f"%v{i}")
    lines.append("return")
    text = module_text("\n".join(lines), "%a: i32 {divisibility = 16}")
    brute_force(text, trials=10)
    brute_force(text, trials=10, nonneg_args=True)
