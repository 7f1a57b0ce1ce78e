"""Masked loads and stores on NVIDIA are predicated PTX (``@p ld.global`` / ``@p st.global``).

Without a GPU: the word shapes, the inline-asm operand/constraint strings, and the PTX (through
LLVM and ptxas, via nvJitLink) of hand-built kernels and of frontend kernels for every element
type and vector width. On the device (``gpu`` tests, run on the H200): random masks, ``other``
values with NaN payloads and -0.0, and poisoned outputs, compared bit for bit with numpy. The
same frontend check also runs on the reference executor here, so the test's own numpy model is
exercised without a GPU.
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

import naiad
import naiad.language as tl
from naiad.plugins import Target
from naiad_nvidia import toolchain
from naiad_nvidia.lowering.predicated_memory import load_asm, store_asm, word_shape
from naiad_nvidia.target_info import NvidiaTargetInfo

from nv_kernels import GPU_ARCH, apply_llvm_attributes, attrs_for, new_module

TARGET = Target("nvidia", "sm_90", 32)
I8, I16, I32, I64 = (ir.IntType(w) for w in (8, 16, 32, 64))
ELEM = {"i8": I8, "i16": I16, "i32": I32, "i64": I64, "f16": ir.HalfType(),
        "f32": ir.FloatType(), "f64": ir.DoubleType()}

# (element, count) -> PTX type suffix, from the PTX rules: words of 16/32/64 bits, .v2/.v4,
# a lone byte as .b8; 64-bit elements stay 64-bit words.
SHAPES = {
    ("i8", 1): ".b8", ("i8", 2): ".b16", ("i8", 4): ".b32", ("i8", 8): ".v2.b32",
    ("i8", 16): ".v4.b32",
    ("i16", 1): ".b16", ("i16", 8): ".v4.b32",
    ("f16", 1): ".b16", ("f16", 2): ".b32", ("f16", 4): ".v2.b32", ("f16", 8): ".v4.b32",
    ("i32", 1): ".b32", ("i32", 4): ".v4.b32",
    ("f32", 1): ".b32", ("f32", 2): ".v2.b32", ("f32", 4): ".v4.b32",
    ("i64", 1): ".b64", ("i64", 2): ".v2.b64",
    ("f64", 1): ".b64", ("f64", 2): ".v2.b64",
}
BYTES = {"i8": 1, "i16": 2, "f16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}


def _ty(elem: str, count: int) -> ir.Type:
    return ELEM[elem] if count == 1 else ir.VectorType(ELEM[elem], count)


def _body(ptx: str) -> str:
    return ptx.split(".entry", 1)[1]


# -- word shapes and asm strings -------------------------------------------------------------

@pytest.mark.parametrize("elem,count", sorted(SHAPES))
def test_word_shape_follows_the_ptx_rules(elem, count):
    shape = word_shape(_ty(elem, count), BYTES[elem] * count)
    assert shape is not None and shape.ptx_type == SHAPES[elem, count]


@pytest.mark.parametrize("ty,align", [
    (ir.VectorType(ir.FloatType(), 8), 32),      # 256 bits: no PTX vector that wide (sm_90)
    (ir.VectorType(I32, 3), 12),                 # 96 bits
    (ir.VectorType(ir.FloatType(), 4), 4),       # under-aligned for a v4 access
    (ir.PointerType(addrspace=1), 8),            # pointers as elements
    (ir.IntType(1), 1),                          # i1 is a byte in memory; never asked as i1
])
def test_uncovered_shapes_have_no_word_shape(ty, align):
    assert word_shape(ty, align) is None


def _operands(text: str) -> list[int]:
    return [int(k) for k in re.findall(r"\$(\d+)", text)]


@pytest.mark.parametrize("elem,count", sorted(SHAPES))
def test_load_asm_operands_match_constraints(elem, count):
    shape = word_shape(_ty(elem, count), BYTES[elem] * count)
    text, constraints = load_asm(shape)
    cons = constraints.split(",")
    n = shape.count
    assert cons[:n] == ["=" + shape.constraint] * n and cons[n:] == ["l", "b", "~{memory}"]
    assert set(_operands(text)) == set(range(n + 2))  # the clobber is no operand
    lines = [ln.strip() for ln in text.splitlines()]
    # every output zeroed (at its register width) before the predicated load overwrites it
    reg_bits = 16 if shape.bits == 8 else shape.bits
    assert lines[:n] == [f"mov.b{reg_bits} ${i}, 0;" for i in range(n)]
    ld = lines[n]
    assert ld.startswith(f"@${n + 1} ld.global{SHAPES[elem, count]} ") and ld.endswith(f"[${n}];")
    assert len(lines) == n + 1
    assert shape.constraint == {8: "h", 16: "h", 32: "r", 64: "l"}[shape.bits]


@pytest.mark.parametrize("elem,count", sorted(SHAPES))
def test_store_asm_operands_match_constraints(elem, count):
    shape = word_shape(_ty(elem, count), BYTES[elem] * count)
    text, constraints = store_asm(shape)
    cons = constraints.split(",")
    n = shape.count
    assert not any(c.startswith("=") for c in cons), "a store has no outputs"
    assert cons == ["l"] + [shape.constraint] * n + ["b", "~{memory}"]
    assert "\n" not in text and set(_operands(text)) == set(range(n + 2))
    assert text.startswith(f"@${n + 1} st.global{SHAPES[elem, count]} [$0], ")


# -- hand-built kernels through NvidiaTargetInfo, LLVM and ptxas ---------------------------------

def masked_kernel(ti: NvidiaTargetInfo, ty: ir.Type, align: int, address_space: int = 1,
                  reload_after_store: bool | None = None) -> str:
    """``loaded[t] = masked_load(src[t])`` (pred: ``mask[t] != 0``, zero where off) and
    ``masked_store(stored[t], loaded[t])`` under the same predicate, one access per thread.

    ``reload_after_store`` (True/False) instead loads ``src[t]`` twice, with or without a plain
    store to it in between, and writes the sum (i32 only)."""
    mod = new_module(ti, "masked")
    gp = ir.PointerType(addrspace=1)
    src_ty = ir.PointerType(addrspace=address_space)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [src_ty, gp, gp, gp]), "kern")
    apply_llvm_attributes(fn, attrs_for(TARGET))
    src, mask, loaded, stored = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tid = ti.thread_id(b, 0)
    pred = b.icmp_unsigned("!=", b.load(b.gep(mask, [tid], source_etype=I8), typ=I8),
                           ir.Constant(I8, 0))
    at = b.gep(src, [tid], source_etype=ty)
    v = ti.masked_load(b, at, ty, pred, align)
    if reload_after_store is not None:
        if reload_after_store:
            b.store(b.add(v, ir.Constant(ty, 1)), at, align=align)
        v = b.add(v, ti.masked_load(b, at, ty, pred, align))
    b.store(v, b.gep(loaded, [tid], source_etype=ty), align=align)
    ti.masked_store(b, b.gep(stored, [tid], source_etype=ty), v, pred, align)
    b.ret_void()
    return str(mod)


@pytest.mark.parametrize("elem,count", sorted(SHAPES))
def test_masked_access_is_one_predicated_instruction(elem, count):
    form = SHAPES[elem, count]
    src = masked_kernel(NvidiaTargetInfo(), _ty(elem, count), BYTES[elem] * count)
    ptx, cubin, meta = toolchain.compile_llvm_to_cubin(src, "sm_90", "kern")
    assert cubin[:4] == b"\x7fELF" and meta["spill_bytes"] == 0
    body = _body(ptx)
    assert not re.search(r"\bbra\b", body), f"a branch is left:\n{body}"
    loads = re.findall(rf"@%p\d+ ld\.global{re.escape(form)} ", body)
    stores = re.findall(rf"@%p\d+ st\.global{re.escape(form)} ", body)
    assert len(loads) == 1 and len(stores) == 1, body
    words = word_shape(_ty(elem, count), BYTES[elem] * count).count
    assert len(re.findall(r"mov\.b(16|32|64)\s+%\w+, 0;", body)) >= words


def test_shared_memory_pointer_keeps_the_branch():
    src = masked_kernel(NvidiaTargetInfo(), I32, 4, address_space=3)
    assert "masked_load_done" in src
    assert src.count("ld.global") == 0 and src.count("st.global") == 1  # the global store


def test_pointer_elements_keep_the_branch():
    ti = NvidiaTargetInfo()
    mod = new_module(ti, "ptrs")
    gp = ir.PointerType(addrspace=1)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [gp, ir.IntType(1)]), "kern")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ti.masked_load(b, fn.args[0], gp, fn.args[1], 8)
    b.ret_void()
    text = str(mod)
    assert "masked_load_done" in text and "asm" not in text


def test_load_is_not_merged_across_a_store_but_is_without_one():
    """The load asm is ``readonly``: LLVM may merge two identical loads, never across a store."""
    ti = NvidiaTargetInfo()
    for store_between, want in ((True, 2), (False, 1)):
        ptx = toolchain.llvm_to_ptx(masked_kernel(ti, I32, 4, reload_after_store=store_between),
                                    "sm_90")
        assert len(re.findall(r"@%p\d+ ld\.global\.b32", ptx)) == want, ptx


# -- frontend kernels ----------------------------------------------------------------------

@naiad.jit
def masked_copy(x_ptr, other_ptr, lmask_ptr, smask_ptr, loaded_ptr, stored_ptr,
                GROUP: tl.constexpr, BLOCK: tl.constexpr):
    """Load with a random mask that is constant over runs of GROUP elements (so the access is
    vectorized up to GROUP wide) and a tensor ``other``; store with another such mask."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = tl.max_constancy(tl.load(lmask_ptr + offs // GROUP) != 0, GROUP)
    x = tl.load(x_ptr + offs, mask=keep, other=tl.load(other_ptr + offs))
    tl.store(loaded_ptr + offs, x)
    put = tl.max_constancy(tl.load(smask_ptr + offs // GROUP) != 0, GROUP)
    tl.store(stored_ptr + offs, x, mask=put)


@naiad.jit
def masked_copy_const(x_ptr, lmask_ptr, loaded_ptr, OTHER: tl.constexpr, GROUP: tl.constexpr,
                      BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = tl.max_constancy(tl.load(lmask_ptr + offs // GROUP) != 0, GROUP)
    tl.store(loaded_ptr + offs, tl.load(x_ptr + offs, mask=keep, other=OTHER))


BLOCK = 2048  # 16 elements per thread with 4 warps: room for 16-byte accesses of i8
GROUPS = [1, 2, 4, 8, 16]
DTYPES = {"*i8": np.int8, "*u8": np.uint8, "*i1": np.bool_, "*i16": np.int16, "*fp16": np.float16,
          "*bf16": ml_dtypes.bfloat16, "*i32": np.int32, "*fp32": np.float32, "*i64": np.int64,
          "*fp64": np.float64}
D16 = {"divisibility": 16}


def _expected_form(itemsize: int, group: int) -> str:
    """The PTX type of a ``group``-element access, capped at 16 bytes."""
    nbytes = itemsize * min(group, 16 // itemsize)
    if nbytes <= 4:
        return f".b{8 * nbytes}"
    word = 64 if itemsize == 8 else 32
    count = nbytes * 8 // word
    return f".b{word}" if count == 1 else f".v{count}.b{word}"


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("sig", sorted(DTYPES))
def test_frontend_masked_copy_ptx(sig, group):
    names = ["x_ptr", "other_ptr", "lmask_ptr", "smask_ptr", "loaded_ptr", "stored_ptr"]
    types = [sig, sig, "*i8", "*i8", sig, sig]
    k = naiad.compile(masked_copy, signature=dict(zip(names, types)),
                      constexprs=dict(GROUP=group, BLOCK=BLOCK), target="nvidia:sm_90",
                      specialization={n: D16 for n in names})
    body = _body(k.asm["ptx"])
    assert not re.search(r"\bbra\b", body), "a masked access still branches"
    form = _expected_form(np.dtype(DTYPES[sig]).itemsize, group)
    assert set(re.findall(r"@%p\d+ ld\.global(\S+) ", body)) == {form}
    assert set(re.findall(r"@%p\d+ st\.global(\S+) ", body)) == {form}
    assert k.metadata["spill_bytes"] == 0


@pytest.mark.parametrize("name,kernel,constexprs,sig,spec", [
    ("layer_norm", "layer_norm_fwd_kernel", dict(BLOCK=1024),
     dict(x_ptr="*fp16", y_ptr="*fp16", w_ptr="*fp16", b_ptr="*fp16", mean_ptr="*fp32",
          rstd_ptr="*fp32", stride="i32", n_cols="i32", eps="fp32"), {"num_warps": 8}),
    ("matmul_tc", "matmul_tc_kernel", dict(BM=128, BN=128, BK=32),
     dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32",
          stride_am="i32", stride_bk="i32", stride_cm="i32"),
     # num_stages 1: the register-prefetch fallback (with more stages the tiles go by cp.async)
     {"num_warps": 8, "num_stages": 1}),
])
def test_bench_kernels_predicate_every_masked_load(name, kernel, constexprs, sig, spec):
    """Every global load in layer norm and in the prefetching tensor-core K loop is one
    predicated vector instruction, and no branch sits next to a load (the old branch-around)."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[3] / "bench" / "gpu_kernels.py"
    mod_spec = importlib.util.spec_from_file_location("bench_gpu_kernels", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    facts = {n: D16 for n in sig if n != "eps"}
    k = naiad.compile(getattr(mod, kernel), signature=sig, constexprs=constexprs,
                      target="nvidia:sm_90", options=spec, specialization=facts)
    lines = [ln.strip() for ln in _body(k.asm["ptx"]).splitlines()]
    loads = [i for i, ln in enumerate(lines) if re.search(r"\bld\.global", ln)]
    assert loads
    for i in loads:
        assert re.match(r"@%p\d+ ld\.global\.v[24]\.b32 ", lines[i]), lines[i]
        near = lines[max(0, i - 1):i + 2]
        assert not any(re.search(r"\bbra\b", ln) for ln in near), near
    assert k.metadata["spill_bytes"] == 0


# -- bit-exact runs: reference here (the test's own model), NVIDIA on the device -----------------

def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}") if a.dtype != np.bool_ else a


def _random_bits(rng, n: int, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(n) < 0.5
    return rng.integers(0, 2 ** (8 * dt.itemsize), n, dtype=f"u{dt.itemsize}").view(dt)


#: floating types: (bits, exponent bits)
FLOAT_FORMATS = {np.float16: (16, 5), ml_dtypes.bfloat16: (16, 8), np.float32: (32, 8),
                 np.float64: (64, 11)}


def _specials(dtype) -> list[int]:
    """Bit patterns that must survive exactly: -0.0, quiet/signalling NaNs with payloads."""
    if dtype not in FLOAT_FORMATS:
        return []
    bits, exp_bits = FLOAT_FORMATS[dtype]
    sign = 1 << (bits - 1)
    exp = ((1 << exp_bits) - 1) << (bits - 1 - exp_bits)
    top = 1 << (bits - 2 - exp_bits)
    return [sign, exp | top | 5, sign | exp | 3, exp | 1]  # -0.0, qNaN, -sNaN, sNaN


def check_masked_copy(backend: str, sig: str, group: int, seed: int) -> None:
    dtype = DTYPES[sig]
    rng = np.random.default_rng(seed)
    n = 3 * BLOCK
    x, other = _random_bits(rng, n, dtype), _random_bits(rng, n, dtype)
    for k, pattern in enumerate(_specials(dtype)):
        _bits(other)[k::7] = pattern
        _bits(x)[k + 3::11] = pattern
    lmask = (rng.random(n // group) < 0.5).astype(np.int8)
    smask = (rng.random(n // group) < 0.5).astype(np.int8)
    loaded0, stored0 = _random_bits(rng, n, dtype), _random_bits(rng, n, dtype)  # poison
    with naiad.target(backend):
        args = [naiad.to_device(a.copy()) for a in (x, other, lmask, smask, loaded0, stored0)]
        masked_copy[(n // BLOCK,)](*args, GROUP=group, BLOCK=BLOCK)
        loaded, stored = (a if isinstance(a, np.ndarray) else a.numpy() for a in args[4:])
    want = np.where(np.repeat(lmask, group) != 0, _bits(x), _bits(other))
    np.testing.assert_array_equal(_bits(loaded), want)
    np.testing.assert_array_equal(_bits(stored),
                                  np.where(np.repeat(smask, group) != 0, want, _bits(stored0)))


@pytest.mark.parametrize("sig,group", [("*fp32", 4), ("*fp16", 8), ("*i8", 16), ("*fp64", 2),
                                       ("*i1", 1)])
def test_masked_copy_model_on_reference(sig, group):
    check_masked_copy("reference", sig, group, seed=group)


@pytest.mark.gpu
@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("sig", sorted(DTYPES))
def test_masked_copy_on_gpu(sig, group):
    check_masked_copy(f"nvidia:{GPU_ARCH}", sig, group, seed=17 * group + len(sig))


@pytest.mark.gpu
@pytest.mark.parametrize("group", [1, 4, 8])
@pytest.mark.parametrize("sig", ["*fp16", "*bf16", "*fp32", "*fp64"])
@pytest.mark.parametrize("other", [-0.0, float("-inf"), float("nan")])
def test_masked_load_constant_other_on_gpu(sig, group, other):
    dtype = DTYPES[sig]
    rng = np.random.default_rng(group)
    n = 2 * BLOCK
    x = rng.standard_normal(n).astype(dtype)
    lmask = (rng.random(n // group) < 0.5).astype(np.int8)
    with naiad.target(f"nvidia:{GPU_ARCH}"):
        loaded = naiad.to_device(_random_bits(rng, n, dtype))
        masked_copy_const[(n // BLOCK,)](naiad.to_device(x), naiad.to_device(lmask), loaded,
                                         OTHER=other, GROUP=group, BLOCK=BLOCK)
    got, keep = loaded.numpy(), np.repeat(lmask, group) != 0
    np.testing.assert_array_equal(_bits(got)[keep], _bits(x)[keep])
    if np.isnan(other):
        assert np.isnan(got[~keep].astype(np.float64)).all()
    else:
        want = np.array([other], dtype)
        assert (_bits(got)[~keep] == _bits(want)[0]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("elem,count", sorted(SHAPES))
def test_target_info_masked_access_on_gpu(elem, count):
    """The hook's own contract: zero in every bit where masked off, stores only where on."""
    from naiad_nvidia.codegen import NvidiaCodegen
    from naiad_nvidia.runtime.launcher import NvidiaLauncher

    target = Target("nvidia", GPU_ARCH, 32)
    codegen, launcher = NvidiaCodegen(target), NvidiaLauncher(target)
    src = masked_kernel(codegen.target_info, _ty(elem, count), BYTES[elem] * count)
    handle = launcher.load(codegen.compile_llvm(src, "kern", {"num_warps": 4}), "kern")
    rng = np.random.default_rng(count)
    n = 128 * count * BYTES[elem]  # bytes for 128 threads
    words = lambda: rng.integers(0, 256, n, dtype=np.uint8)  # noqa: E731
    src_b, loaded0, stored0 = words(), words(), words()
    mask = (rng.random(128) < 0.5).astype(np.int8)
    dev = [launcher.to_device(a) for a in (src_b, mask, loaded0, stored0)]
    launcher.launch(handle, (1, 1, 1), 4, 0, [d.ptr for d in dev], ("*u8", "*i8", "*u8", "*u8"))
    per = count * BYTES[elem]
    keep = np.repeat(mask != 0, per)
    np.testing.assert_array_equal(dev[2].numpy(), np.where(keep, src_b, 0))
    np.testing.assert_array_equal(dev[3].numpy(), np.where(keep, src_b, stored0))
