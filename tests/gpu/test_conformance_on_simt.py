"""A slice of the shared conformance suite's *execute* tier on the CPU SIMT backend
(simt_backend.py): the core lowering's results compared with numpy and the reference executor.

The whole suite runs the same way (about a minute)::

    PYTHONPATH=core:backends/reference:backends/nvidia:backends/amd:tests/gpu \\
        python -m pytest conformance --backend=simt -p simt_backend
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run_conformance(backend: str, select: str, *files: str) -> None:
    """Run the conformance ``files`` (cases matching ``select``) on ``backend`` in a child
    pytest with the simt plugin loaded; at least one case must pass and none fail."""
    if not (ROOT / "conformance").is_dir():
        pytest.skip("the conformance suite is not in this checkout")
    env = dict(os.environ)
    paths = [ROOT / "core", ROOT / "backends/reference", ROOT / "backends/nvidia",
             ROOT / "backends/amd", ROOT / "tests/gpu"]
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in paths] +
                                        [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "simt_backend",
         f"--backend={backend}", "-k", select, *files],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    last = proc.stdout.strip().splitlines()[-1]
    assert re.search(r"\b[1-9]\d* passed", last) and "failed" not in last, tail


@pytest.mark.parametrize("backend", ["simt:w8", "simt:w16"])
def test_scans_and_atomics_execute_on_simt(backend):
    _run_conformance(backend, "execute", "conformance/test_scans.py",
                     "conformance/test_atomics.py")


@pytest.mark.parametrize("backend", ["simt:amd64", "simt:amd32"])
def test_amd_cross_lane_plans_execute_the_reductions(backend):
    """The AMD backend's XOR-shuffle plans (DPP / ds_swizzle / permlanex16 moves, each executed as
    the lane permutation the ISA defines) under the conformance suite's sum/max reductions."""
    _run_conformance(backend, "execute and (sum or max) and float32",
                     "conformance/test_reductions.py")


def test_amd_targets_shuffle_by_permutation():
    """simt:amd64 really routes XOR shuffles through the plans (not the plain XOR exchange)."""
    sys.path.insert(0, str(ROOT / "tests/gpu"))
    from llvmlite import ir

    from simt import CpuTargetInfo
    from simt_backend import amd_xor_moves

    ti = CpuTargetInfo(64, xor_moves=amd_xor_moves(64, False))
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.IntType(32), [ir.IntType(32)]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(ti.shuffle_xor(b, fn.args[0], 4))
    assert ti.calls == {"simt_shfl_perm": 2}  # quad_perm [3,2,1,0], then row_half_mirror
    tables = [[int(x) for x in re.findall(r"i32 (\d+)", str(gv.initializer))]
              for gv in fn.module.global_values if gv.name.startswith("simt_perm_")]
    values = list(range(64))
    for table in tables:  # in call order: each move reads lane table[lane]
        values = [values[table[lane]] for lane in range(64)]
    assert len(tables) == 2 and values == [lane ^ 4 for lane in range(64)]
