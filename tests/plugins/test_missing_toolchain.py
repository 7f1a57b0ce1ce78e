"""A backend whose toolchain is not installed (naiad[nvidia] / naiad[amd] left out) is listed as
unavailable with the reason, never auto-selected, and compiling for it says why."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

import naiad
import naiad.language as tl
from naiad.plugins import manager

from naiad_amd import plugin as amd_plugin
from naiad_nvidia import plugin as nv_plugin


@naiad.jit
def copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@pytest.fixture
def without(monkeypatch):
    """Hide top-level packages from importlib.util.find_spec, as on a machine without them."""
    real = importlib.util.find_spec

    def hide(*names):
        def find_spec(name, *args, **kw):
            if name.split(".")[0] in names:
                return None
            return real(name, *args, **kw)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        manager.get_plugin_manager()._changed()   # ask naiad_targets again

    yield hide
    monkeypatch.undo()
    manager.get_plugin_manager()._changed()


@pytest.mark.parametrize("backend, package, reason", [
    ("nvidia", "cuda", r"cuda-bindings \(nvJitLink\) is not installed: pip install 'naiad\[nvidia\]'"),
    ("amd", "ziglang", r"ziglang \(ld.lld\) is not installed: pip install 'naiad\[amd\]'"),
])
def test_a_missing_toolchain_makes_the_target_unavailable(without, backend, package, reason):
    without(package)
    spec = manager.get_plugin_manager().target_table()[backend].spec
    assert spec.unavailable is not None
    with pytest.raises(naiad.TargetError, match=f"target {backend}:.* is unavailable on this "
                                                f"machine: {reason}"):
        naiad.compile(copy, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                      constexprs={"BLOCK": 32}, target=backend)


def test_installed_toolchains_are_available():
    table = manager.get_plugin_manager().target_table()
    assert nv_plugin.missing_toolchain() is None and table["nvidia"].spec.unavailable is None
    assert amd_plugin.missing_toolchain() is None and table["amd"].spec.unavailable is None


def test_naiad_targets_lists_the_reason(tmp_path):
    """The CLI in a fresh process where ziglang cannot be found."""
    hide = tmp_path / "sitecustomize.py"
    hide.write_text("import importlib.util as u\n_real = u.find_spec\n"
                    "u.find_spec = lambda n, *a, **k: None if n.split('.')[0] == 'ziglang' "
                    "else _real(n, *a, **k)\n")
    env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:" + ":".join(sys.path)}
    out = subprocess.run([sys.executable, "-m", "naiad.cli", "targets"], env=env,
                         capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.strip().startswith("amd:gfx942"))
    assert "unavailable: ziglang (ld.lld) is not installed: pip install 'naiad[amd]'" in line
