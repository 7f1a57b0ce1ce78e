"""The ``naiad`` command (in-process through naiad.cli.main, plus the installed script)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from naiad import cli
from naiad_stub_backend import StubBackend

KERNEL_FILE = '''
import naiad

@naiad.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
    pass
'''


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(textwrap.dedent(KERNEL_FILE))
    return path


def test_targets_lists_plugins_targets_and_broken(isolated_pm, capsys):
    from naiad.plugins.manager import BrokenPlugin

    isolated_pm.register(StubBackend("stub"), name="stub-plugin")
    isolated_pm.register(StubBackend("gpu", compiled=True, archs=("g1", "g2"),
                                     detect=lambda: "g2"), name="gpu-plugin")
    isolated_pm.broken.append(BrokenPlugin("vendorx", "import", "ImportError: no libfoo",
                                           "vendorx.plugin"))
    assert cli.main(["targets"]) == 0
    out = capsys.readouterr().out
    assert "stub-plugin" in out and "gpu-plugin" in out
    assert "vendorx (vendorx.plugin): import failed: ImportError: no libfoo" in out
    assert "current target: gpu:g2" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines()
             if line.startswith("  ") and ":" in line.split()[0]}
    assert lines["stub:v1"][1:4] == ["32", "interpreted", "yes"]
    assert lines["gpu:g1"][1:4] == ["32", "compiled", "no"]
    assert lines["gpu:g2"][1:4] == ["64", "compiled", "yes"]


def test_compile_prints_and_writes_stages(stub, fake_compiler, kernel_file, tmp_path, capsys):
    rc = cli.main(["compile", f"{kernel_file}:add", "--signature",
                   "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32", "--constexpr", "BLOCK=1024",
                   "--option", "num_warps=8", "--target", "stub:v2", "--emit", "tile"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "// ----- tile (add, stub:v2) -----" in out
    call = fake_compiler.calls[-1]
    assert call["constexprs"] == {"BLOCK": 1024} and call["options"] == {"num_warps": 8}
    assert call["signature"]["n"] == "i32" and call["target"] == "stub:v2"
    out_dir = tmp_path / "out"
    rc = cli.main(["compile", f"{kernel_file}:add", "-s", "*fp16,*fp16,*fp16,i64",
                   "-c", "BLOCK=64", "--out", str(out_dir)])
    assert rc == 0
    text = (out_dir / "add.tile").read_text()
    assert json.loads(text)["signature"]["x_ptr"] == "*fp16"


def test_compile_errors_are_one_line(stub, fake_compiler, kernel_file, capsys):
    assert cli.main(["compile", f"{kernel_file}:add", "-s", "*fp32,*fp32,*fp32,i32",
                     "-c", "BLOCK=16", "--emit", "tile,ptx"]) == 1
    assert "stage(s) ptx not produced for target stub:v1; available: tile" \
        in capsys.readouterr().err
    assert cli.main(["compile", f"{kernel_file}:nope", "-s", "i32"]) == 1
    assert "defines no 'nope'" in capsys.readouterr().err
    assert cli.main(["compile", "missing.py:add", "-s", "i32"]) == 1
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["compile", f"{kernel_file}:add", "-s", "*fp32,*fp32,*fp32,i32",
                     "-c", "BLOCK=16", "--target", "tpu"]) == 1
    assert "unknown target 'tpu'" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["targets", "--bogus"])
    assert exc.value.code == 2


def test_conformance_path_finds_the_suite():
    path = cli.conformance_path()
    assert path is not None and (path / "conftest.py").is_file()


def test_conformance_passes_arguments_to_pytest(monkeypatch, capsys):
    seen = {}

    def fake_call(cmd, cwd=None):
        seen["cmd"], seen["cwd"] = cmd, cwd
        return 0

    monkeypatch.setattr(cli.subprocess, "call", fake_call)
    assert cli.main(["conformance", "--backend", "amd", "-k", "elementwise", "-x"]) == 0
    cmd = seen["cmd"]
    assert cmd[1:3] == ["-m", "pytest"] and Path(cmd[3]) == cli.conformance_path()
    assert "--backend=amd" in cmd and cmd[-3:] == ["-k", "elementwise", "-x"]


def test_console_script_is_installed():
    beside = Path(sys.executable).parent / "naiad"
    exe = str(beside) if beside.exists() else shutil.which("naiad")
    if exe is None:
        pytest.skip("the naiad console script is not on PATH (package not pip-installed)")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "targets" in out.stdout and "conformance" in out.stdout
