"""A backend's own GPU-IR op: placed by its pass before layout assignment with layouts fixed,
kept (and carried through a loop) by the core's assignment, lowered through
``TargetInfo.op_lowering`` -- the extension point tensor-core matmuls use, checked here on the
CPU SIMT device with a made-up op."""
import numpy as np
import pytest

import naiad
import naiad.language as tl
import simt
from naiad.errors import IRError
from naiad.gpu.passes import default_lowering_passes
from naiad.ir.core import Operation
from naiad.ir.ops import PURE, OpDef, register_op
from naiad.ir.types import TensorType
from naiad.plugins import hookimpl
from simt import run
from test_backend_hooks import ReversedLanes, plugin_manager

register_op(OpDef("test.add", 2, 1, 0, (), frozenset({PURE}), "a + b on the backend's layout"))


def use_backend_add(module, ctx):
    """Before assign_layouts: every tensor ``add`` inside a loop becomes ``test.add`` on the
    backend's layout, its operands moved there by explicit conversions."""
    lay = ReversedLanes(ctx.warp_size, ctx.num_warps)
    for fn in module.functions.values():
        for op in list(fn.walk()):
            if op.name != "add" or op.parent_op is None or op.parent_op.name != "for" \
                    or not isinstance(op.results[0].type, TensorType):
                continue
            operands = []
            for v in op.operands:
                cvt = Operation("convert_layout", [v],
                                [TensorType(v.type.shape, v.type.element, lay)])
                op.parent.insert_before(op, cvt)
                operands.append(cvt.result)
            t = op.results[0].type
            new = Operation("test.add", operands, [TensorType(t.shape, t.element, lay)])
            op.parent.insert_before(op, new)
            op.results[0].replace_all_uses_with(new.result)
            op.erase()


class OwnOpBackend:
    @hookimpl
    def naiad_layouts(self, target):
        return [ReversedLanes]

    @hookimpl
    def naiad_lowering_passes(self, target, options):
        return [use_backend_add] + default_lowering_passes(target, options)


@naiad.jit
def accumulate(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(steps):
        acc = acc + tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


def test_backend_op_is_lowered_by_its_target_info(monkeypatch):
    asked = []

    def op_lowering(self, name):
        asked.append(name)
        if name != "test.add":
            return None

        def lower(kl, op):
            a, b = (kl.get(v) for v in op.operands)
            kl.set(op.results[0], [kl.b.fadd(x, y) for x, y in zip(a, b)])
        return lower

    monkeypatch.setattr(simt.CpuTargetInfo, "op_lowering", op_lowering, raising=False)
    x = np.random.default_rng(3).standard_normal((5, 32)).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    k = run(accumulate, (1,), [x, out, 5], {"BLOCK": 32}, warp_size=8, num_warps=4,
            pm=plugin_manager(OwnOpBackend()))
    np.testing.assert_allclose(out, x.sum(axis=0), rtol=1e-6, atol=1e-6)
    assert asked == ["test.add"]
    gpu = k.lowered.gpu_text
    loop = gpu[gpu.index(" = for "):gpu.index("yield")]
    # the accumulator is carried in the backend's layout: inside the loop only the loaded
    # tile converts
    assert "#test_reversed<lanes = 8, warps = 4>" in loop.splitlines()[0]
    assert loop.count("convert_layout") == 1 and "test.add" in loop


def test_unknown_backend_op_without_a_lowering_is_an_error():
    x = np.ones((2, 32), np.float32)
    out = np.zeros(32, np.float32)
    with pytest.raises(IRError, match="no rule for op 'test.add'"):
        run(accumulate, (1,), [x, out, 2], {"BLOCK": 32}, warp_size=8, num_warps=4,
            pm=plugin_manager(OwnOpBackend()))
