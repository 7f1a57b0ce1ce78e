"""Each compiled backend declares its stages and validates its own binaries (the conformance
compile tier asks the backend instead of knowing "cubin" or "hsaco")."""
from __future__ import annotations

import dataclasses

import pytest

import naiad
import naiad.language as tl
from naiad.plugins import BinaryResult, get_plugin_manager


@naiad.jit
def copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def _result(target: str):
    k = naiad.compile(copy, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                      constexprs={"BLOCK": 64}, target=target)
    codegen = get_plugin_manager().hook.naiad_codegen(target=k.target)
    stages = {s: k.asm[s] for s in codegen.stages}
    return codegen, BinaryResult(stages, k.binary_stage, dict(k.metadata),
                                 k.metadata["resources"])


@pytest.mark.parametrize("target, stages", [("nvidia:sm_90", ("ptx", "cubin")),
                                            ("amd:gfx942", ("llir-opt", "amdgcn", "hsaco"))])
def test_backends_declare_their_stages_and_accept_their_binaries(target, stages):
    codegen, result = _result(target)
    assert codegen.stages == stages and result.binary_stage == stages[-1]
    codegen.validate_binary(result)
    assert result.resources.registers > 0


@pytest.mark.parametrize("target", ["nvidia:sm_90", "amd:gfx942"])
def test_a_corrupt_or_foreign_binary_is_rejected(target):
    codegen, good = _result(target)
    binary = good.binary_stage
    corrupt = dataclasses.replace(good, stages={**good.stages, binary: b"\x7fELF" + b"\0" * 60})
    with pytest.raises(naiad.CodegenError):
        codegen.validate_binary(corrupt)
    other = "amd:gfx942" if target.startswith("nvidia") else "nvidia:sm_90"
    _, foreign = _result(other)
    swapped = dataclasses.replace(good, stages={**good.stages,
                                                binary: foreign.stages[foreign.binary_stage]})
    with pytest.raises(naiad.CodegenError):
        codegen.validate_binary(swapped)
    missing = dataclasses.replace(good, stages={binary: good.stages[binary]})
    with pytest.raises(naiad.CodegenError, match="missing"):
        codegen.validate_binary(missing)
