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


def test_nvidia_atomics_carry_their_order_in_ptx():
    """LLVM's NVPTX backend drops acq_rel on atomicrmw; NVIDIA emits one ``atom`` with the
    order itself (Triton's spelling), so no fence is needed."""
    ptx = naiad.compile(atomics_kernel, signature="*i32", constexprs={"SEM": "acq_rel"},
                        target="nvidia:sm_90").asm["ptx"]
    assert "atom.global.gpu.acq_rel.add.u32" in ptx
    assert "fence" not in ptx


@naiad.jit
def narrow_cas_kernel(p, SEM: tl.constexpr):
    tl.atomic_cas(p, 0, 1, sem=SEM)


def test_nvidia_fences_what_ptx_has_no_ordered_atom_for():
    """A 16-bit compare-and-swap stays a relaxed LLVM cmpxchg between fences."""
    ptx = naiad.compile(narrow_cas_kernel, signature="*i16", constexprs={"SEM": "acq_rel"},
                        target="nvidia:sm_90").asm["ptx"]
    # a release fence before, an acquire fence after (one-sided fences from PTX 8.6 on)
    fences = [(m.start(), m.group(1)) for m in re.finditer(r"fence\.(\w+)\.gpu;", ptx)]
    assert [f for _, f in fences] in (["release", "acquire"], ["acq_rel", "acq_rel"])
    assert fences[0][0] < ptx.index("atom.") < fences[1][0]
