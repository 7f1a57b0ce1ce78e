"""What a backend plugs into the GPU layer: its own layout class (naiad_layouts), its own pass
list (naiad_lowering_passes) and kernel attributes (naiad_llvm_attributes)."""
import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pluggy
import pytest

import naiad
import naiad.language as tl
from naiad.gpu.layouts import Layout, linear_of
from naiad.gpu.linear_layout import fit_to_shape
from naiad.gpu.lower.attributes import KernelAttributes, apply_attributes, merge_attributes
from naiad.gpu.passes import default_lowering_passes
from naiad.ir.core import Operation
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.types import TensorType
from naiad.plugins import LLVMAttributes, hookimpl, hookspecs
from simt import run


@dataclass(frozen=True)
class ReversedLanes(Layout):
    """1-D: one element per thread, lanes in bit-reversed order (a layout core has never
    heard of)."""

    mnemonic: ClassVar[str] = "test_reversed"
    lanes: int = dataclasses.field(metadata={"name": "lanes"})
    warps: int = dataclasses.field(metadata={"name": "warps"})

    def to_linear(self, shape):
        nl = self.lanes.bit_length() - 1
        lane = [(1 << (nl - 1 - i),) for i in range(nl)]
        warp = [(self.lanes << i,) for i in range(self.warps.bit_length() - 1)]
        return fit_to_shape({"register": [], "lane": lane, "warp": warp}, shape)


def reverse_stores(module, ctx):
    """A backend pass: every tensor store takes its operands in the backend's own layout."""
    lay = ReversedLanes(ctx.warp_size, ctx.num_warps)
    for fn in module.functions.values():
        for op in list(fn.walk()):
            if op.name != "store" or not isinstance(op.operands[0].type, TensorType):
                continue
            for i, v in enumerate(list(op.operands)):
                cvt = Operation("convert_layout", [v],
                                [TensorType(v.type.shape, v.type.element, lay)])
                op.parent.insert_before(op, cvt)
                op.set_operand(i, cvt.result)


class BackendPlugin:
    def __init__(self):
        self.kernels = []

    @hookimpl
    def naiad_layouts(self, target):
        return [ReversedLanes]

    @hookimpl
    def naiad_lowering_passes(self, target, options):
        passes = default_lowering_passes(target, options)
        return passes[:1] + [reverse_stores] + passes[1:]

    @hookimpl
    def naiad_llvm_attributes(self, target, options, kernel):
        self.kernels.append(kernel)
        return LLVMAttributes(function={"test-threads": str(kernel.threads_per_block)},
                              module_flags={"test_flag": 7})


def plugin_manager(*plugins):
    pm = pluggy.PluginManager("naiad")
    pm.add_hookspecs(hookspecs)
    for p in plugins:
        pm.register(p)
    return pm


@naiad.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)


def test_backend_layout_and_passes_are_lowered_by_core():
    plugin = BackendPlugin()
    pm = plugin_manager(plugin)
    x = np.random.default_rng(5).random(64, dtype=np.float32)
    out = np.full(64, np.nan, np.float32)
    k = run(scale, (1,), [x, out, 50], {"BLOCK": 64}, warp_size=8, num_warps=4, pm=pm)
    np.testing.assert_array_equal(out[:50], x[:50] * 3)
    assert np.isnan(out[50:]).all()
    gpu = k.lowered.gpu_text
    assert "#test_reversed<lanes = 8, warps = 4>" in gpu
    assert print_module(parse_module(gpu)) == gpu  # the backend's layout parses back
    assert '"test-threads"="32"' in k.lowered.llvm_ir
    assert '!"test_flag", i32 7' in k.lowered.llvm_ir
    [kernel] = plugin.kernels
    assert kernel.name == "scale" and kernel.num_warps == 4 and kernel.warp_size == 8


def test_passes_hook_returning_none_uses_the_core_pipeline():
    class Quiet:
        @hookimpl
        def naiad_lowering_passes(self, target, options):
            return None

    pm = plugin_manager(Quiet())
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    k = run(scale, (1,), [x, out, 64], {"BLOCK": 64}, pm=pm)
    np.testing.assert_array_equal(out, x * 3)
    assert "#blocked<" in k.lowered.gpu_text


def _kernel_module():
    from llvmlite import ir

    m = ir.Module(name="t")
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), "k")
    ir.IRBuilder(fn.append_basic_block("entry")).ret_void()
    return m


def test_apply_attributes_sets_them_on_the_llvmlite_module():
    import llvmlite.binding as llvm

    m = _kernel_module()
    attrs = merge_attributes([
        LLVMAttributes(function={"a-b": "1,2"}, calling_convention=None),
        LLVMAttributes(function={"x": "y"}, module_flags={"flag_one": 500, "flag_two": (2, 3)},
                       metadata={"test.annotations": [["@kernel", "kernel", 1]]}),
        None,
    ])
    apply_attributes(m, "k", attrs, "fastcc")
    out = str(m)
    define = next(line for line in out.splitlines() if line.startswith("define"))
    assert define.startswith('define fastcc void @"k"')
    assert '"a-b"="1,2"' in define and '"x"="y"' in define
    parsed = llvm.parse_assembly(out)
    parsed.verify()
    text = str(parsed)                      # as LLVM reads them back
    assert '"a-b"="1,2"' in text and '"x"="y"' in text
    assert '!{i32 1, !"flag_one", i32 500}' in text and '!{i32 2, !"flag_two", i32 3}' in text
    assert '!{ptr @k, !"kernel", i32 1}' in text
    # a later plugin's calling convention wins over the TargetInfo default
    m2 = _kernel_module()
    apply_attributes(m2, "k", merge_attributes([LLVMAttributes(calling_convention="coldcc")]),
                     "fastcc")
    assert "define coldcc void" in str(m2)


def test_apply_attributes_rejects_bad_hook_answers():
    from naiad.errors import CodegenError

    with pytest.raises(CodegenError, match="must return naiad.plugins.LLVMAttributes, got list"):
        merge_attributes([["not", "a", "dict"]])
    with pytest.raises(CodegenError, match="not found"):
        apply_attributes(_kernel_module(), "other", KernelAttributes(), "")


def test_layout_linear_form_is_cached():
    lay = ReversedLanes(8, 2)
    assert linear_of(lay, (16,)) is linear_of(lay, (16,))
    assert linear_of(lay, (16,)).apply(0, 1, 0) == (4,)
