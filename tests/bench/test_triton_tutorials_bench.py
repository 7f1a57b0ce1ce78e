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


class Autotuner:
    """Stands in for naiad's or Triton's autotuner (the bench reads them by type name)."""

    def __init__(self, timings, best, attr="timings"):
        setattr(self, attr, timings)
        self.best_config = best


class Config:
    def __init__(self, bm, bn, warps, stages):
        self.kwargs = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "GROUP_SIZE_M": 8}
        self.num_warps, self.num_stages = warps, stages


def test_autotune_picks_name_the_launched_config_and_the_runner_up():
    fast, slow, slower = Config(128, 256, 8, 3), Config(64, 64, 4, 4), Config(32, 32, 4, 5)
    naiad_style = Autotuner({slow: [0.2, 0.19, 0.21], fast: [0.1, 0.09, 0.11],
                             slower: [0.3, 0.3, 0.3]}, fast)
    triton_style = Autotuner({slower: 0.3, slow: 0.2}, slow, attr="configs_timings")
    module = type(sys)("tut")
    module.matmul_kernel, module.other = naiad_style, triton_style
    picks = tutorials.autotune_picks(module, {})
    assert picks == ("matmul_kernel: 128x256 w8 s3 (0.1 ms; next 64x64 w4 s4 0.2 ms of 3); "
                     "other: 64x64 w4 s4 (0.2 ms; next 32x32 w4 s5 0.3 ms of 2)")
    # benchmarks from before the case (same timings dict): the pick came from the cache
    before = {n: id(tutorials._timings(t)) for n, t in tutorials._tuners(module).items()}
    assert tutorials.autotune_picks(module, before) == ("matmul_kernel: 128x256 w8 s3 (cached); "
                                                        "other: 64x64 w4 s4 (cached)")


AUTOTUNED = TUTORIAL.replace("@triton.jit\n", "@triton.autotune(configs=[triton.Config("
                             "{'BLOCK_SIZE': 128}, num_warps=4), triton.Config({'BLOCK_SIZE': "
                             "256}, num_warps=2)], key=['n'])\n@triton.jit\n", 1).replace(
    "n, BLOCK_SIZE=256)", "n)").replace("triton.cdiv(n, 256)", "triton.cdiv(n, 128)")


def _pick_cell(folder) -> str:
    out = folder / "table.md"
    assert tutorials.main([str(folder), "--smoke", "--no-triton", "--only", "01",
                           "--target", "reference", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    out.unlink()
    header = next(line for line in lines if line.startswith("| tutorial |"))
    row = next(line for line in lines if line.startswith("| 01 |"))
    assert "| vector add | ok |" in row
    cells = dict(zip((c.strip() for c in header.strip("|").split("|")),
                     (c.strip() for c in row.strip("|").split("|"))))
    return cells["naiad autotune pick"]


def test_the_table_shows_naiads_autotune_pick(tmp_path, monkeypatch):
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path / "cache"))   # no earlier tuning
    _write(tmp_path, "01", AUTOTUNED)
    pick = _pick_cell(tmp_path)
    assert pick.startswith("add_kernel: ") and " ms of 2)" in pick, pick
    chosen = pick.split(": ")[1][:6]
    assert {"128 w4", "256 w2"} == {chosen, pick.split("next ")[1][:6]}
    # loaded again (a new autotuner), the pick comes from the on-disk autotune cache
    assert _pick_cell(tmp_path) == pick.split(" (")[0] + " (cached)"
