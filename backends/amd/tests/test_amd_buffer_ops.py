"""Buffer ops on AMD: the ``canonicalize_pointers`` and ``convert_to_buffer_ops`` passes (IR text
in, IR text out), the offset range analysis, and what the lowering makes of them (LLVM IR and
AMDGCN). Execution is checked on the SIMT simulator (tests/gpu/test_buffer_ops_on_simt.py)."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify
from naiad_amd.passes.buffer_ops import NUM_RECORDS, convert_to_buffer_ops
from naiad_amd.passes.canonicalize_pointers import canonicalize_pointers
from naiad_amd.passes.offset_range import RangeAnalysis


@naiad.jit
def row_kernel(x_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < n, other=1.0)
    tl.store(y_ptr + row * BLOCK + offs, x)


_ROW_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "n": "i32"}


def _tile(kernel, signature, constexprs, target="amd:gfx942"):
    """The kernel's tile IR (what the GPU passes start from), parsed."""
    k = naiad.compile(kernel, signature=signature, constexprs=constexprs, target=target)
    return parse_module(k.asm["tile"])


def _body(module) -> list[str]:
    return [ln.strip() for ln in print_module(module).splitlines()]


#: vector add / a 2-D tile as the frontend leaves them: uniform parts (pid * 256, the tile's
#: row base) inside the tensor offsets, a pointer broadcast from a column of pointers
_CHAINS = """module {
func @f(%x: ptr<f32>, %y: ptr<f32>, %n: i32) attributes {kernel = true} {
  %pid = program_id {axis = 0} : i32
  %c256 = constant {value = 256} : i32
  %blk = mul %pid, %c256 : i32
  %r = make_range {end = 256, start = 0} : tensor<256xi32>
  %sb = splat %blk : tensor<256xi32>
  %offs = add %sb, %r : tensor<256xi32>
  %px = splat %x : tensor<256xptr<f32>>
  %ax = addptr %px, %offs : tensor<256xptr<f32>>
  %sn = splat %n : tensor<256xi32>
  %mask = cmp %offs, %sn {pred = "lt"} : tensor<256xi1>
  %v = load %ax, %mask : tensor<256xf32>
  %rows = make_range {end = 16, start = 0} : tensor<16xi32>
  %rc = expand_dims %rows {axis = 1} : tensor<16x1xi32>
  %c32 = constant {value = 32} : tensor<16x1xi32>
  %ro = mul %rc, %c32 : tensor<16x1xi32>
  %py = splat %y : tensor<16x1xptr<f32>>
  %ay = addptr %py, %ro : tensor<16x1xptr<f32>>
  %by = broadcast %ay : tensor<16x32xptr<f32>>
  %cols = make_range {end = 32, start = 0} : tensor<32xi32>
  %cr = expand_dims %cols {axis = 0} : tensor<1x32xi32>
  %cb = broadcast %cr : tensor<16x32xi32>
  %t = addptr %by, %cb : tensor<16x32xptr<f32>>
  %w = constant {value = 2.0} : tensor<16x32xf32>
  store %t, %w
  return
}
}"""


def _defining(lines, name):
    return next(ln for ln in lines if ln.startswith(f"{name} = "))


def test_canonicalize_moves_uniform_offsets_into_the_base():
    module = parse_module(_CHAINS)
    assert canonicalize_pointers(module) is True
    verify(module)
    lines = _body(module)
    load = next(ln for ln in lines if " = load " in ln)
    ptr = re.search(r"load (%\w+)", load).group(1)
    # load: pid * 256 moved into the base (a scalar addptr), offsets are the bare arange
    m = re.fullmatch(rf"{ptr} = addptr (%\w+), %r : tensor<256xptr<f32>>", _defining(lines, ptr))
    assert m, _defining(lines, ptr)
    splat = re.fullmatch(rf"{m.group(1)} = splat (%\w+) : tensor<256xptr<f32>>",
                         _defining(lines, m.group(1)))
    assert splat and re.fullmatch(rf"{splat.group(1)} = addptr %x, %blk : ptr<f32>",
                                  _defining(lines, splat.group(1)))
    # store: the row offsets broadcast and added to the column offsets, one splat of %y
    store = next(ln for ln in lines if ln.startswith("store "))
    ptr = re.search(r"store (%\w+)", store).group(1)
    m = re.fullmatch(rf"{ptr} = addptr (%\w+), (%\w+) : tensor<16x32xptr<f32>>",
                     _defining(lines, ptr))
    assert m and _defining(lines, m.group(1)).endswith("= splat %y : tensor<16x32xptr<f32>>")
    add = re.fullmatch(rf"{m.group(2)} = add (%\w+), %cb : tensor<16x32xi32>",
                       _defining(lines, m.group(2)))
    assert add and _defining(lines, add.group(1)).endswith("= broadcast %ro : tensor<16x32xi32>")
    # the old pointer chains are gone; the mask still uses the original offsets
    text = print_module(module)
    for old in ("%ax", "%ay", "%by", "%px", "%py"):
        assert f"{old} =" not in text
    assert "%offs = add %sb, %r" in text
    assert canonicalize_pointers(module) is False  # a fixed point
    assert print_module(parse_module(text)) == text


