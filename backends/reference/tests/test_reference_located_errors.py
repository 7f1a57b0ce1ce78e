"""Errors the reference executor raises while running a launched kernel name the kernel's source
line: the "tile" stage keeps each op's location (``loc(...)``) through its printed text, the
on-disk cache included (issue 13, item 6)."""
import inspect

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import OutOfBoundsError
from naiad_reference import ReferenceArgumentError
from refkit import poison, random_array, rng


@naiad.jit
def strided_store(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs * 2, v)   # the bad line: twice too far


@naiad.jit
def cas_flags(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_cas(x_ptr + offs, 0, 1)


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn.fn)
    (k,) = [i for i, line in enumerate(lines) if text in line]
    return first + k


@pytest.fixture(autouse=True)
def on_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("NAIAD_CACHE_DIR", str(tmp_path / "cache"))
    for k in (strided_store, cas_flags):
        k.cache_clear()
    with naiad.target("reference"):
        yield


@pytest.mark.parametrize("mode", ["auto", "sequential"])
@pytest.mark.parametrize("from_disk", [False, True])
def test_out_of_bounds_names_the_kernel_line(monkeypatch, mode, from_disk):
    monkeypatch.setenv("NAIAD_REFERENCE_MODE", mode)
    x = random_array(rng(), 16, np.float32)
    out = poison(16, np.float32)
    if from_disk:   # compiled earlier, read back from the cache as text
        strided_store.warmup(x, out, BLOCK=8)
        strided_store.cache_clear()
    with pytest.raises(OutOfBoundsError) as exc:
        strided_store[(2,)](x, out, BLOCK=8)
    if from_disk:
        assert strided_store.cache_info()["disk_hits"] == 1
    line = _line_of(strided_store, "the bad line")
    message = str(exc.value)
    assert f"{__file__}:{line}:" in message, message
    assert "tl.store(out_ptr + offs * 2, v)" in message
    assert exc.value.argument == "out_ptr" and exc.value.offset == 16


def test_atomic_cas_into_a_read_only_array_is_a_clean_error():
    flags = np.zeros(8, np.int32)
    flags.flags.writeable = False
    with pytest.raises(ReferenceArgumentError, match="atomic_cas to argument 'x_ptr', a "
                                                     "read-only numpy array") as exc:
        cas_flags[(1,)](flags, BLOCK=8)
    assert f"{__file__}:{_line_of(cas_flags, 'atomic_cas')}:" in str(exc.value)
    assert (flags == 0).all()
    writable = np.zeros(8, np.int32)
    cas_flags[(1,)](writable, BLOCK=8)        # and on a writable array it works
    assert (writable == 1).all()
