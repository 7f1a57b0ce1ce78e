"""Host ``TensorDescriptor`` launches on the warm path (stub backend, fake compiler): the
companion kernel receives the spread fields positionally, so a repeated launch with fresh
descriptor objects (what tutorial code builds per call) is a warm-path hit, not a slow bind."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
from naiad.tools.tensor_descriptor import TensorDescriptor


@naiad.jit
def copy_tile(src_desc, dst_desc, row, BR: "tl.constexpr"):
    pass


def _companion(fn):
    (companion,) = fn.__dict__["_naiad_descriptor_kernels"].values()
    return companion


def test_repeated_descriptor_launches_take_the_warm_path(stub, fake_compiler):
    rng = np.random.default_rng(21)
    src = rng.standard_normal((48, 40)).astype(np.float32)
    dst = np.full((48, 40), np.nan, np.float32)
    for row in (16, 32, 16):
        copy_tile[(3,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), row, BR=16)
    assert len(fake_compiler.calls) == 1
    call = fake_compiler.calls[0]
    assert call["constexprs"]["src_desc__block"] == (16, 8)
    assert call["constexprs"]["dst_desc__padding"] == "zero"
    launches = stub.launcher.launches
    assert len(launches) == 3
    for launch, row in zip(launches, (16, 32, 16)):
        args = launch["args"]
        assert args[0] is src and list(args[1:5]) == [48, 40, 40, 1]
        assert args[5] is dst and args[-1] == row
    from naiad.runtime.launch import runtime_of

    # once warm, each launch runs the generated warm path (not a slow bind hitting the cache)
    rt = runtime_of(_companion(copy_tile))
    before = rt.warm_launches
    for row in (0, 32):
        copy_tile[(3,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), row, BR=16)
    assert rt.warm_launches == before + 2 and len(fake_compiler.calls) == 1


def test_descriptor_after_a_defaulted_parameter_is_refused(stub, fake_compiler):
    @naiad.jit
    def two(a_desc, n=4, b_desc=None):
        pass

    x = np.zeros((16, 16), np.float32)
    with pytest.raises(naiad.NaiadError, match="follows parameter .n., left to its default"):
        two[(1,)](TensorDescriptor.from_tensor(x, [16, 16]),
                  b_desc=TensorDescriptor.from_tensor(x, [16, 16]))
