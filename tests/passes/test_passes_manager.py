"""PassManager and the generic pipeline: order, timings, dumps, debug verification."""
from __future__ import annotations

import io

import pytest

from passes_testutil import module_text
from naiad.errors import IRError
from naiad.ir.core import Operation
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad.passes import (GENERIC_PIPELINE, PassManager, generic_pipeline, run_generic_pipeline)
from naiad.passes.manager import parse_dump_spec

SRC = module_text("""
    %c = constant {value = 2} : i32
    %d = constant {value = 3} : i32
    %e = mul %c, %d : i32
    %v = load %p : i32
    %s = add %v, %e : i32
    store %p, %s
    return
""", "%p: ptr<i32>")


def test_passes_run_in_order_with_timings():
    seen = []

    def first(module, ctx):
        seen.append(("first", ctx.pipeline, ctx.options))
        return True

    def second(module, ctx):
        seen.append(("second", ctx.pipeline, ctx.options))

    pm = PassManager("mine", [first, ("renamed", second)], dump="", debug=False, timing=False)
    m = parse_module(SRC)
    assert pm.run(m, options={"k": 1}) is m
    assert seen == [("first", "mine", {"k": 1}), ("second", "mine", {"k": 1})]
    assert [t.name for t in pm.timings] == ["first", "renamed"]
    assert pm.timings[0].changed is True and pm.timings[1].changed is None
    assert all(t.seconds >= 0 for t in pm.timings)
    report = pm.timing_report()
    assert "first" in report and "renamed" in report and "pipeline mine" in report


def test_non_callable_pass_is_rejected():
    with pytest.raises(TypeError):
        PassManager("bad", [42])


def test_dump_spec_parsing():
    before, after, every = parse_dump_spec("tile, before:canonicalize,after:cse, all-passes,llir")
    assert before == {"canonicalize"} and after == {"cse"} and every


def test_dump_before_and_after_named_passes():
    out = io.StringIO()
    pm = generic_pipeline()
    pm = PassManager("generic", pm.passes, dump="before:canonicalize,after:generic/dce",
                     debug=False, timing=False, dump_stream=out)
    pm.run(parse_module(SRC))
    text = out.getvalue()
    assert text.count("naiad IR before pass canonicalize") == 2
    assert text.count("naiad IR after pass dce (8/8, generic)") == 1
    assert "after pass cse" not in text
    # the dump before the first canonicalize still shows the unfolded multiplication
    first = text.split("// -----")[1]
    assert "mul" in first


def test_dump_all_passes_from_environment(monkeypatch):
    monkeypatch.setenv("NAIAD_DUMP", "all-passes")
    out = io.StringIO()
    pm = PassManager("p", generic_pipeline().passes, debug=False, timing=False, dump_stream=out)
    pm.run(parse_module(SRC))
    assert out.getvalue().count("// ----- naiad IR") == len(GENERIC_PIPELINE) + 1


def test_timing_printed_when_asked(monkeypatch, capsys):
    monkeypatch.setenv("NAIAD_PASS_TIMING", "1")
    run_generic_pipeline(parse_module(SRC))
    err = capsys.readouterr().err
    assert "pass timings, pipeline generic" in err and "licm" in err


def _breaker(module, ctx):
    """A buggy pass: uses a value before it is defined."""
    fn = module.functions["k"]
    block = fn.body.block
    late = block.ops[-2]  # the store
    bad = Operation("add", [late.operands[1], late.operands[1]], [late.operands[1].type])
    block.insert(0, bad)


def test_debug_mode_names_the_pass_that_broke_the_ir(monkeypatch):
    pm = PassManager("dbg", [("fine", lambda m, c: None), ("breaker", _breaker)], debug=True,
                     dump="", timing=False)
    with pytest.raises(IRError, match=r"invalid IR after pass breaker \(2/2, dbg\)"):
        pm.run(parse_module(SRC))
    monkeypatch.setenv("NAIAD_DEBUG", "1")
    pm = PassManager("dbg", [_breaker], dump="", timing=False)
    with pytest.raises(IRError, match="after pass _breaker"):
        pm.run(parse_module(SRC))
    monkeypatch.setenv("NAIAD_DEBUG", "0")
    PassManager("dbg", [_breaker], dump="", timing=False).run(parse_module(SRC))  # no check


