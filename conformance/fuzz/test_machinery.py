"""Tests of the fuzz tier's own parts: the generator's determinism and coverage, the comparison,
the known-divergence table and the reducer (on a planted fault)."""
from __future__ import annotations

import numpy as np
import pytest

from . import dtypes as dt
from . import runner
from .divergences import known_reasons
from .generator import INEXACT, LOOP_INDEX, Expr, Generator, generate
from .reducer import reduce_program
from .seeds import parse_seeds

#: constructs the generator must reach within seeds 0:300 (docs/conformance.md lists them)
FEATURES = ["tl.dot(", "input_precision", "tl.cumsum(", "tl.cumprod(", "tl.associative_scan(",
            "tl.reduce(", "tl.sum(", "tl.max(", "tl.min(", "tl.argmax(", "tl.argmin(",
            "tl.xor_sum(", "keep_dims=True", "reverse=True", "tl.atomic_add(", "tl.atomic_max(",
            "tl.atomic_min(", "tl.atomic_and(", "tl.atomic_or(", "tl.atomic_xor(",
            "tl.atomic_xchg(", "tl.atomic_cas(", "bitcast=True", 'fp_downcast_rounding="rtz"',
            "tl.umulhi(", "tl.fma(", "tl.where(", "propagate_nan", "tl.exp(", "tl.log(",
            "tl.sqrt(", "tl.sin(", "tl.erf(", "tl.floor(", "tl.sigmoid(", "tl.split(",
            "tl.join(", "tl.interleave(", "tl.permute(", "tl.trans(", "tl.reshape(",
            "tl.expand_dims(", "tl.broadcast_to(", "while ", "tl.static_range(",
            "tl.range(", "range(k)", "if k > 2", "if tl.max(", "def helper", "S: tl.constexpr",
            " // ", " % ", " << ", " >> ", " ^ ", "~", 'other=float("nan")', "tl.bfloat16",
            "tl.float16", "tl.float64", "tl.uint64", "tl.int1", "tl.int8", "per_program",
            "tl.program_id(0)"]


def test_a_seed_always_gives_the_same_kernel_and_inputs():
    a, b = generate(123), generate(123)
    assert a.source() == b.source()
    for x, y in zip(runner.make_arguments(a), runner.make_arguments(b)):
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes()
        else:
            assert x == y
    assert generate(124).source() != a.source()


def test_the_generator_covers_the_language():
    text = "\n".join(generate(s).source() for s in range(300))
    missing = [f for f in FEATURES if f not in text]
    assert not missing, f"never generated in seeds 0:300: {missing}"


def test_inputs_are_never_all_zero_and_carry_edge_values():
    values = np.concatenate([runner.random_values(np.random.default_rng(s), "float32", 256, True)
                             for s in range(4)])
    assert np.isnan(values).any() and np.isinf(values).any()
    assert np.count_nonzero(values) > values.size // 2


@pytest.mark.parametrize("dtype, have, want, bad", [
    ("int32", [1, 2, 3], [1, 2, 4], [2]),
    ("uint8", [255, 0], [255, 0], []),
    ("float32", [np.nan, 1.0], [0.0, 1.0], [0]),
    ("float32", [np.inf, 1.0], [-np.inf, 1.0], [0]),
    ("float32", [1.0, 2.0], [1.0 + 1e-7, 2.0], []),
    ("float32", [1.0, 2.0], [1.01, 2.0], [0]),
    ("float16", [1.0, np.nan], [1.001, np.nan], []),
])
def test_comparison_is_exact_for_ints_and_within_tolerance_for_floats(dtype, have, want, bad):
    npd = np.dtype(dtype)
    got = runner.differing(dtype, np.array(have, npd), np.array(want, npd), False)
    assert list(got) == bad


def test_a_failure_is_known_only_for_the_peers_its_tag_names():
    outcome = runner.Outcome("mismatch", "cnt0 differs")
    assert known_reasons({"float_overflow_order"}, "simt:w8", outcome)
    assert not known_reasons({"float_overflow_order"}, "reference", outcome)
    assert not known_reasons(set(), "simt", outcome)


def test_seed_ranges():
    assert list(parse_seeds("3:6")) == [3, 4, 5]
    assert list(parse_seeds("7")) == [7]
    with pytest.raises(ValueError, match="empty"):
        parse_seeds("6:3")


def test_the_reducer_shrinks_a_planted_fault_and_keeps_it(monkeypatch):
    """A fake peer that returns the reference's results plus one wherever the kernel has a
    cumsum: the reduced kernel must still contain a cumsum and be much smaller."""
    real = runner.run_naiad

    def faulty(p, target, which_poison=0):
        out = real(p, "reference", which_poison)
        if target != "reference" and "tl.cumsum(" in p.source():
            first = next(i for i, b in enumerate(p.buffers) if b.role == "output")
            out[first] = out[first] + np.ones((), out[first].dtype)
        return out

    monkeypatch.setattr(runner, "run_naiad", faulty)
    seed = next(s for s in range(1000) if "tl.cumsum(" in generate(s, max_stmts=12).source()
                and len(generate(s).stmts) >= 8 and "int" in
                next(b.dtype for b in generate(s).buffers if b.role == "output"))
    program = generate(seed)
    outcome = runner.run_case(program, "simt")
    assert outcome.status == "mismatch", outcome
    small = reduce_program(program, "simt", outcome, budget=80)
    assert "tl.cumsum(" in small.source()
    assert runner.run_case(small, "simt").status == "mismatch"
    live = [s for s in small.stmts if s.kind != "const"]
    assert len(live) < len(program.stmts) and len(live) <= 3, small.source()


