"""Run naiad_amd's math expansions on the host CPU through llvmlite's MCJIT.

The expansions are plain LLVM IR (fma, rint, ldexp, frexp, and the f32 exp/log intrinsics), so
the same emitter can be compiled for x86 and measured against numpy/decimal references without
an AMD GPU. Intrinsics that the expansion leaves to LLVM (f32 exp/log/sqrt) run as libm on the
host, so only our own code's accuracy is measured here.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from naiad_amd.lowering import mathlib

_TY = {"f32": (ir.FloatType(), np.float32), "f64": (ir.DoubleType(), np.float64)}


@functools.lru_cache(maxsize=None)
def _engine_parts():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2)


_ENGINES = []


@functools.lru_cache(maxsize=None)
def compiled(name: str, elem: str, contract: bool = False):
    """A Python callable numpy-array -> numpy-array running mathlib's ``name`` on ``elem``;
    ``contract``: with the ``contract`` flags ``enable_fp_fusion`` adds (FMAs where the host has them)."""
    ty, npty = _TY[elem]
    m = ir.Module(name=f"host_{name}_{elem}")
    m.triple = llvm.get_process_triple()
    ptr = ir.PointerType()
    i64 = ir.IntType(64)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64]), "run")
    x, out, n = fn.args
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    v = b.load(b.gep(x, [i], source_etype=ty), typ=ty)
    arity = {"fma": 3}.get(name, 1)
    r = mathlib.emit(b, name, [v] * arity, elem)
    b.store(r, b.gep(out, [i], source_etype=ty))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()

    text = str(m)
    if contract:
        from naiad_amd.toolchain import allow_fp_contraction

        text = allow_fp_contraction(text)
    mod = llvm.parse_assembly(text)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, _engine_parts())
    engine.finalize_object()
    _ENGINES.append(engine)  # keep the code alive
    cfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(engine.get_function_address("run"))

    def run(values):
        a = np.ascontiguousarray(values, dtype=npty)
        o = np.empty_like(a)
        cfn(a.ctypes.data, o.ctypes.data, a.size)
        return o

    return run


def ulp_error(got, ref_hi, dtype) -> np.ndarray:
    """|got - ref| in units of the last place of ``ref`` rounded to ``dtype`` (ref in float64 or
    better); NaN where they agree on NaN, inf where one is NaN/inf and the other is not."""
    got = np.asarray(got, dtype=np.float64)
    ref_hi = np.asarray(ref_hi, dtype=np.float64)
    ref_lo = ref_hi.astype(dtype)
    ulp = np.spacing(np.abs(ref_lo)).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - ref_hi) / ulp
    both_nan = np.isnan(got) & np.isnan(ref_hi)
    same_inf = np.isinf(got) & np.isinf(ref_hi) & (np.sign(got) == np.sign(ref_hi))
    err = np.where(both_nan | same_inf | (got == ref_hi), 0.0, err)
    return np.where(np.isnan(err), np.inf, err)
