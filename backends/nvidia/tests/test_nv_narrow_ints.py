"""Narrow (8/16-bit) integer negation and abs survive ptxas (issue #13, fuzz seeds 10515, 13864).

ptxas 12.x keeps a 16-bit value sign-extended in a 32-bit register and turns ``neg.s16``/
``abs.s16`` into a 32-bit negate (IADD3/IMAD.MOV/IABS) whose result it then uses *without*
re-normalising: ``-(int16)-32768`` widened is +32768. naiad's toolchain therefore never emits
those instructions (``toolchain.harden_narrow_ints``). These tests check the PTX, and the SASS of
every assembler found here: nvJitLink's, and a ``ptxas`` on PATH or in Triton's wheel (Triton's
3.9 wheel ships ptxas 12.9, which has the bug; tests only, never the product).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

import naiad
import naiad.language as tl
from naiad_nvidia import toolchain


@naiad.jit
def narrow_neg_kernel(x_ptr, y_ptr, out_ptr, abs_ptr, lt_ptr, shr_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    neg = -x
    tl.store(out_ptr + offs, neg & tl.load(y_ptr + offs))
    tl.store(abs_ptr + offs, tl.abs(x).to(tl.int32))
    tl.store(lt_ptr + offs, (neg < 0).to(tl.int32))
    tl.store(shr_ptr + offs, (neg >> 3).to(tl.int32))


@naiad.jit
def zero_minus_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """``0 - x`` and ``x * -1`` reach LLVM as the same negation as ``-x``."""
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, (0 - x).to(tl.int32) + (x * -1).to(tl.int32))


def _ptx(kernel, dtype: str, arch: str = "sm_90") -> tuple[str, bytes]:
    sig = {p: "*i32" for p in kernel.arg_names if p != "N"}
    sig["x_ptr"] = "*" + dtype
    ck = naiad.compile(kernel, signature=sig, constexprs={"N": 128}, target=f"nvidia:{arch}")
    return ck.asm["ptx"], ck.binary


NARROW = ["i8", "i16", "u8", "u16"]


# -- the PTX ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel, dtype", [(narrow_neg_kernel, d) for d in NARROW] +
                         [(zero_minus_kernel, d) for d in ("i8", "i16")])
def test_no_narrow_neg_or_abs_reaches_the_assembler(kernel, dtype):
    ptx, _ = _ptx(kernel, dtype)
    assert not re.search(r"\b(neg|abs)\.s16\b|\bsub\.s16\s+%\w+,\s*0,", ptx), ptx
    assert re.search(r"cvt\.s32\.s16 %naiad_w, %rs\d+; neg\.s32 %naiad_w, %naiad_w; "
                     r"cvt\.u16\.u32 %rs\d+, %naiad_w;", ptx), ptx


def test_rewrite_keeps_predicates_and_leaves_other_instructions_alone():
    src = ("\tneg.s16 \t%rs2, %rs1;\n\t@%p1 abs.s16 %rs4, %rs3;\n\tsub.s16 \t%rs6, 0, %rs5;\n"
           "\tneg.s32 \t%r2, %r1;\n\tneg.f32 \t%f2, %f1;\n\tneg.s64 \t%rd2, %rd1;\n"
           "\tsub.s16 \t%rs7, %rs1, %rs2;\n\tsub.s16 \t%rs8, 5, %rs2;\n")
    out = toolchain.harden_narrow_ints(src).splitlines()
    assert out[0] == ("\t{ .reg .b32 %naiad_w; cvt.s32.s16 %naiad_w, %rs1; "
                      "neg.s32 %naiad_w, %naiad_w; cvt.u16.u32 %rs2, %naiad_w; }")
    assert out[1] == ("\t{ .reg .b32 %naiad_w; @%p1 cvt.s32.s16 %naiad_w, %rs3; "
                      "@%p1 abs.s32 %naiad_w, %naiad_w; @%p1 cvt.u16.u32 %rs4, %naiad_w; }")
    assert out[2] == ("\t{ .reg .b32 %naiad_w; cvt.s32.s16 %naiad_w, %rs5; "
                      "neg.s32 %naiad_w, %naiad_w; cvt.u16.u32 %rs6, %naiad_w; }")
    assert out[3:] == src.splitlines()[3:]      # wide negations, other subtractions: alone


def test_toolchain_hash_covers_the_rewrites():
    assert "narrow" in toolchain.PTX_REWRITES     # a changed rewrite must not reuse old cubins


# -- the SASS -----------------------------------------------------------------------------------
def _tool_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    spec = importlib.util.find_spec("triton")      # located, never imported
    if spec is not None and spec.submodule_search_locations:
        dirs.append(Path(list(spec.submodule_search_locations)[0]) / "backends" / "nvidia" / "bin")
    return dirs


def _tools(*names: str) -> list[str]:
    """Every executable of these names found, without duplicates (resolved paths)."""
    found = {}
    for d in _tool_dirs():
        for name in names:
            path = d / name
            if path.is_file() and os.access(path, os.X_OK):
                found.setdefault(str(path.resolve()), str(path))
    return list(found.values())


NVDISASM = next(iter(_tools("nvdisasm")), None)
#: each standalone assembler here: e.g. CUDA's, Triton's ptxas (12.9) and ptxas-blackwell (13.x)
PTXASES = _tools("ptxas", "ptxas-blackwell")
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason="no nvdisasm (CUDA toolkit or "
                                    "Triton's wheel) on this machine to read SASS")


def _ptxas_release(ptxas: str) -> str:
    text = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else "unknown"


def _sass(cubin: bytes, tmp_path: Path) -> list[str]:
    path = tmp_path / "k.cubin"
    path.write_bytes(bytes(cubin))
    text = subprocess.run([NVDISASM, "-c", str(path)], capture_output=True, text=True,
                          check=True).stdout
    return [re.sub(r"\s+", " ", line.split("*/", 1)[1]).replace(".reuse", "").strip().rstrip(" ;")
            for line in text.splitlines() if re.match(r"\s*/\*[0-9a-f]{4}\*/", line)]


def _ptxas(ptxas: str, ptx: str, arch: str, tmp_path: Path) -> bytes:
    src, out = tmp_path / "k.ptx", tmp_path / "ptxas.cubin"
    src.write_text(ptx)
    subprocess.run([ptxas, f"-arch={arch}", "-O3", str(src), "-o", str(out)], check=True,
                   capture_output=True)
    return out.read_bytes()


_NEGATE = re.compile(r"^(?:IADD3|IMAD\.MOV(?:\.U32)?|IMAD\.IADD|VIADD) (R\d+), .*-R\d+|"
                     r"^IABS (R\d+), ")
#: instructions that make a register's low 8/16 bits into a normalised 32-bit value, or only
#: read those bits (an AND with a 16-bit mask, a narrow store, a 16-bit SIMD min)
_NORMALISE = re.compile(r"^(?:PRMT R\d+, R\d+, 0x(?:9910|8880|7710|7610)|SGXT|I2F\.[SU](?:8|16)|"
                        r"LOP3\.LUT R\d+, R\d+, 0x[0-9a-f]{1,4}, RZ, 0xc0,|STG\.E\.(?:U|S)(?:8|16)|"
                        r"VIMNMX\.S16x2)")


_MOVE = re.compile(r"^(?:IMAD\.MOV\.U32 (R\d+), RZ, RZ, (R\d+)|MOV (R\d+), (R\d+))$")


def unnormalised_negations(sass: list[str]) -> list[str]:
    """Each 32-bit negate/IABS whose result (or a copy of it) is read by an instruction that
    uses all 32 bits (the miscompilation): ``"negate -> reader"`` strings."""
    bad = []
    for i, ins in enumerate(sass):
        m = _NEGATE.match(ins)
        if m:
            bad += [f"{ins} -> {r}" for r in _readers(sass, i + 1, m.group(1) or m.group(2))
                    if not _NORMALISE.match(r)]
    return bad


def _readers(sass: list[str], start: int, reg: str) -> list[str]:
    """The instructions after ``start`` that read ``reg`` before it is overwritten, with the
    readers of its copies in place of the copies."""
    out = []
    for j in range(start, len(sass)):
        ins = sass[j]
        dst, _, srcs = (ins.split(" ", 1)[1] if " " in ins else "").partition(", ")
        if ins.startswith("STG"):
            srcs = dst + ", " + srcs          # a store's operands are all reads
        if re.search(rf"\b{reg}\b", srcs):
            move = _MOVE.match(ins)
            if move and (move.group(2) or move.group(4)) == reg:
                out += _readers(sass, j + 1, move.group(1) or move.group(3))
            else:
                out.append(ins)
        if dst.strip() == reg:
            break                                # overwritten
    return out


@needs_nvdisasm
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["i8", "i16"])
def test_nvjitlink_sass_renormalises(dtype, arch, tmp_path):
    ptx, cubin = _ptx(narrow_neg_kernel, dtype, arch)
    sass = _sass(cubin, tmp_path)
    assert any(_NEGATE.match(s) for s in sass), sass     # the checker saw the negation
    assert unnormalised_negations(sass) == []


_ASSEMBLERS = pytest.mark.parametrize(
    "ptxas", PTXASES or [pytest.param(None, marks=pytest.mark.skip(
        reason="no standalone ptxas here (CUDA toolkit or Triton's wheel)"))],
    ids=lambda p: f"{Path(p).name}-{_ptxas_release(p)}" if p else "none")


@needs_nvdisasm
@_ASSEMBLERS
@pytest.mark.parametrize("dtype", ["i8", "i16"])
def test_standalone_ptxas_sass_renormalises(dtype, ptxas, tmp_path):
    ptx, _ = _ptx(narrow_neg_kernel, dtype)
    sass = _sass(_ptxas(ptxas, ptx, "sm_90", tmp_path), tmp_path)
    assert any(_NEGATE.match(s) for s in sass), sass
    assert unnormalised_negations(sass) == [], f"ptxas {_ptxas_release(ptxas)}"


#: ptxas 12.9's SASS for ``(-x_i16) & y`` (neg.s16, cvt.s32.s16, and.b32): the negate is used
#: un-normalised; and the same with the rewrite (re-extended by PRMT 0x9910)
MISCOMPILED = ["LDG.E.U16 R2, desc[UR4][R2.64]", "LDG.E R6, desc[UR4][R6.64]",
               "PRMT R0, R2, 0x9910, RZ", "IADD3 R9, RZ, -R0, RZ",
               "LOP3.LUT R9, R6, R9, RZ, 0xc0, !PT", "STG.E desc[UR4][R4.64], R9", "EXIT"]
CORRECT = ["LDG.E.U16 R2, desc[UR4][R2.64]", "LDG.E R6, desc[UR4][R6.64]",
           "PRMT R0, R2, 0x9910, RZ", "IADD3 R0, -R0, RZ, RZ", "PRMT R9, R0, 0x9910, RZ",
           "LOP3.LUT R9, R6, R9, RZ, 0xc0, !PT", "STG.E desc[UR4][R4.64], R9", "EXIT"]


def test_the_checker_flags_an_unnormalised_negation():
    assert unnormalised_negations(MISCOMPILED) == [
        "IADD3 R9, RZ, -R0, RZ -> LOP3.LUT R9, R6, R9, RZ, 0xc0, !PT"]
    assert unnormalised_negations(CORRECT) == []
    # through a copy, and a 32-bit store of the raw value
    copied = ["IABS R14, R14", "IMAD.MOV.U32 R13, RZ, RZ, R14", "STG.E desc[UR4][R2.64], R13"]
    assert unnormalised_negations(copied) == [
        "IABS R14, R14 -> STG.E desc[UR4][R2.64], R13"]


@needs_nvdisasm
@_ASSEMBLERS
def test_ptxas_12_9_miscompiles_the_unrewritten_ptx(ptxas, tmp_path):
    """Why the rewrite exists: the unrewritten PTX through ptxas 12.9 (Triton 3.9's wheel) is
    flagged. Other releases are not asserted either way."""
    release = _ptxas_release(ptxas)
    if release != "12.9":
        pytest.skip(f"ptxas {release}: only 12.9 is known to miscompile neg.s16/abs.s16")
    ptx, _ = _ptx(narrow_neg_kernel, "i16")
    raw = re.sub(r"\{ \.reg \.b32 %naiad_w; cvt\.s32\.s16 %naiad_w, (%rs\d+); (neg|abs)\.s32 "
                 r"%naiad_w, %naiad_w; cvt\.u16\.u32 (%rs\d+), %naiad_w; \}",
                 r"\2.s16 \3, \1;", ptx)
    assert "neg.s16" in raw and "abs.s16" in raw
    assert unnormalised_negations(_sass(_ptxas(ptxas, raw, "sm_90", tmp_path), tmp_path))