def test_convert_to_buffer_ops_uses_the_canonical_parts():
    module = parse_module(_CHAINS)
    canonicalize_pointers(module)
    assert convert_to_buffer_ops(module) is True
    verify(module)
    lines = _body(module)
    load = next(ln for ln in lines if "amd.buffer_load" in ln)
    assert re.fullmatch(r"%v = amd.buffer_load %\w+, %r, %mask : tensor<256xf32>", load), load
    store = next(ln for ln in lines if "amd.buffer_store" in ln)
    assert re.fullmatch(r"amd.buffer_store %\w+, %\w+, %w", store), store
    text = print_module(module)
    assert " load " not in text and "\n  store" not in text and "splat %x" not in text
    assert print_module(parse_module(text)) == text


def test_compiled_row_kernel_gets_buffer_ops():
    module = _tile(row_kernel, _ROW_SIG, {"BLOCK": 256})
    canonicalize_pointers(module)
    assert convert_to_buffer_ops(module) is True
    lines = _body(module)
    assert any(re.fullmatch(r"%x = amd.buffer_load %\w+, %offs, %\w+, %\w+ : tensor<256xf32>", ln)
               for ln in lines)
    assert any(re.fullmatch(r"amd.buffer_store %\w+, %offs, %x", ln) for ln in lines)


@naiad.jit
def strided(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride))


@naiad.jit
def shifted(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + (offs - 1), mask=offs > 0))


@naiad.jit
def scaled(x_ptr, y_ptr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * SCALE))


@naiad.jit
def looped(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n):
        acc += tl.load(ptrs)
        ptrs += BLOCK
    tl.store(y_ptr + offs, acc)


def _buffer_ops(kernel, signature, constexprs):
    module = _tile(kernel, signature, constexprs)
    canonicalize_pointers(module)
    convert_to_buffer_ops(module)
    verify(module)
    text = print_module(module)
    return text.count("amd.buffer_load"), text.count("amd.buffer_store")


def test_only_provably_bounded_offsets_become_buffer_ops():
    # offs * stride: a runtime stride bounds nothing (Triton would need its 2 GiB fact)
    assert _buffer_ops(strided, {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32"},
                       {"BLOCK": 64}) == (0, 1)
    # offs - 1 reaches -1: an unsigned 32-bit offset would wrap, so the load stays global
    assert _buffer_ops(shifted, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 64}) == (0, 1)
    # the byte offset bound depends on the element size: 1023 * 1e6 elements of 4 bytes pass
    # 2**31, of 1 byte they do not
    assert _buffer_ops(scaled, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                       {"SCALE": 1_000_000, "BLOCK": 1024}) == (0, 1)
    assert _buffer_ops(scaled, {"x_ptr": "*i8", "y_ptr": "*i8"},
                       {"SCALE": 1_000_000, "BLOCK": 1024}) == (1, 1)
    # a pointer carried by a loop is not followed (the store's is)
    assert _buffer_ops(looped, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 64}) == (0, 1)


def test_range_analysis():
    module = parse_module("""module {
func @f(%a: i32, %one: i32 {equal_to = 1}) attributes {kernel = true} {
  %r = make_range {end = 128, start = 0} : tensor<128xi32>
  %c = constant {value = 8} : tensor<128xi32>
  %m = mul %r, %c : tensor<128xi32>
  %s = splat %one : tensor<128xi32>
  %t = sub %m, %s : tensor<128xi32>
  %big = constant {value = 20000000} : tensor<128xi32>
  %o = mul %r, %big : tensor<128xi32>
  %sa = splat %a : tensor<128xi32>
  %u = and %sa, %c : tensor<128xi32>
  %q = rem %m, %c : tensor<128xi32>
  return
}
}""")
    fn = module.functions["f"]
    ranges = RangeAnalysis(fn)
    values = {op.results[0].name_hint: op.results[0] for op in fn.walk() if op.results}
    assert ranges(values["r"]) == (0, 127)
    assert ranges(values["m"]) == (0, 1016)
    assert ranges(values["t"]) == (-1, 1015)
    assert ranges(values["o"]) is None        # 127 * 2e7 wraps i32
    assert ranges(values["sa"]) is None       # an argument: anything
    assert ranges(values["u"]) == (0, 8)      # and with a non-negative bound
    assert ranges(values["q"]) == (0, 7)


