"""Shared setup for the NVIDIA backend tests.

Makes ``naiad`` (core/) and ``naiad_nvidia`` importable before the project is pip-installed, and
provides the ``gpu`` marker: such tests run only where an NVIDIA device is present.
"""
from __future__ import annotations

import os
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
for _p in (os.path.join(_ROOT, "core"), os.path.join(_ROOT, "backends", "nvidia"),
           os.path.dirname(os.path.abspath(__file__))):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from naiad.plugins import Target  # noqa: E402
from nv_kernels import GPU_ARCH  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and driver (skipped otherwise)")


def pytest_collection_modifyitems(config, items):
    if GPU_ARCH is not None:
        return
    skip = pytest.mark.skip(reason="no NVIDIA driver/device on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # not the tests/gpu folder's name
            item.add_marker(skip)


@pytest.fixture
def target():
    return Target("nvidia", "sm_90", 32)


@pytest.fixture
def allocator():
    """``set_allocator``, with the allocator in place before the test restored after it."""
    from naiad.runtime.allocator import get_allocator, set_allocator

    before = get_allocator()
    yield set_allocator
    set_allocator(before)


@pytest.fixture
def device_allocator(allocator):
    """Scratch for maps built in the kernel (``tl.make_tensor_descriptor``): naiad device
    memory, as ``triton.set_allocator`` is given torch's."""
    import numpy as np

    import naiad

    allocator(lambda size, align, stream: naiad.empty((size,), np.int8))
