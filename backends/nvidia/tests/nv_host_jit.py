"""JIT the NVPTX math expansions for the host CPU, so their accuracy is testable without a GPU.

The very IR that ``naiad_nvidia.lowering.mathlib`` emits for the device is wrapped in an elementwise loop
and compiled with LLVM's MCJIT for this machine; only the two hardware approximations
(ex2.approx, rsqrt.approx) are swapped for libm-backed host equivalents.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
import llvmlite.binding as llvm
from llvmlite import ir

from naiad_nvidia.lowering import mathlib

_NP = {"f32": (np.float32, ir.FloatType()), "f64": (np.float64, ir.DoubleType()),
       "i32": (np.int32, ir.IntType(32)), "u32": (np.uint32, ir.IntType(32)),
       "i64": (np.int64, ir.IntType(64)), "u64": (np.uint64, ir.IntType(64))}
_ENGINES = []  # keep JIT engines (and their code) alive


@functools.lru_cache(maxsize=None)
def _host_tm():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine(opt=2)


@functools.lru_cache(maxsize=None)
def host_function(name: str, elem: str, nargs: int, fast: bool = False):
    """Return ``f(*arrays) -> np.ndarray`` applying ``mathlib.emit(name)`` elementwise
    (``mathlib.emit_fast``, Triton's fast version, with ``fast``)."""
    np_t, ty = _NP[elem]
    mod = ir.Module(name=f"host_{name}_{elem}{'_fast' if fast else ''}")
    mod.triple = llvm.get_process_triple()
    ptr = ty.as_pointer()
    i64 = ir.IntType(64)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 1) + [i64]), "kernel")
    entry, loop, done = fn.append_basic_block("entry"), fn.append_basic_block("loop"), \
        fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    n = fn.args[-1]
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    xs = [b.load(b.gep(fn.args[k], [i])) for k in range(nargs)]
    emit = mathlib.emit_fast if fast else mathlib.emit
    y = emit(b, name, xs, elem, prim=mathlib.HostPrimitives())
    b.store(y, b.gep(fn.args[nargs], [i]))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()

    llmod = llvm.parse_assembly(str(mod))
    llmod.verify()
    engine = llvm.create_mcjit_compiler(llmod, _host_tm())
    engine.finalize_object()
    _ENGINES.append(engine)
    cfn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (nargs + 1)), ctypes.c_int64)(
        engine.get_function_address("kernel"))

    def run(*arrays):
        arrays = [np.ascontiguousarray(a, dtype=np_t) for a in arrays]
        out = np.empty_like(arrays[0])
        cfn(*[a.ctypes.data for a in arrays], out.ctypes.data, out.size)
        return out

    return run
