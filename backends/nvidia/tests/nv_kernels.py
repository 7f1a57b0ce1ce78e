"""Hand-written LLVM IR kernels for the NVIDIA backend tests, built with llvmlite.ir through
``NvidiaTargetInfo`` exactly as core's lowering will (ptx_kernel CC, ``nvvm.maxntid``)."""
from __future__ import annotations

import struct

from llvmlite import ir
from llvmlite.ir import types as _irtypes

from naiad_nvidia import plugin
from naiad_nvidia.target_info import NvidiaTargetInfo


class BFloatType(_irtypes._BaseFloatType):
    """LLVM ``bfloat`` (llvmlite.ir has no bf16 type)."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"

    def format_constant(self, value):
        (bits,) = struct.unpack("<I", struct.pack("<f", float(value)))
        return "0xR%04X" % (bits >> 16)


BFloatType._create_instance()

#: The supported arch of the GPU present here, or None (decides the ``gpu``-marked tests).
GPU_ARCH = plugin.detect_arch()

I32 = ir.IntType(32)
LLVM_TYPES = {"f16": ir.HalfType(), "bf16": BFloatType(), "f32": ir.FloatType(),
              "f64": ir.DoubleType(), "i32": I32, "u32": I32, "i64": ir.IntType(64),
              "u64": ir.IntType(64), "bf16_as_i16": ir.IntType(16)}


def attrs_for(target, num_warps: int = 4) -> dict:
    """What the plugin's ``naiad_llvm_attributes`` hook answers for ``target``."""
    opts = plugin.naiad_options(target, {"num_warps": num_warps})
    return plugin.naiad_llvm_attributes(target, opts, None)


def apply_llvm_attributes(fn: ir.Function, attrs) -> None:
    """Apply a ``naiad_llvm_attributes`` answer (LLVMAttributes) to an llvmlite function (string
    attributes are added behind llvmlite's whitelist)."""
    for key, value in attrs.function.items():
        set.add(fn.attributes, f'"{key}"="{value}"')
    if attrs.calling_convention:
        fn.calling_convention = attrs.calling_convention


def new_module(ti: NvidiaTargetInfo, name: str) -> ir.Module:
    mod = ir.Module(name=name)
    mod.triple = ti.triple
    mod.data_layout = ti.data_layout
    return mod


def _global_ptr(ti):
    return ir.PointerType(addrspace=ti.global_address_space)


def _index_and_mask(ti, b, n, block):
    pid = ti.program_id(b, 0)
    tid = ti.thread_id(b, 0)
    i = b.add(b.mul(pid, ir.Constant(I32, block)), tid)
    return i, b.icmp_signed("<", i, n)


def vector_add(ti: NvidiaTargetInfo, attrs: dict, num_warps: int = 4, elem: str = "f32") -> str:
    """``out[i] = x[i] + y[i]`` for ``i < n``, one element per thread."""
    ty = LLVM_TYPES[elem]
    mod = new_module(ti, "vector_add")
    gp = _global_ptr(ti)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [gp, gp, gp, I32]), "vector_add")
    apply_llvm_attributes(fn, attrs)
    x, y, out, n = fn.args
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    i, mask = _index_and_mask(ti, b, n, num_warps * 32)
    b.cbranch(mask, body, done)
    b.position_at_end(body)
    a = b.load(b.gep(x, [i], source_etype=ty), typ=ty)
    c = b.load(b.gep(y, [i], source_etype=ty), typ=ty)
    b.store(b.fadd(a, c) if isinstance(ty, ir.types._BaseFloatType) else b.add(a, c),
            b.gep(out, [i], source_etype=ty))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return str(mod)


def math_kernel(ti: NvidiaTargetInfo, attrs: dict, name: str, elem: str, nargs: int = 1,
                num_warps: int = 4) -> str:
    """``out[i] = name(a0[i], ..)`` for ``i < n`` via ``ti.math`` (elem ``bf16_as_i16``: bf16
    carried as raw i16 bits)."""
    ty = LLVM_TYPES[elem]
    math_elem = "bf16" if elem == "bf16_as_i16" else elem
    mod = new_module(ti, f"math_{name}_{elem}")
    gp = _global_ptr(ti)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [gp] * (nargs + 1) + [I32]), "kern")
    apply_llvm_attributes(fn, attrs)
    *ins, out, n = fn.args
    entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    i, mask = _index_and_mask(ti, b, n, num_warps * 32)
    b.cbranch(mask, body, done)
    b.position_at_end(body)
    vals = [b.load(b.gep(p, [i], source_etype=ty), typ=ty) for p in ins]
    b.store(ti.math(b, name, vals, math_elem), b.gep(out, [i], source_etype=ty))
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return str(mod)


def warp_ops_kernel(ti: NvidiaTargetInfo, attrs: dict, elem: str) -> str:
    """Shuffles (xor and idx) and a barrier on one value per thread."""
    ty = LLVM_TYPES.get(elem) or {"i8": ir.IntType(8), "i1": ir.IntType(1)}[elem]
    mod = new_module(ti, f"warp_{elem}")
    gp = _global_ptr(ti)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [gp, gp]), "warp")
    apply_llvm_attributes(fn, attrs)
    src, dst = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tid = ti.thread_id(b, 0)
    v = b.load(b.gep(src, [tid], source_etype=ty), typ=ty)
    v1 = ti.shuffle_xor(b, v, 1)
    ti.barrier(b)
    v2 = ti.shuffle_idx(b, v1, ti.lane_id(b))
    v3 = ti.shuffle_idx(b, v2, 0)
    b.store(v3, b.gep(dst, [tid], source_etype=ty))
    b.ret_void()
    return str(mod)
