"""The stand-ins Triton's tutorials 09/10 import under ``naiad run``: ``triton.profiler`` (scopes,
sessions, kernel launches through ``launch_metadata``, the viewer), ``triton._C.libtriton``'s
vendor-BLAS handle, and tutorial 10 reaching its own "needs block-scaled MMA" message."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="the tutorials' stand-ins take torch tensors")

PROGRAM = '''
import torch, triton, triton.language as tl
import triton.profiler as proton
import triton.profiler.viewer as viewer
from triton._C.libtriton import nvidia

def meta(grid, kernel, args):
    return {"name": f"{kernel.name} [N={args['N']}]", "flops32": 1.0 * args["N"], "bytes": 12 * args["N"]}

@triton.jit(launch_metadata=meta)
def add(x, y, o, N, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < N
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

torch.manual_seed(0)
x, y = torch.rand(1000), torch.rand(1000)
o = torch.full((1000,), float("nan"))
proton.start("prof", hook="triton")
proton.deactivate()
add[(8,)](x, y, o, 1000, B=128)          # not recorded: the session is inactive
proton.activate(0)
with proton.scope("torch", {"flops32": 2000.0}):
    z = x + y
for _ in range(3):
    add[(8,)](x, y, o, 1000, B=128)
proton.deactivate(0)
proton.finalize()
assert torch.equal(o, x + y)
tree, metrics = viewer.parse(["time/ms", "tflop32/s"], "prof.hatchet")
viewer.print_tree(tree, metrics)

blas = nvidia.cublas.CublasLt(torch.empty(16, dtype=torch.uint8))
a, b = torch.randn(64, 32).half(), torch.randn(48, 32).half()
c = torch.full((64, 48), float("nan")).half()
blas.matmul(a, b, c)
assert torch.allclose(c.float(), a.float() @ b.float().T, atol=0.1, rtol=0.01)
try:
    blas.matmul(a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn), c)
except TypeError as e:
    print("fp8:", e)
print("done")
'''


def _run(args, cwd):
    return subprocess.run([sys.executable, "-m", "naiad", "run", "--target", "reference", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_profiler_records_scopes_and_launches(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = _run(["prog.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("done")
    assert "fp8:" in done.stdout and "cuBLAS" in done.stdout
    root, = json.loads((tmp_path / "prof.hatchet").read_text())
    kids = {c["frame"]["name"]: c["metrics"] for c in root["children"]}
    assert set(kids) == {"torch", "add [N=1000]"}
    assert kids["add [N=1000]"]["count"] == 3 and kids["add [N=1000]"]["flops32"] == 3000.0
    assert kids["torch"]["count"] == 1 and kids["torch"]["time (ns)"] > 0
    lines = done.stdout.splitlines()
    assert lines[0] == "time/ms tflop32/s"
    assert any(ln.endswith("  add [N=1000]") for ln in lines)


def test_viewer_rejects_an_unknown_metric(tmp_path):
    from naiad.profiler import viewer

    (tmp_path / "p.hatchet").write_text(json.dumps([{"frame": {"name": "ROOT"}, "metrics":
                                                     {"count": 1, "time (ns)": 5}}]))
    with pytest.raises(ValueError, match="unknown metric 'bogus/s'"):
        viewer.parse(["bogus/s"], str(tmp_path / "p.hatchet"))


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUTORIALS = next((d for d in (os.environ.get("NAIAD_TRITON_TUTORIALS"),
                              os.path.join(ROOT, "..", "shared", "triton-tutorials"),
                              os.path.join(ROOT, "..", "..", "shared", "triton-tutorials"))
                  if d and os.path.isdir(d)), None)


@pytest.mark.skipif(TUTORIALS is None, reason="Triton's tutorial files are not at "
                    "../shared/triton-tutorials (set NAIAD_TRITON_TUTORIALS)")
def test_tutorial_10_reaches_its_hardware_message(tmp_path):
    done = _run([os.path.join(TUTORIALS, "10-block-scaled-matmul.py")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "requires GPU support for block scaled matmul" in done.stdout
