"""naiad.compile: the ahead-of-time driver's contract (stages, defaults, plugin failures)."""
import pytest

import naiad
import naiad.language as tl
from naiad.plugins import TargetSpec, hookimpl
from naiad.plugins import manager


@naiad.jit
def fill_kernel(x_ptr, n, VALUE: tl.constexpr = 3.5, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full((BLOCK,), VALUE, tl.float32), mask=offs < n)


def test_constexpr_defaults_apply_ahead_of_time():
    ck = naiad.compile(fill_kernel, signature={"x_ptr": "*fp32", "n": "i32"}, target="reference")
    assert "tensor<64xf32>" in ck.asm["tile"] and "3.5" in ck.asm["tile"]
    ck = naiad.compile(fill_kernel, signature="*fp32, i32", constexprs={"BLOCK": 128},
                       target="reference")
    assert "tensor<128xf32>" in ck.asm["tile"]


def test_signature_errors_name_the_parameters():
    with pytest.raises(naiad.CompilationError, match="lacks a type for n"):
        naiad.compile(fill_kernel, signature={"x_ptr": "*fp32"}, target="reference")
    with pytest.raises(naiad.CompilationError, match="unknown parameters.*bogus"):
        naiad.compile(fill_kernel, signature={"x_ptr": "*fp32", "n": "i32", "bogus": "i32"},
                      target="reference")
    with pytest.raises(naiad.CompilationError, match="lists 1 types but"):
        naiad.compile(fill_kernel, signature="*fp32", target="reference")


class _BrokenObserver:
    @hookimpl
    def naiad_stage_done(self, stage, ir, target, metadata):
        raise RuntimeError("observer exploded")


def test_a_failing_observer_is_a_warning_naming_it_and_the_compile_goes_on():
    name = manager.register(_BrokenObserver(), name="broken-observer")
    try:
        with pytest.warns(manager.PluginWarning, match="broken-observer.*observer exploded"):
            k = naiad.compile(fill_kernel, signature="*fp32, i32", target="reference")
        assert "tile" in k.asm
    finally:
        manager.unregister(name=name)


class _NoCodegenBackend:
    @hookimpl
    def naiad_targets(self):
        return [TargetSpec(backend="nocodegen", archs=("x1",), warp_sizes={"x1": 32},
                           default_arch="x1")]

    @hookimpl
    def naiad_options(self, target, options):
        if target.backend == "nocodegen":
            return naiad.plugins.Options(num_stages=1)


def test_compiled_target_without_codegen_is_a_target_error():
    name = manager.register(_NoCodegenBackend(), name="nocodegen-plugin")
    try:
        with pytest.raises(naiad.TargetError, match="no plugin provides its codegen"):
            naiad.compile(fill_kernel, signature="*fp32, i32", target="nocodegen:x1")
    finally:
        manager.unregister(name=name)


def test_every_stage_is_kept_for_compiled_targets():
    ck = naiad.compile(fill_kernel, signature="*fp32, i32", target="nvidia:sm_90")
    assert {"tile", "gpu", "llir", "ptx", "cubin"} <= set(ck.asm)
    assert ck.binary_stage == "cubin" and ck.binary[:4] == b"\x7fELF"
    ck = naiad.compile(fill_kernel, signature="*fp32, i32", target="amd:gfx942")
    assert {"tile", "gpu", "llir", "amdgcn", "hsaco"} <= set(ck.asm)
    assert ck.metadata["wavefront_size"] == 64


@naiad.jit
def needs_block(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def test_a_constexpr_without_value_is_named_as_such():
    with pytest.raises(naiad.CompilationError, match="constexpr parameter.*BLOCK.*no value"):
        naiad.compile(needs_block, signature={"x_ptr": "*fp32"}, target="reference")
