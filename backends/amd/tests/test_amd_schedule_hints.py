"""The ``schedule_hint`` option: the ``insert_schedule_hints`` pass (IR text) and its lowering to
AMDGPU scheduling intrinsics."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad_amd.passes.schedule_hints import insert_schedule_hints


@naiad.jit
def _row_sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def _compile(**opts):
    return naiad.compile(_row_sums, signature=_SIG, constexprs={"BLOCK": 256}, target="amd:gfx942",
                         options=opts)


def test_pass_opens_the_loop_body_with_the_hint():
    module = parse_module(_compile().asm["tile"])
    before = print_module(module)
    assert insert_schedule_hints(module, hint="none") is False and print_module(module) == before
    assert insert_schedule_hints(module, hint="local-prefetch") is True
    verify(module)
    text = print_module(module)
    body = text[text.index("for "):]
    first_op = [ln.strip() for ln in body.splitlines()[1:] if ln.strip() and not ln.strip().startswith("^")][0]
    assert first_op.startswith("amd.sched_hint") and 'variant = "local-prefetch"' in first_op
    assert text.count("amd.sched_hint") == 1
    assert insert_schedule_hints(module, hint="local-prefetch") is False  # already there
    assert print_module(parse_module(text)) == text  # round-trips through the parser


def test_no_loop_no_hint():
    @naiad.jit
    def straight(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)

    k = naiad.compile(straight, signature={"x_ptr": "*fp32"}, constexprs={"BLOCK": 64}, target="amd:gfx942",
                      options={"schedule_hint": "attention"})
    assert "amd.sched_hint" not in k.asm["gpu"] and "iglp" not in k.asm["llir"]


@pytest.mark.parametrize("hint, llvm_calls", [
    ("attention", [r'@"llvm\.amdgcn\.iglp\.opt"\(i32 2\)']),
    ("local-prefetch", [r'barrier"\(i32 256, i32 256, i32 0\)', r'barrier"\(i32 1, i32 256, i32 0\)']),
    ("memory-bound-attention", [r'barrier"\(i32 32, i32 256, i32 0\)', r'barrier"\(i32 10, i32 4, i32 0\)']),
])
def test_hint_reaches_llvm_and_amdgcn(hint, llvm_calls):
    k = _compile(schedule_hint=hint)
    assert 'amd.sched_hint' in k.asm["gpu"]
    for pattern in llvm_calls:
        assert re.search(pattern, k.asm["llir"]), pattern
    asm = k.asm["amdgcn"]
    # LLVM keeps the markers in the machine code as comments
    assert re.search(r"; (sched_group_barrier|iglp_opt) mask\(0x", asm)
    plain = _compile().asm
    assert "sched.group" not in plain["llir"] and "iglp" not in plain["llir"]
