"""Atomic memory order is carried by fences around relaxed atomics, per the op's ``sem``."""
import re

import pytest

import naiad
import naiad.language as tl


@naiad.jit
def atomics_kernel(p, SEM: tl.constexpr):
    tl.atomic_add(p + tl.arange(0, 64), 1, sem=SEM)


def _ir(sem, target="amd:gfx942"):
    return naiad.compile(atomics_kernel, signature="*i32", constexprs={"SEM": sem},
                         target=target).asm["llir"]


@pytest.mark.parametrize("sem,release,acquire", [("acq_rel", 1, 1), ("acquire", 0, 1),
                                                 ("release", 1, 0), ("relaxed", 0, 0)])
def test_fences_follow_sem(sem, release, acquire):
    ir = _ir(sem)
    assert len(re.findall(r"fence [^\n]*release", ir)) == release
    assert len(re.findall(r"fence [^\n]*acquire", ir)) == acquire
    assert re.search(r"atomicrmw add [^\n]* monotonic", ir)
    assert "acq_rel" not in ir.split("atomicrmw", 1)[1].split("\n", 1)[0]


def test_nvidia_acq_rel_atomics_are_fenced_in_ptx():
    """LLVM's NVPTX backend drops acq_rel on atomicrmw; the fences keep a lock's ordering."""
    ptx = naiad.compile(atomics_kernel, signature="*i32", constexprs={"SEM": "acq_rel"},
                        target="nvidia:sm_90").asm["ptx"]
    body = ptx[ptx.index("atom.global"):]
    assert ptx.count("fence.acq_rel.gpu") == 2
    assert ptx.index("fence.acq_rel.gpu") < ptx.index("atom.global") and "fence" in body
