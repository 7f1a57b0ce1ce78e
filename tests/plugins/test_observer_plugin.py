"""The example out-of-tree plugin (docs/examples/observer_plugin) installed with pip, discovered
through its entry point, and called while naiad compiles a kernel."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from example_install import env_with, install_example

KERNEL = '''
import naiad
import naiad.language as tl

@naiad.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)
'''

SCRIPT = '''
import json, warnings
warnings.simplefilter("ignore")
import numpy as np
import naiad
from naiad.plugins.manager import get_plugin_manager

pm = get_plugin_manager()
result = {"plugins": dict(pm.origins), "broken": [b.name for b in pm.broken]}
import naiad_stage_stats
result["same_module"] = pm.get_plugin("stage_stats") is naiad_stage_stats

from kernel_mod import add
compiled = naiad.compile(add, signature="*fp32,*fp32,*fp32,i32", constexprs={"BLOCK": 64},
                         target="reference")
result["after_compile"] = json.loads(json.dumps(naiad_stage_stats.STATS))
result["tile_bytes"] = len(compiled.asm["tile"].encode())

n = 200
rng = np.random.default_rng()
x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, np.float32)
with naiad.target("reference"):
    add[(naiad.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
result["max_error"] = float(np.abs(out - (x + y)).max())
result["after_launch"] = naiad_stage_stats.STATS["tile"]["count"]
print("RESULT " + json.dumps(result))
'''


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    return install_example("observer_plugin", tmp_path_factory.mktemp("observer"))


def test_example_is_a_real_distribution(installed_plugin):
    infos = list(installed_plugin.glob("naiad_stage_stats-0.1.0.dist-info"))
    assert infos, sorted(p.name for p in installed_plugin.iterdir())
    entry_points = (infos[0] / "entry_points.txt").read_text()
    assert "[naiad.backends]" in entry_points
    assert "stage_stats = naiad_stage_stats" in entry_points
    assert (installed_plugin / "naiad_stage_stats" / "__init__.py").is_file()


def test_naiad_discovers_and_calls_the_installed_plugin(installed_plugin, tmp_path):
    (tmp_path / "kernel_mod.py").write_text(textwrap.dedent(KERNEL))
    env = env_with(installed_plugin, tmp_path)
    env["NAIAD_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    assert result["plugins"]["stage_stats"] == "naiad_stage_stats [naiad-stage-stats 0.1.0]"
    assert "stage_stats" not in result["broken"]
    assert result["same_module"] is True
    tile = result["after_compile"]["tile"]
    assert tile["count"] == 1 and tile["bytes"] == result["tile_bytes"] > 0
    assert tile["kernels"] == ["add@reference:numpy"]
    assert tile["lines"] > 3
    # launching compiles again (fresh cache) and the observer sees that stage too
    assert result["after_launch"] == 2
    assert result["max_error"] < 1e-6
