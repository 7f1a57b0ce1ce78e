"""bench/amd_static.py: one kernel text for both compilers, both measured by the same reader,
failures and a missing Triton reported in the table instead of stopping the run."""
from __future__ import annotations

import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import amd_static  # noqa: E402

ADD = next(c for c in amd_static.CASES if c.kernel == "add_kernel")


def _without_imports(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("import ")]


def test_triton_text_differs_only_in_its_imports():
    ours, theirs = amd_static.kernel_text("naiad"), amd_static.kernel_text("triton")
    assert "import triton.language as tl" in theirs and "naiad" not in theirs
    assert _without_imports(ours) == _without_imports(theirs)
    with pytest.raises(ValueError, match="flavour"):
        amd_static.kernel_text("cuda")


def test_every_case_types_exactly_its_kernels_parameters():
    mod = amd_static.load_kernels("naiad")
    for case in amd_static.CASES:
        fn = getattr(mod, case.kernel)
        assert set(case.constexprs) == set(fn.constexpr_params)
        assert list(case.signature) == [p for p in fn.arg_names if p not in case.constexprs]
        assert set(case.divisible) | set(case.ones) <= set(case.signature)


def test_naiad_side_matches_the_backends_own_report():
    import naiad

    mod = amd_static.load_kernels("naiad")
    got = amd_static.compile_naiad(mod, ADD, "gfx942")
    assert got.error is None, got.error
    k = naiad.compile(mod.add_kernel, signature=ADD.signature, constexprs=ADD.constexprs,
                      target="amd:gfx942", options=amd_static.OPTIONS,
                      specialization={p: {"divisibility": 16} for p in ADD.divisible})
    for key in ("vgpr", "sgpr", "spill_registers", "instructions"):
        assert got.report[key] == k.metadata[key], key
    assert got.report["lds"] == got.report["lds_static"] + got.report["lds_dynamic"]
    assert 0 < got.report["instructions"] < len(k.asm["amdgcn"].splitlines())


def test_failures_show_in_the_row_not_as_numbers():
    ok = amd_static.Measured({"vgpr": 9, "sgpr": 17, "spill_registers": 0, "lds": 16, "instructions": 40,
                              "matrix": 3})
    bad = amd_static.Measured(error="CodegenError: a | b")
    row = amd_static.table_row("k", bad, ok)
    assert row[1] == "error: CodegenError: a | b" and row[3] == "-"
    assert row[2] == 9 and row[5:] == ["-/0", "-/16", "-/40", "-/3"]
    table = amd_static.render_table([row])
    body = table.splitlines()[2]
    assert "a \\| b" in body and body.count(" | ") == len(amd_static.COLUMNS) - 1
    skipped = amd_static.table_row("k", ok, amd_static.Measured(error="no triton", skipped=True))
    assert skipped[2] == "skipped: no triton"


@pytest.fixture
def triton_env(tmp_path, monkeypatch):
    """A private Triton cache (so Triton really compiles) and its FP-fusion default, undone after."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")


def test_main_prints_and_writes_the_same_report(tmp_path, monkeypatch, capsys, triton_env):
    monkeypatch.setattr(amd_static, "CASES", (ADD,))
    out = tmp_path / "amd.md"
    assert amd_static.main(["--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == out.read_text()
    row = next(line for line in printed.splitlines() if line.startswith(f"| {ADD.label}"))
    assert "error" not in row


def test_triton_side_compiles_for_gfx942(triton_env):
    pytest.importorskip("triton")
    got = amd_static.compile_triton(amd_static.load_kernels("triton"), ADD, "gfx942", 64)
    assert got.error is None, got.error
    assert got.report["vgpr"] > 0 and got.report["instructions"] > 0


def test_matrix_instructions_are_counted():
    """The MFMA/WMMA column counts v_mfma/v_wmma lines of the kernel text (same reader)."""
    mod = amd_static.load_kernels("naiad")
    case = next(c for c in amd_static.CASES if c.kernel == "matmul_fp16_kernel")
    got = amd_static.compile_naiad(mod, case, "gfx942")
    assert got.error is None, got.error
    # each wave: 2 x 2 tiles of 32x32 times 4 K steps of 8, once in the (unpipelined) loop
    assert got.report["matrix"] == 16
