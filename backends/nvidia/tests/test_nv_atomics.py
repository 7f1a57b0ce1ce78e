"""Global atomics on NVIDIA are one PTX ``atom`` each, carrying the op's sem and scope in
Triton's spelling (``atom.global.gpu.acq_rel.add.f32``; compare-and-swap
``atom.global.acq_rel.gpu.cas.b32``), with no fence around them; what PTX has no instruction
for keeps the core's fenced relaxed atomics.

Without a GPU: the PTX of frontend kernels for every sem x scope and element type (it went
through nvJitLink too, so ptxas accepted the spelling), and -- where cuobjdump is found -- that
the SASS of Triton's qualifier order equals the PTX ISA's order. Values are checked on the H200
by Triton's own ``test_atomic_rmw``/``test_atomic_cas`` (``naiad compat-test``) and
``tests/gpu``.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import naiad
import naiad.language as tl
from naiad_nvidia.lowering.atomics import atom_text, ptx_operation

SEMS = ["relaxed", "acquire", "release", "acq_rel"]
SCOPES = ["cta", "gpu", "sys"]
# (tl op, pointer signature) -> the PTX operation.type Triton emits for it
RMW = {
    ("add", "*i32"): ["add.u32"], ("add", "*u32"): ["add.u32"], ("add", "*i64"): ["add.u64"],
    ("add", "*u64"): ["add.u64"], ("add", "*fp32"): ["add.f32"], ("add", "*fp64"): ["add.f64"],
    ("add", "*fp16"): ["add.noftz.f16"], ("add", "*bf16"): ["add.noftz.bf16"],
    ("max", "*i32"): ["max.s32"], ("max", "*u32"): ["max.u32"], ("min", "*i64"): ["min.s64"],
    ("min", "*u64"): ["min.u64"],
    # floats: signed max on the bits of non-negative values, unsigned min on negative ones
    ("max", "*fp32"): ["max.s32", "min.u32"], ("min", "*fp64"): ["min.s64", "max.u64"],
    ("xchg", "*i32"): ["exch.b32"], ("xchg", "*fp32"): ["exch.b32"],
    ("and", "*i64"): ["and.b64"], ("or", "*i32"): ["or.b32"], ("xor", "*u32"): ["xor.b32"],
}


def _rmw_kernel(op):
    fn = getattr(tl, f"atomic_{op}")

    @naiad.jit
    def kernel(Z, X, Old, SEM: tl.constexpr, SCOPE: tl.constexpr):
        offs = tl.arange(0, 64)
        x = tl.load(X + offs)
        tl.store(Old + offs, fn(Z + offs % 4, x, sem=SEM, scope=SCOPE))

    return kernel


@naiad.jit
def cas_kernel(Lock, Old, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.store(Old, tl.atomic_cas(Lock, 0, 1, sem=SEM, scope=SCOPE))


def _ptx(kernel, sig, sem, scope):
    return naiad.compile(kernel, signature=sig, constexprs={"SEM": sem, "SCOPE": scope},
                         target="nvidia:sm_90").asm["ptx"]


@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("op,ptr", sorted(RMW))
def test_rmw_is_one_atom_with_its_order(op, ptr, sem, scope):
    ptx = _ptx(_rmw_kernel(op), f"{ptr},{ptr},{ptr}", sem, scope)
    atoms = re.findall(r"\batom\.\S+", ptx)
    assert sorted(atoms) == sorted(f"atom.global.{scope}.{sem}.{o}" for o in RMW[op, ptr])
    assert "fence" not in ptx


@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("ptr,bits", [("*i32", 32), ("*i64", 64), ("*fp32", 32)])
def test_cas_is_one_atom_with_its_order(ptr, bits, sem, scope):
    ptx = _ptx(cas_kernel, f"{ptr},{ptr}", sem, scope)
    assert re.findall(r"\batom\.\S+", ptx) == [f"atom.global.{sem}.{scope}.cas.b{bits}"]
    assert "fence" not in ptx


def test_what_ptx_lacks_keeps_the_fenced_llvm_atomic():
    """A 16-bit compare-and-swap has no ``atom`` here: relaxed LLVM cmpxchg between fences."""
    ptx = _ptx(cas_kernel, "*i16,*i16", "acq_rel", "gpu")
    assert re.findall(r"fence\.(\w+)\.gpu;", ptx) in (["release", "acquire"],
                                                       ["acq_rel", "acq_rel"])
    assert not re.search(r"atom\.global\.(gpu\.)?acq_rel", ptx)


@pytest.mark.parametrize("op,elem", [("add", "i16"), ("fadd", "bf16"), ("max", "f32"),
                                     ("cas", "ptr"), ("xchg", "i8")])
def test_no_instruction_where_ptx_has_none(op, elem):
    assert ptx_operation(op, elem, "sm_80") is None


def test_bf16_add_needs_sm90():
    assert ptx_operation("fadd", "bf16", "sm_90") == "add.noftz.bf16"
    assert ptx_operation("fadd", "bf16", "sm_80") is None


# -- the spelling is only a spelling ------------------------------------------------------------

_CUOBJDUMP = shutil.which("cuobjdump") or next(
    (p for p in ("/usr/local/cuda/bin/cuobjdump",
                 "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/triton/backends/"
                 "nvidia/bin/cuobjdump") if shutil.os.path.exists(p)), None)

_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u64 q)
{{
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [q];
  ld.global.b32 %r1, [%rd2];
  {atom} %r2, [%rd1], %r1;
  st.global.b32 [%rd2], %r2;
  ret;
}}
"""


def _sass(atom: str, tmp_path) -> str:
    from naiad_nvidia import toolchain

    cubin, _ = toolchain.ptx_to_cubin(_PTX.format(atom=atom), "sm_90")
    path = tmp_path / f"{abs(hash(atom))}.cubin"
    path.write_bytes(cubin)
    out = subprocess.run([_CUOBJDUMP, "-sass", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return "\n".join(ln.split("/*")[1] for ln in out.splitlines() if ln.strip().startswith("/*")
                     and "*/" in ln)


@pytest.mark.skipif(_CUOBJDUMP is None, reason="cuobjdump not found (CUDA toolkit or Triton)")
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("scope", SCOPES)
def test_triton_order_assembles_to_the_isa_order(sem, scope, tmp_path):
    ours = atom_text("fadd", "f32", sem, scope).split(" ")[0]
    isa = f"atom.{sem}.{scope}.global.add.f32"
    sass = _sass(ours, tmp_path)
    assert "ATOMG" in sass
    assert sass == _sass(isa, tmp_path)
