"""``tl.atomic_poll`` on the GPU targets: a spin loop of relaxed atomic loads, the acquire fence
only with ``sem="acquire"``, and the target's global timer only when a timeout is given."""
import re

import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError


@naiad.jit
def poll_flag(flag, out, expected, SEM: tl.constexpr, SCOPE: tl.constexpr = "gpu"):
    tl.atomic_poll(flag, expected, sem=SEM, scope=SCOPE)
    tl.store(out, 1)


@naiad.jit
def poll_with_timeout(flag, out, timeout):
    offs = tl.arange(0, 4)
    tl.store(out + offs, tl.atomic_poll(flag + offs, 1, timeout_ns=timeout))


@pytest.mark.parametrize("sem", ["acquire", "relaxed"])
@pytest.mark.parametrize("scope", ["cta", "gpu", "sys"])
def test_nvidia_poll_is_one_relaxed_load_in_a_loop(sem, scope):
    ptx = naiad.compile(poll_flag, signature="*i32,*i32,i32",
                        constexprs={"SEM": sem, "SCOPE": scope}, target="nvidia:sm_90").asm["ptx"]
    assert ptx.count(f"ld.relaxed.{scope}.global.b32") == 1
    load = ptx.index(f"ld.relaxed.{scope}.global.b32")
    assert re.search(r"@%p\d+ bra", ptx[load:]), "no branch back to the load"
    # sm_90 with PTX 8.6 has the one-sided fence Triton emits; PTX 8.0 only acq_rel
    fence = "acquire" if ".version 8.6" in ptx else "acq_rel"
    assert len(re.findall(r"fence\.\w+\.\w+;", ptx)) == (sem == "acquire")
    assert ptx.count(f"fence.{fence}.{scope};") == (sem == "acquire")
    assert "%globaltimer" not in ptx


@pytest.mark.parametrize("target, timer", [("nvidia:sm_90", "%globaltimer"),
                                           ("amd:gfx942", "s_memrealtime")])
def test_timeout_reads_the_global_timer_before_and_in_the_loop(target, timer):
    asm = naiad.compile(poll_with_timeout, signature="*i64,*i1,i64", target=target).asm
    text = asm.get("ptx") or asm["amdgcn"]
    assert text.count(timer) == 2


@pytest.mark.parametrize("signature, phrase", [
    ("*fp32,*i32,i32", "integer elements with width"),
    ("*i8,*i32,i32", "integer elements with width"),
])
def test_poll_rejects_what_triton_rejects(signature, phrase):
    with pytest.raises(CompilationError, match=phrase):
        naiad.compile(poll_flag, signature=signature, constexprs={"SEM": "acquire"},
                      target="nvidia:sm_90")
    with pytest.raises(CompilationError, match="acquire and relaxed"):
        naiad.compile(poll_flag, signature="*i32,*i32,i32", constexprs={"SEM": "release"},
                      target="nvidia:sm_90")
