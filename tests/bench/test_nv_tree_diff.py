"""bench/nv_tree_diff.py and bench/sass_listing.py: occupancy from registers and shared memory
by CUDA's rules for compute capability 9.0, the K loop found in a SASS listing, two
compilations of the same code told apart from changed code, and a tree compared with itself."""
from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import nv_tree_diff  # noqa: E402
import sass_listing  # noqa: E402

TUTORIALS = ROOT.parent.parent / "shared" / "triton-tutorials"
if not TUTORIALS.is_dir():
    TUTORIALS = pathlib.Path("/work/shared/triton-tutorials")


@pytest.mark.parametrize("regs,shared,warps,want", [
    (168, 196608, 8, 1),    # 03 fp8 128x256x128: one CTA (shared and registers both)
    (90, 30720, 4, 5),      # 96 regs -> 21 warps of registers -> 5 CTAs; shared allows 7
    (64, 49152, 4, 4),      # registers allow 8 CTAs; shared 233472 // 50176 = 4
    (255, 0, 8, 1),         # 256 regs a thread: 8 warps an SM
    (32, 240000, 4, 0),     # over the 227 KiB a CTA may take
    (16, 0, 1, 32),         # the 32-CTA cap
])
def test_ctas_per_sm_follows_the_occupancy_rules(regs, shared, warps, want):
    assert nv_tree_diff.ctas_per_sm(regs, shared, warps) == want


LISTING = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   LDGSTS.E.BYPASS.128 [R5], desc[UR12][R2.64] ;
        /*0030*/                   DEPBAR.LE SB0, 0x1 ;
        /*0040*/                   WARPGROUP.ARRIVE ;
        /*0050*/                   QGMMA.64x256x32.F32.E5M2.E5M2 R24, gdesc[UR16], R24, gsb0 ;
        /*0060*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0070*/              @P0  BRA 0x20 ;
        /*0080*/                   STS [R7], R24 ;
        /*0090*/                   EXIT ;
        /*00a0*/                   BRA 0xa0;
"""


def test_the_k_loop_is_the_longest_backward_branch():
    instrs = sass_listing.parse(LISTING)
    assert len(instrs) == 11
    assert sass_listing.loops(instrs) == [(0x20, 0x70)]       # the final self-branch is none
    body = sass_listing.main_loop(instrs)
    assert [a for a, _ in body] == list(range(0x20, 0x80, 0x10))
    fams = sass_listing.families(body)
    assert fams["QGMMA"] == 1 and fams["WARPGROUP"] == 2 and fams["LDGSTS"] == 1
    assert "STS" not in fams
    assert nv_tree_diff.loop_columns(fams) == "MMA 1 WARPGROUP 2 DEPBAR 1 copies 1"


def test_register_numbers_and_branch_targets_do_not_count_as_changes():
    a = [sass_listing.normalized(t) for _, t in sass_listing.parse(LISTING)]
    renamed = LISTING.replace("R24", "R40").replace("UR16", "UR8").replace("0x20 ;", "0x30 ;")
    b = [sass_listing.normalized(t) for _, t in sass_listing.parse(renamed)]
    assert nv_tree_diff.loop_change(a, b) == "same"
    assert nv_tree_diff.loop_change(a, b[::-1]) == "same instructions, reordered"
    widened = LISTING.replace("0x1 ;", "0x2 ;")       # a wait allowing one more group: a change
    c = [sass_listing.normalized(t) for _, t in sass_listing.parse(widened)]
    assert nv_tree_diff.loop_change(a, c) == "+2 / -2 instructions"


def _have_tools() -> bool:
    try:
        return sass_listing.cuobjdump().exists() and \
            (TUTORIALS / "03-matrix-multiplication.py").exists()
    except ImportError:
        return False


@pytest.mark.skipif(not _have_tools(), reason="needs Triton's bundled cuobjdump and the "
                                              "tutorials in ../shared")
def test_a_tree_compared_with_itself_is_the_same(tmp_path):
    out = tmp_path / "table.md"
    assert nv_tree_diff.main([str(TUTORIALS), "--base", str(ROOT), "--first", "1",
                              "--no-triton", "--out", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 03 ")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1] == "128x256x64 w8 s3"
    assert "->" not in rows[0]            # registers, shared memory, loop sizes all unchanged
    assert cells[8] == "same"
    assert cells[5] == "1" and cells[10] == "wgmma ring"
    assert "MMA 2" in cells[7]            # two k32 fp8 wgmmas per 64-deep K step
