"""The GPU-IR ops ``amd.buffer_load`` and ``amd.buffer_store``: a tensor access as a uniform base
pointer plus 32-bit per-element offsets, lowered to AMDGPU buffer instructions.

    %v = amd.buffer_load %base, %offsets[, %mask[, %other]] {vec = N} : tensor<...>
    amd.buffer_store %base, %offsets, %value[, %mask] {vec = N}

``base`` is a scalar pointer (the same for the whole program, so it lives in SGPRs as the buffer
resource's base address); ``offsets`` an i32 tensor of element offsets from it, proven to lie in
``[0, 2**31)`` bytes by :mod:`naiad_amd.passes.buffer_ops`. Where ``mask`` is false the lowering
gives the lane an offset past the resource's ``num_records``: the hardware then returns 0 for
loads and drops stores, so no branch is needed. ``vec`` is the load's/store's vector width,
carried over from the op it replaces. Placed by ``convert_to_buffer_ops``, lowered by
:mod:`naiad_amd.lowering.buffer_ops`. Registered when this module is imported.
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op, register_verifier
from naiad.ir import PointerType, TensorType, i1, i32

BUFFER_LOAD = "amd.buffer_load"
BUFFER_STORE = "amd.buffer_store"

register_op(OpDef(BUFFER_LOAD, (2, 4), 1, 0, (), frozenset(),
                  "buffer_load(base, offsets[, mask[, other]]): base + offsets, 0 where masked "
                  "off (or other); attr vec"))
register_op(OpDef(BUFFER_STORE, (3, 4), 0, 0, (), frozenset(),
                  "buffer_store(base, offsets, value[, mask]): dropped where masked off; attr vec"))


def _check_address(op, shape):
    base, offsets = op.operands[0], op.operands[1]
    if not isinstance(base.type, PointerType):
        return f"base must be a scalar pointer, got {base.type}"
    if not isinstance(offsets.type, TensorType) or offsets.type.element != i32:
        return f"offsets must be an i32 tensor, got {offsets.type}"
    if offsets.type.shape != shape:
        return f"offsets shape {offsets.type.shape} differs from the data's {shape}"
    return None


def _check_mask(mask, shape):
    if mask is None:
        return None
    t = mask.type
    if not isinstance(t, TensorType) or t.element != i1 or t.shape != shape:
        return f"mask must be an i1 tensor of shape {shape}, got {t}"
    return None


def _verify_load(op):
    res = op.results[0].type
    if not isinstance(res, TensorType):
        return f"result must be a tensor, got {res}"
    err = _check_address(op, res.shape)
    if err is None and res.element != op.operands[0].type.pointee:
        err = f"result element {res.element} differs from the base's pointee {op.operands[0].type.pointee}"
    err = err or _check_mask(op.operands[2] if len(op.operands) > 2 else None, res.shape)
    if err is None and len(op.operands) > 3 and op.operands[3].type.shape != res.shape:
        err = f"other must have the result's shape {res.shape}, got {op.operands[3].type}"
    return err


def _verify_store(op):
    value = op.operands[2].type
    if not isinstance(value, TensorType):
        return f"value must be a tensor, got {value}"
    err = _check_address(op, value.shape)
    if err is None and value.element != op.operands[0].type.pointee:
        err = f"value element {value.element} differs from the base's pointee {op.operands[0].type.pointee}"
    return err or _check_mask(op.operands[3] if len(op.operands) > 3 else None, value.shape)


register_verifier(BUFFER_LOAD, _verify_load)
register_verifier(BUFFER_STORE, _verify_store)
