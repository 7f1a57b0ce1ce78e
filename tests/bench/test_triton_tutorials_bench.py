"""bench/triton_tutorials.py: a tutorial's definitions only, run by naiad on the reference with torch
CPU tensors, checked against torch; a failing kernel is a row with its reason, not a crash."""
from __future__ import annotations

import ast
import importlib.util
import pathlib
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="the tutorial benchmark drives torch tensors")

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def _load_bench():
    """bench/triton_tutorials.py under its own module name (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("naiad_bench_tutorials",
                                                  BENCH / "triton_tutorials.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module       # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tutorials = _load_bench()

TUTORIAL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl
    import triton.experimental.gluon as gluon   # not in naiad: noted and skipped

    DEVICE = triton.runtime.driver.active.get_active_torch_device()

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs,
                 mask=mask), mask=mask)

    def add(x, y):
        out = torch.empty_like(x)
        n = out.numel()
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
        return out

    x = torch.rand(10, device=DEVICE)
    result = add(x, x)                 # a demo: skipped
    print("demo ran")                  # skipped
    if __name__ == "__main__":
        raise SystemExit("main guard ran")
''')

BROKEN = TUTORIAL.replace("offs < n", "offs < undefined_name")


def _write(folder, number, text):
    path = folder / f"{number}-vector-add.py"
    path.write_text(text)
    return path


def test_definitions_keep_kernels_and_skip_demos():
    tree = tutorials.definitions(ast.parse(TUTORIAL))
    text = ast.unparse(tree)
    assert "def add_kernel" in text and "def add(" in text and "DEVICE =" in text
    assert "result = add" not in text and "demo ran" not in text and "main guard" not in text


def test_smoke_run_checks_naiad_against_torch(tmp_path, capsys):
    _write(tmp_path, "01", TUTORIAL)
    out = tmp_path / "table.md"
    assert tutorials.main([str(tmp_path), "--smoke", "--no-triton", "--only", "01",
                           "--target", "reference", "--out", str(out)]) == 0
    table = out.read_text()
    row = next(line for line in table.splitlines() if line.startswith("| 01 |"))
    assert "| vector add | ok |" in row
    assert "add_kernel[BLOCK_SIZE=256,w4] 0r/0s" in row
    assert "triton.experimental" in capsys.readouterr().out


def test_a_failing_kernel_is_recorded_with_its_reason(tmp_path):
    _write(tmp_path, "01", BROKEN)
    out = tmp_path / "table.md"
    assert tutorials.main([str(tmp_path), "--smoke", "--no-triton", "--only", "01,03",
                           "--target", "reference", "--out", str(out)]) == 0
    table = out.read_text()
    assert "CompilationError" in table and "undefined_name" in table
    assert "| 03 | - | no such tutorial |" in table


def test_a_case_past_its_time_limit_is_recorded(tmp_path):
    slow = TUTORIAL.replace("    out = torch.empty_like(x)\n",
                            "    import time\n    time.sleep(30)\n    out = torch.empty_like(x)\n")
    _write(tmp_path, "01", slow)
    out = tmp_path / "table.md"
    assert tutorials.main([str(tmp_path), "--smoke", "--no-triton", "--only", "01",
                           "--target", "reference", "--case-timeout", "1",
                           "--out", str(out)]) == 0
    assert "CaseTimeout: ran longer than 1 s" in out.read_text()
