"""Kernels Triton rejects are rejected by naiad too (issue #13), with a CompilationError at the
kernel line that carries Triton's key phrase; the valid neighbours still compile."""
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError

from frontend_testutil import compile_ir, ops


@naiad.jit
def join_kernel(x_ptr, y_ptr, out_ptr, OTHER: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if OTHER == "tensor":
        j = tl.join(x, tl.load(y_ptr + offs))
    else:
        j = tl.join(x, 2)
    tl.store(out_ptr + tl.arange(0, 32), tl.reshape(j, [32]))


def test_join_of_different_types_is_refused():
    with pytest.raises(CompilationError, match="same type, got f16 and f32") as exc:
        compile_ir(join_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                   {"OTHER": "tensor"})
    assert "tl.join" in exc.value.source_line


def test_join_of_one_type_and_with_a_number_compiles():
    module, _ = compile_ir(join_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16",
                                         "out_ptr": "*fp16"}, {"OTHER": "tensor"})
    assert str(ops(module, "join")[0].results[0].type) == "tensor<16x2xf16>"
    module, _ = compile_ir(join_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16",
                                         "out_ptr": "*fp16"}, {"OTHER": "number"})
    assert str(ops(module, "join")[0].results[0].type) == "tensor<16x2xf16>"


@naiad.jit
def broadcast_kernel(x_ptr, out_ptr, HOW: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    if HOW == "rank":
        y = tl.broadcast_to(x, (2, 4))
    elif HOW == "same_rank":
        y = tl.broadcast_to(x[None, :], (2, 4))
    else:
        y = tl.broadcast_to(tl.sum(x, 0), (2, 4))  # a scalar is splat
    tl.store(out_ptr + tl.arange(0, 2)[:, None] * 4 + tl.arange(0, 4)[None, :], y)


def test_rank_changing_broadcast_to_is_refused():
    with pytest.raises(CompilationError, match=r"Cannot broadcast, rank mismatch: \[4\], \[2, 4\]") \
            as exc:
        compile_ir(broadcast_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"HOW": "rank"})
    assert "tl.broadcast_to" in exc.value.source_line


@pytest.mark.parametrize("how", ["same_rank", "scalar"])
def test_broadcast_to_of_same_rank_or_scalar_compiles(how):
    module, _ = compile_ir(broadcast_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                           {"HOW": how})
    assert ops(module, "store")
