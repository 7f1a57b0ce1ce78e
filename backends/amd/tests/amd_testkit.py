"""Shared helpers of the AMD backend tests (no GPU or ROCm needed); conftest.py turns them into
fixtures. A module of its own because ``from conftest import`` is ambiguous once several backend
test folders each have a conftest.py."""
from __future__ import annotations

import pytest

from naiad.plugins import Target

from naiad_amd.archs import ARCHS
from naiad_amd.codegen import AmdCodegen
from naiad_amd.options import AmdOptions, llvm_attributes

#: One arch per code-generation family the tests exercise in depth (CDNA2, CDNA3 wave64; RDNA3
#: wave32); test_amd_archs compiles a kernel for every arch in ARCHS.
REPRESENTATIVE_ARCHS = ("gfx90a", "gfx942", "gfx1100")


def amd_target(arch: str) -> Target:
    return Target("amd", arch, ARCHS[arch].wave_size)


@pytest.fixture(params=REPRESENTATIVE_ARCHS)
def arch(request):
    return request.param


@pytest.fixture
def target(arch):
    return amd_target(arch)


@pytest.fixture
def codegen(target):
    return AmdCodegen(target)


def attrs_for(target, **opts):
    o = AmdOptions(**opts)
    return o, llvm_attributes(target, o)
