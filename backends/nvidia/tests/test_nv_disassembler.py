"""``compiled.asm["sass"]`` is the cubin disassembled on first read (cuobjdump/nvdisasm), a clear
error without them; Triton-only stages (``ttgir``) raise a KeyError saying what naiad has."""
from __future__ import annotations

import os

import pytest

import naiad
import naiad.language as tl
from naiad.errors import CodegenError
from naiad_nvidia import disassembler

TRITON_BIN = ("/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/triton/backends/"
              "nvidia/bin")


@naiad.jit
def count(bins, x):
    offs = tl.arange(0, 128)
    tl.atomic_add(bins + tl.load(x + offs) % 8, 1, sem="relaxed")


def _compiled():
    return naiad.compile(count, signature="*i32,*i32", target="nvidia:sm_90")


def _tool_path():
    if disassembler.find_tool():
        return os.environ["PATH"]
    if os.path.exists(os.path.join(TRITON_BIN, "cuobjdump")):
        return os.environ["PATH"] + os.pathsep + TRITON_BIN
    return None


def test_sass_is_derived_on_first_read(monkeypatch):
    path = _tool_path()
    if path is None:
        pytest.skip("no cuobjdump/nvdisasm here (CUDA toolkit or Triton's bundled tools)")
    monkeypatch.setenv("PATH", path)
    k = _compiled()
    assert "sass" not in k.asm
    sass = k.asm["sass"]
    assert "Function : count" in sass and "ATOMG" in sass
    assert k.asm["sass"] is sass   # kept


def test_no_disassembler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(disassembler, "find_tool", lambda: None)
    with pytest.raises(CodegenError, match="cuobjdump or nvdisasm"):
        _compiled().asm["sass"]


@pytest.mark.parametrize("stage, has", [("ttgir", "asm['gpu']"), ("ttir", "asm['tile']"),
                                        ("amdgcn", "not produced")])
def test_missing_stage_says_why(stage, has):
    with pytest.raises(KeyError) as e:
        _compiled().asm[stage]
    assert has in str(e.value) and "ptx" in str(e.value)