def test_debug_mode_checks_the_input_too():
    m = parse_module(SRC)
    _breaker(m, None)
    with pytest.raises(IRError, match="invalid IR after the pipeline's input"):
        PassManager("dbg", [], debug=True, dump="", timing=False).run(m)


def test_generic_pipeline_order_and_result():
    assert GENERIC_PIPELINE == ("inline", "canonicalize", "unroll", "cse", "licm", "canonicalize",
                                "cse", "dce")
    m = parse_module(SRC)
    out = run_generic_pipeline(m, {"debug": True})
    assert out is m
    verify(m)
    text = print_module(m)
    assert "mul" not in text and "constant {value = 6}" in text


KERNEL = module_text("""
    %pid = program_id {axis = 0} : i32
    %c0 = constant {value = 0} : i32
    %c1 = constant {value = 1} : i32
    %bk = constant {value = 32} : i32
    %r = make_range {start = 0, end = 32} : tensor<32xi32>
    %zero = constant {value = 0.0} : tensor<32xf32>
    %acc = for %c0, %n, %bk, %zero : tensor<32xf32> {
    ^(%k: i32, %a: tensor<32xf32>):
      %bs = mul %pid, %bk : i32
      %bb = splat %bs : tensor<32xi32>
      %offs = add %bb, %r : tensor<32xi32>
      %ks = splat %k : tensor<32xi32>
      %o2 = add %offs, %ks : tensor<32xi32>
      %ps = splat %x : tensor<32xptr<f32>>
      %ptrs = addptr %ps, %o2 : tensor<32xptr<f32>>
      %v = load %ptrs : tensor<32xf32>
      %s = call %v, %v {callee = "mix"} : tensor<32xf32>
      %a2 = add %a, %s : tensor<32xf32>
      yield %a2
    }
    %bs2 = mul %pid, %bk : i32
    %bb2 = splat %bs2 : tensor<32xi32>
    %offs2 = add %bb2, %r : tensor<32xi32>
    %ys = splat %y : tensor<32xptr<f32>>
    %yp = addptr %ys, %offs2 : tensor<32xptr<f32>>
    store %yp, %acc
    return
""", "%x: ptr<f32>, %y: ptr<f32>, %n: i32", extra="""
func @mix(%a: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<32xf32>) attributes {kernel = false} {
  %one = constant {value = 1} : i32
  %m = mul %a, %b : tensor<32xf32>
  return %m
}
""")


def test_pipeline_on_a_loop_kernel_hoists_merges_and_is_idempotent():
    m = parse_module(KERNEL)
    run_generic_pipeline(m, {"debug": True})
    fn = m.functions["k"]
    assert list(m.functions) == ["k"]
    loop = next(op for op in fn.body.block.ops if op.name == "for")
    body = [op.name for op in loop.regions[0].block.ops]
    # the invariant base offsets and pointer splat left the loop; the load stayed
    assert "load" in body and "program_id" not in body and body.count("mul") == 1
    top = [op.name for op in fn.body.block.ops]
    assert top.count("program_id") == 1 and top.count("make_range") == 1
    # the offsets after the loop are the hoisted ones (CSE after LICM)
    base_splats = [op for op in fn.walk() if op.name == "splat" and op.operands[0].defining_op
                   is not None and op.operands[0].defining_op.name == "mul"]
    assert len(base_splats) == 1 and base_splats[0].parent is fn.body.block
    once = print_module(m)
    run_generic_pipeline(m)
    assert print_module(m) == once


def test_partial_ir_pass_defers_verification_to_the_next_pass():
    """A pass marked ``leaves_partial_ir`` is not checked on its own; the next pass's check
    still catches IR that nothing completed."""
    from naiad.errors import IRError
    from naiad.passes.manager import PassManager

    calls = []

    def break_it(module, ctx):
        calls.append("break")
        fn = next(iter(module.functions.values()))
        fn.body.block.ops[-1].erase()  # drop the terminator

    def noop(module, ctx):
        calls.append("noop")

    break_it.leaves_partial_ir = True
    module = parse_module("func @f() {\n  return\n}\n")
    pm = PassManager("t", [("break_it", break_it), ("noop", noop)], debug=True)
    with pytest.raises(IRError, match="after pass noop"):
        pm.run(module)
    assert calls == ["break", "noop"]