def test_verifier_rejects_malformed_buffer_ops():
    from naiad.errors import IRError

    bad = """module {
func @f(%p: ptr<f32>, %q: ptr<f16>) attributes {kernel = true} {
  %r = make_range {end = 64, start = 0} : tensor<64xi32>
  %v = amd.buffer_load %q, %r : tensor<64xf32>
  return
}
}"""
    with pytest.raises(IRError, match="pointee"):
        verify(parse_module(bad))
    with pytest.raises(IRError, match="scalar pointer"):
        verify(parse_module(bad.replace("amd.buffer_load %q, %r", "amd.buffer_load %r, %r")))


@naiad.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=mask)


_SOFTMAX_SIG = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32", "out_stride": "i32",
                "n_cols": "i32"}


@pytest.mark.parametrize("arch, flags", [("gfx942", 0x00020000), ("gfx90a", 0x00020000),
                                         ("gfx1100", 0x31004000)])
def test_softmax_compiles_to_branch_free_buffer_instructions(arch, flags):
    k = naiad.compile(softmax, signature=_SOFTMAX_SIG, constexprs={"BLOCK": 1024},
                      target=f"amd:{arch}",
                      specialization={p: {"divisibility": 16} for p in _SOFTMAX_SIG})
    assert "amd.buffer_load" in k.asm["gpu"] and "amd.buffer_store" in k.asm["gpu"]
    llir = k.asm["llir"]
    rsrc = re.findall(r"make\.buffer\.rsrc\.p8\.p1\"?\(ptr addrspace\(1\) %\S+, "
                      r"i16 0, i64 (\d+), i32 (\d+)\)", llir)
    assert rsrc and all(int(n) == NUM_RECORDS and int(f) == flags for n, f in rsrc)
    assert re.search(r"select\s+i1 %\S+, i32 %\S+, i32 -2147483648", llir)  # masked lanes' offset
    asm = k.asm["amdgcn"]
    # 16-byte accesses: one per thread and row chunk (GFX11 spells it b128)
    assert re.search(r"buffer_load_(dwordx4|b128) v\[\d+:\d+\], v\d+, s\[\d+:\d+\], 0 offen", asm)
    assert re.search(r"buffer_store_(dwordx4|b128) v\[\d+:\d+\], v\d+, s\[\d+:\d+\], 0 offen", asm)
    assert "global_load" not in asm and "global_store" not in asm
    assert "s_cbranch_execz" not in asm  # no branch around a masked access


def test_no_buffer_ops_where_the_descriptor_is_unknown():
    k = naiad.compile(softmax, signature=_SOFTMAX_SIG, constexprs={"BLOCK": 1024},
                      target="amd:gfx1200")
    assert "amd.buffer" not in k.asm["gpu"] and "buffer_load" not in k.asm["amdgcn"]


def test_passes_are_named_in_the_pipeline():
    from naiad.plugins import Target
    from naiad_amd.options import make_options
    from naiad_amd.plugin import naiad_lowering_passes

    _GFX942 = Target("amd", "gfx942", 64)
    names = [getattr(p, "__name__", "") for p in
             naiad_lowering_passes(_GFX942, make_options(_GFX942, {}))]
    i = names.index("canonicalize_pointers")
    assert names[i + 1:i + 3] == ["convert_to_buffer_ops", "allocate_shared_memory"]


def test_canonicalize_leaves_accesses_that_stay_global_alone():
    """A rewrite that no buffer op follows would only cost instructions (the global address
    arithmetic folds uniform offsets better): the strided load's chain must stay as it was."""
    module = _tile(strided, {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32"}, {"BLOCK": 64})
    before = [ln for ln in _body(module)]
    load_ptr = re.search(r"= load (%\w+)", "\n".join(before)).group(1)
    canonicalize_pointers(module)
    after = _body(module)
    assert _defining(after, load_ptr) == _defining(before, load_ptr)
    assert re.search(rf"= load {load_ptr}\b", "\n".join(after))