@pytest.mark.parametrize("a,b,want", [("int32", "bfloat16", "float32"),
                                      ("int1", "bfloat16", "float32"), ("bfloat16", "bfloat16", "bfloat16"),
                                      ("float16", "bfloat16", "float16"),
                                      ("int64", "float16", "float16"), ("int8", "uint32", "uint32")])
def test_generator_promotion_follows_the_language_rules(a, b, want):
    """The generator's dtype model (docs/language.md, "Type promotion"): a wrong model gives
    if-branches of two types, which the frontend rejects."""
    assert dt.promote(a, b) == want and dt.promote(b, a) == want


def test_k_is_never_the_specialised_one():
    """k == 1 would be a weakly typed constant in the kernel, not the int32 the model assumes."""
    assert all(generate(seed).k != 1 for seed in range(60))


@pytest.mark.parametrize("dtype,largest,subnormal", [
    ("bfloat16", 3.3895313892515355e38, 2.0**-133),
    ("float16", 65504.0, 2.0**-24)])
def test_edge_values_of_half_types(dtype, largest, subnormal):
    """bf16 edge values come from ml_dtypes.finfo (numpy's finfo rejects bfloat16 with some
    ml_dtypes versions: H200 run, 31 seeds)."""
    edges = runner._edges(dtype)
    assert largest in edges and -largest in edges and subnormal in edges


def test_an_inexact_float_cast_to_an_integer_is_discontinuous_anywhere():
    """Seed 10893 on the H200: ``tl.exp(p1).to(tl.uint64)`` inside a helper, 2 ulp off, was an
    untagged mismatch: the plain float -> int cast did not add the tag, and a helper's
    parameters did not carry the caller's hazards."""
    g = Generator(0)
    inexact = Expr("x", "float32", frozenset({INEXACT}))
    assert "float_discontinuity" in g.cast_to(inexact, "uint64").hazards
    assert "float_discontinuity" in g.cast_to(inexact, "int1").hazards
    assert "float_discontinuity" not in g.cast_to(inexact, "float16").hazards
    assert "float_discontinuity" not in g.cast_to(Expr("y", "float32"), "int32").hazards
    p = generate(10893)
    helper = next(body for _, body in p.helpers)
    assert "tl.exp(" in helper and ".to(tl.uint64)" in helper   # still the seed's construct
    assert "float_discontinuity" in runner.effective_hazards(p)
    outcome = runner.Outcome("mismatch", "out1 (uint64) differs")
    assert known_reasons(runner.effective_hazards(p), "nvidia", outcome)


def test_helper_parameters_carry_the_arguments_hazards():
    """A helper computes on its parameters as the caller would on the arguments: whichever
    parameter the helper's body reads, the call statement carries that argument's tags."""
    from .statements import Ctx

    calls = 0
    for seed in range(200):
        ctx = Ctx(Generator(seed), 1, 1, 32)
        ctx.pool = [Expr("a", "float32", frozenset({"tag_a"})),
                    Expr("b", "int16", frozenset({"tag_b"}))]
        ctx.stmt_call()
        if not ctx.stmts:
            continue
        calls += 1
        body, stmt = ctx.g.helpers[-1][1], ctx.stmts[-1]
        args = stmt.lines[0].split("(", 1)[1].split(", ")[:2]       # helperN(x, y, S)
        for param, arg in zip(("p0", "p1"), args):
            tag = {"a": "tag_a", "b": "tag_b"}[arg]
            assert (param in body.split("\n", 1)[1]) <= (tag in stmt.hazards), body
    assert calls > 100


def test_a_loop_index_next_to_a_narrow_integer_is_tagged_for_triton_only():
    """Triton's interpreter types a range index as a Python int (u8 + i stays u8); compiled
    Triton and naiad as int32 (seeds 21285, 22835). The mark stays on the index itself."""
    idx = Expr("i", "int32", frozenset({LOOP_INDEX}), scalar=True)
    for d, tagged in (("uint8", True), ("int16", True), ("int32", False), ("uint64", False),
                      ("float16", False)):
        h = Generator._h(Expr("x", d), idx)
        assert ("loop_index_weak" in h) == tagged, d
        assert LOOP_INDEX not in h
    for seed in (21285, 22835):
        assert "loop_index_weak" in runner.effective_hazards(generate(seed))
    error = runner.Outcome("error", "triton InterpreterError: TypeError('Cannot use /')")
    assert known_reasons({"loop_index_weak"}, "triton", error)
    assert not known_reasons({"loop_index_weak"}, "nvidia", error)
    assert not known_reasons({"loop_index_weak"}, "simt", error)


def test_a_signed_shift_to_uint64_is_tagged():
    """Triton's interpreter keeps int64 >> uint64 as numpy int64 (seeds 20204, 22981)."""
    for seed in (20204, 22981):
        p = generate(seed)
        assert "signed_shift_to_uint64" in p.hazards
    assert all("signed_shift_to_uint64" not in generate(s).hazards or " >> " in generate(s).source()
               for s in range(20000, 20100))


def test_a_nan_the_kernel_computes_counts_for_float_atomic_minmax():
    """Seed 24135 (--avoid-known, Triton peer): (x / v) / v with v == 0 gave a NaN that the
    reference's atomic_max stored and Triton's ignored, on inputs without edge values."""
    from .divergences import known_tags

    p = generate(24135, avoid=known_tags("triton"))
    assert "float_atomic_minmax" in p.hazards and not runner.has_edge_values(p)
    assert " / " in p.source()
    assert "atomic_minmax_nan" in runner.effective_hazards(p)
