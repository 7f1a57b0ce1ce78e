"""Triton's cache modifiers are PTX cache operators on NVIDIA: ``tl.load(..., cache_modifier=
".cv")`` is ``ld.global.cv``, ``tl.store(..., cache_modifier=".cg")`` is ``st.global.cg`` --
masked or not, scalar or vector -- and no other operator appears (what Triton's
``test_load_cache_modifier``/``test_store_cache_modifier`` check). Values: the ``gpu`` test."""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
import naiad.language as tl

LOADS = ["", ".ca", ".cg", ".cs", ".cv"]
STORES = ["", ".wb", ".cg", ".cs", ".wt"]


@naiad.jit
def copy(dst, src, n, LOAD: tl.constexpr, STORE: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, 128)
    if MASKED:
        x = tl.load(src + offs, mask=offs < n, cache_modifier=LOAD)
        tl.store(dst + offs, x, mask=offs < n, cache_modifier=STORE)
    else:
        x = tl.load(src + offs, cache_modifier=LOAD)
        tl.store(dst + offs, x, cache_modifier=STORE)


def _ptx(load, store, masked, sig="*fp32,*fp32,i32"):
    return naiad.compile(copy, signature=sig, target="nvidia:sm_90",
                         constexprs={"LOAD": load, "STORE": store, "MASKED": masked}).asm["ptx"]


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("load,store", list(zip(LOADS, STORES)))
def test_modifier_is_the_ptx_cache_operator(load, store, masked):
    ptx = _ptx(load, store, masked)
    loads = set(re.findall(r"\bld\.global(\.c[agsv])?\.", ptx))
    stores = set(re.findall(r"\bst\.global(\.(?:wb|cg|cs|wt))?\.", ptx))
    assert loads == {load} and stores == {store}


def test_cv_load_is_not_merged():
    """``.cv`` fetches again: two loads of one address stay two loads."""
    @naiad.jit
    def twice(dst, src):
        a = tl.load(src, cache_modifier=".cv")
        b = tl.load(src, cache_modifier=".cv")
        tl.store(dst, a + b)

    ptx = naiad.compile(twice, signature="*i32,*i32", target="nvidia:sm_90").asm["ptx"]
    assert len(re.findall(r"ld\.global\.cv\.", ptx)) == 2


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("load,store", list(zip(LOADS, STORES)))
def test_values_on_the_reference(load, store, masked):
    naiad.set_target("reference")
    rng = np.random.default_rng(7)
    src = rng.standard_normal(128).astype(np.float32)
    dst = np.full(128, np.nan, np.float32)
    n = 77 if masked else 128
    try:
        copy[(1,)](dst, src, n, LOAD=load, STORE=store, MASKED=masked)
    finally:
        naiad.set_target(None)
    np.testing.assert_array_equal(dst[:n], src[:n])
    assert np.isnan(dst[n:]).all()
