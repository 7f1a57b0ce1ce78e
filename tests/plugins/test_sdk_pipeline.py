"""The SDK's pipeline helpers: backends extend the core pipeline by pass name, and the core's
shared-memory allocator sizes backend ops through their registered scratch size."""
from __future__ import annotations

import pytest

import naiad
from naiad.backend import (allocate_shared_memory, default_lowering_passes, insert_passes,
                           pass_name, register_scratch)
from naiad.ir import Function, Module, Operation


def mine(module, ctx=None):
    pass


def test_insert_passes_by_name():
    core = default_lowering_passes()
    names = [pass_name(p) for p in core]
    before = insert_passes(core, [mine], before="allocate_shared_memory")
    assert [pass_name(p) for p in before] == (
        names[:names.index("allocate_shared_memory")] + ["mine"]
        + names[names.index("allocate_shared_memory"):])
    after = insert_passes(core, [mine], after="insert_barriers")
    assert pass_name(after[-1]) == "mine" and len(after) == len(core) + 1
    with pytest.raises(naiad.IRError, match="no pass named 'nope' in the pipeline"):
        insert_passes(core, [mine], before="nope")
    with pytest.raises(naiad.IRError, match="exactly one of"):
        insert_passes(core, [mine], before="assign_layouts", after="insert_barriers")


def test_the_core_allocator_sizes_a_registered_backend_op():
    from naiad.backend import OpDef, register_op
    from naiad.ir import OPS

    if "sdktest.staging" not in OPS:
        register_op(OpDef("sdktest.staging", 0, 0, 0, ("bytes",), frozenset(), "test op"))
    register_scratch("sdktest.staging", lambda op: op.attrs["bytes"])
    m = Module()
    fn = m.add(Function("k", [], attrs={"kernel": True}))
    for size in (4096, 1024):
        fn.body.block.append(Operation("sdktest.staging", [], [], {"bytes": size}))
    allocate_shared_memory(m)
    sizes = [op.attrs.get("scratch") for op in fn.walk()]
    assert sizes == [4096, 1024] and fn.attrs["shared"] == 4096
