"""The AMD matrix instruction table: which MFMA/WMMA instructions each architecture has.

One :class:`Instr` row per instruction (its ISA name, shape, element types, wave, the LLVM
intrinsic that emits it and the operand packing); :func:`instruction_table` turns the rows of an
arch into core :class:`~naiad.gpu.matrix.MatrixInstruction` entries for the options of one
compile, in order of preference:

* ``matrix_instr_nonkdim`` (0 = automatic: 32x32 first, then 16x16; 16 or 32 forces that
  size, as in Triton);
* ``kpack`` (1 or 2): each lane loads ``kpack`` instructions' worth of consecutive K elements
  at once (wider LDS reads) and issues ``kpack`` instructions per fragment; a dot whose K
  does not divide falls back to kpack 1.

f32 operands: ``input_precision="tf32"`` uses xf32 on gfx942 (``v_mfma_f32_32x32x4_xf32``),
everything else (and every precision on gfx90a/gfx950, which have no xf32) the exact f32
instructions (``v_mfma_f32_32x32x2_f32`` / ``16x16x4``).

fp8: ``v_mfma_f32_{32x32x16,16x16x32}_{fp8_fp8,bf8_bf8}`` on gfx942 for ``float8e4b8`` /
``float8e5b16`` (the fnuz formats that arch computes) and on gfx950 for ``float8e4nv`` /
``float8e5`` (OCP; rows named ``..._ocp``, the same instructions). The frontend widens fp8 dot
operands to f16 exactly; the AMD pass ``fold_fp8_upcasts`` hands the fp8 values to the dot when
one of these rows serves it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from naiad.backend import MatrixInstruction, register_matrix_instructions

from .matrix_layouts import AmdMfmaLayout, AmdWmmaLayout, mfma_maps, wmma_maps

F32_PRECISIONS = ("ieee", "tf32", "tf32x3")


@dataclass(frozen=True)
class Instr:
    name: str          # ISA mnemonic
    shape: tuple       # (m, n, k)
    types: tuple       # (a, b, acc) naiad element names
    intrinsic: str     # LLVM intrinsic (without overload suffix)
    operand: str       # how a lane's fragment is packed: see naiad_amd.lowering.matrix
    precisions: tuple = ()


def _mfma(name, n, k, types, intrinsic, operand, precisions=()):
    return Instr(name, (n, n, k), types, intrinsic, operand, precisions)


F16, BF16, F32, I8 = ("f16", "f16", "f32"), ("bf16", "bf16", "f32"), ("f32", "f32", "f32"), \
    ("i8", "i8", "i32")

_CDNA_COMMON = [
    _mfma("v_mfma_f32_32x32x8_f16", 32, 8, F16, "llvm.amdgcn.mfma.f32.32x32x8f16", "v4f16"),
    _mfma("v_mfma_f32_16x16x16_f16", 16, 16, F16, "llvm.amdgcn.mfma.f32.16x16x16f16", "v4f16"),
    _mfma("v_mfma_f32_32x32x8_bf16", 32, 8, BF16, "llvm.amdgcn.mfma.f32.32x32x8bf16.1k", "v4i16"),
    _mfma("v_mfma_f32_16x16x16_bf16", 16, 16, BF16, "llvm.amdgcn.mfma.f32.16x16x16bf16.1k",
          "v4i16"),
]
_F32_EXACT = [
    _mfma("v_mfma_f32_32x32x2_f32", 32, 2, F32, "llvm.amdgcn.mfma.f32.32x32x2f32", "f32",
          F32_PRECISIONS),
    _mfma("v_mfma_f32_16x16x4_f32", 16, 4, F32, "llvm.amdgcn.mfma.f32.16x16x4f32", "f32",
          F32_PRECISIONS),
]

#: fp8 element types: gfx942 computes the fnuz formats (e4m3 bias 8, e5m2 bias 16), gfx950 the
#: OCP ones (e4m3fn, e5m2) with the same instructions
FP8_FNUZ = ("f8e4b8", "f8e5b16")
FP8_OCP = ("f8e4nv", "f8e5")


def _fp8_rows(types, suffix=""):
    """``v_mfma_f32_32x32x16_{fp8_fp8,bf8_bf8}`` and ``16x16x32`` for ``types`` = (the e4m3
    format, the e5m2 format): a lane's 8 K elements packed little endian into an i64 (as the
    i8 instructions of gfx942)."""
    rows = []
    for n, k in ((32, 16), (16, 32)):
        for kind, t in (("fp8", types[0]), ("bf8", types[1])):
            rows.append(_mfma(f"v_mfma_f32_{n}x{n}x{k}_{kind}_{kind}{suffix}", n, k,
                              (t, t, "f32"), f"llvm.amdgcn.mfma.f32.{n}x{n}x{k}.{kind}.{kind}",
                              "i64x8i8"))
    return rows


ROWS: dict[str, list[Instr]] = {
    "gfx90a": _CDNA_COMMON + _F32_EXACT + [
        _mfma("v_mfma_i32_32x32x8_i8", 32, 8, I8, "llvm.amdgcn.mfma.i32.32x32x8i8", "i32x4i8"),
        _mfma("v_mfma_i32_16x16x16_i8", 16, 16, I8, "llvm.amdgcn.mfma.i32.16x16x16i8", "i32x4i8"),
    ],
    "gfx942": _CDNA_COMMON + [
        _mfma("v_mfma_f32_32x32x4_xf32", 32, 4, F32, "llvm.amdgcn.mfma.f32.32x32x4.xf32",
              "v2f32", ("tf32",)),
        _mfma("v_mfma_f32_16x16x8_xf32", 16, 8, F32, "llvm.amdgcn.mfma.f32.16x16x8.xf32",
              "v2f32", ("tf32",)),
    ] + _F32_EXACT + [
        _mfma("v_mfma_i32_32x32x16_i8", 32, 16, I8, "llvm.amdgcn.mfma.i32.32x32x16.i8", "i64x8i8"),
        _mfma("v_mfma_i32_16x16x32_i8", 16, 32, I8, "llvm.amdgcn.mfma.i32.16x16x32.i8", "i64x8i8"),
    ] + _fp8_rows(FP8_FNUZ),
    "gfx950": [
        _mfma("v_mfma_f32_32x32x16_f16", 32, 16, F16, "llvm.amdgcn.mfma.f32.32x32x16.f16", "v8f16"),
        _mfma("v_mfma_f32_16x16x32_f16", 16, 32, F16, "llvm.amdgcn.mfma.f32.16x16x32.f16", "v8f16"),
        _mfma("v_mfma_f32_32x32x16_bf16", 32, 16, BF16, "llvm.amdgcn.mfma.f32.32x32x16.bf16",
              "v8bf16"),
        _mfma("v_mfma_f32_16x16x32_bf16", 16, 32, BF16, "llvm.amdgcn.mfma.f32.16x16x32.bf16",
              "v8bf16"),
    ] + _CDNA_COMMON + _F32_EXACT + [
        _mfma("v_mfma_i32_32x32x32_i8", 32, 32, I8, "llvm.amdgcn.mfma.i32.32x32x32.i8", "v4i32x16i8"),
        _mfma("v_mfma_i32_16x16x64_i8", 16, 64, I8, "llvm.amdgcn.mfma.i32.16x16x64.i8", "v4i32x16i8"),
    ] + _fp8_rows(FP8_OCP, "_ocp"),
    "gfx1100": [
        Instr("v_wmma_f32_16x16x16_f16", (16, 16, 16), F16, "llvm.amdgcn.wmma.f32.16x16x16.f16",
              "v16f16"),
        Instr("v_wmma_f32_16x16x16_bf16", (16, 16, 16), BF16,
              "llvm.amdgcn.wmma.f32.16x16x16.bf16", "v16i16"),
        Instr("v_wmma_i32_16x16x16_iu8", (16, 16, 16), I8, "llvm.amdgcn.wmma.i32.16x16x16.iu8",
              "v4i32x16i8"),
    ],
    "gfx1200": [
        Instr("v_wmma_f32_16x16x16_f16_gfx12", (16, 16, 16), F16,
              "llvm.amdgcn.wmma.f32.16x16x16.f16", "v8f16"),
        Instr("v_wmma_f32_16x16x16_bf16_gfx12", (16, 16, 16), BF16,
              "llvm.amdgcn.wmma.f32.16x16x16.bf16", "v8i16"),
        Instr("v_wmma_i32_16x16x16_iu8_gfx12", (16, 16, 16), I8,
              "llvm.amdgcn.wmma.i32.16x16x16.iu8", "v2i32x8i8"),
    ],
}

MFMA_VERSION = {"gfx90a": 2, "gfx942": 3, "gfx950": 4}
WMMA_VERSION = {"gfx1100": 1, "gfx1200": 2}


def row_of(arch: str, name: str) -> Instr:
    for row in ROWS.get(arch, ()):
        if row.name == name:
            return row
    raise KeyError(name)


def _entry(arch: str, row: Instr, kpack: int) -> MatrixInstruction:
    m, n, k = row.shape
    if arch in WMMA_VERSION:
        version = WMMA_VERSION[arch]
        maps = wmma_maps(version)
        wave = 32

        def make(warps, _v=version):
            return AmdWmmaLayout(_v, warps)
    else:
        version = MFMA_VERSION[arch]
        maps = mfma_maps(n, k)
        wave = 64

        def make(warps, _v=version, _s=row.shape):
            return AmdMfmaLayout(_v, warps, _s)
    a, b, c = maps
    return MatrixInstruction(row.name, row.shape, *row.types, wave, a, b, c,
                             k_width=a.in_size("register") * kpack,
                             precisions=row.precisions, make_layout=make)


def instruction_table(arch: str, nonkdim: int = 0, kpack: int = 1) -> list[MatrixInstruction]:
    """The entries for one compile, in order of preference (see module doc)."""
    rows = [r for r in ROWS.get(arch, ()) if nonkdim in (0, r.shape[0]) or arch in WMMA_VERSION]
    rows.sort(key=lambda r: -r.shape[0])  # stable: 32x32 before 16x16, table order otherwise
    out = []
    for r in rows:
        if kpack > 1:
            out.append(_entry(arch, r, kpack))
        out.append(_entry(arch, r, 1))
    return out


def all_entries() -> list[MatrixInstruction]:
    """Every row of every arch (kpack 1), for registering names before parsing GPU IR."""
    return [_entry(arch, r, 1) for arch, rows in ROWS.items() for r in rows]


def register_all() -> None:
    """Make every AMD instruction known by name, so GPU IR naming one parses, verifies and
    lowers even when it was not produced by this process's accelerate_matmul."""
    register_matrix_instructions(all_entries())


def with_kpack(entry: MatrixInstruction, kpack: int) -> MatrixInstruction:
    return dataclasses.replace(entry, k_width=entry.k_base * kpack)
