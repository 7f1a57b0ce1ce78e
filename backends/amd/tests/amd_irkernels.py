"""Hand-built LLVM IR kernels for the AMD backend tests (llvmlite.ir + AmdTargetInfo).

They stand in for what the core's lowering will emit: an ``amdgpu_kernel`` function with the
attributes the plugin's ``naiad_llvm_attributes`` hook returns, and module flags.
"""
from __future__ import annotations

from llvmlite import ir

from naiad.plugins import LLVMAttributes

from naiad_amd.lowering.irutil import BF16, F16, F32, F64, I32, I64
from naiad_amd.target_info import AmdTargetInfo

GPTR = ir.PointerType(addrspace=1)
ELEM_TYPES = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64, "i32": I32, "i64": I64,
              "u32": I32, "u64": I64}


def new_module(ti: AmdTargetInfo, attrs: LLVMAttributes | None = None) -> ir.Module:
    m = ir.Module(name="naiad_test")
    m.triple = ti.triple
    m.data_layout = ti.data_layout
    flags = attrs.module_flags if attrs is not None else {}
    if flags:
        nodes = [m.add_metadata([ir.Constant(I32, 1), name, ir.Constant(I32, int(v))]) for name, v in flags.items()]
        for n in nodes:
            m.add_named_metadata("llvm.module.flags", n)
    return m


def new_kernel(m: ir.Module, ti: AmdTargetInfo, name: str, arg_types,
               attrs: LLVMAttributes | None = None):
    attrs = attrs or LLVMAttributes()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), list(arg_types)), name)
    fn.calling_convention = attrs.calling_convention or ti.kernel_calling_convention
    for key, value in attrs.function.items():
        set.add(fn.attributes, f'"{key}"="{value}"')  # llvmlite only knows flag attributes
    for a in fn.args:
        if isinstance(a.type, ir.PointerType):
            a.add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def global_index(b: ir.IRBuilder, ti: AmdTargetInfo, block: int):
    pid = ti.program_id(b, 0)
    tid = ti.thread_id(b, 0)
    return b.add(b.mul(pid, ir.Constant(I32, block)), tid)


def vector_add(ti: AmdTargetInfo, attrs: dict, block: int, name: str = "vadd") -> str:
    """out[i] = x[i] + y[i] for i < n, one element per work-item."""
    m = new_module(ti, attrs)
    fn, b = new_kernel(m, ti, name, [GPTR, GPTR, GPTR, I32], attrs)
    x, y, out, n = fn.args
    i = global_index(b, ti, block)
    inb = b.icmp_signed("<", i, n)
    with b.if_then(inb):
        px = b.gep(x, [i], inbounds=True, source_etype=F32)
        py = b.gep(y, [i], inbounds=True, source_etype=F32)
        s = b.fadd(b.load(px, typ=F32, align=4), b.load(py, typ=F32, align=4))
        b.store(s, b.gep(out, [i], inbounds=True, source_etype=F32), align=4)
    b.ret_void()
    return str(m)


def unary_math(ti: AmdTargetInfo, attrs: dict, fname: str, elem: str, block: int, arity: int = 1,
               name: str = "mathk") -> str:
    """out[i] = fname(x[i], ...) with the TargetInfo's math()."""
    ty = ELEM_TYPES[elem]
    m = new_module(ti, attrs)
    fn, b = new_kernel(m, ti, name, [GPTR, GPTR, I32], attrs)
    x, out, n = fn.args
    i = global_index(b, ti, block)
    with b.if_then(b.icmp_signed("<", i, n)):
        v = b.load(b.gep(x, [i], inbounds=True, source_etype=ty), typ=ty)
        args = [v] * arity
        r = ti.math(b, fname, args, elem)
        b.store(r, b.gep(out, [i], inbounds=True, source_etype=ty))
    b.ret_void()
    return str(m)


def shuffle_kernel(ti: AmdTargetInfo, attrs: dict, block: int, elem: str = "f32", name: str = "shfl") -> str:
    """A butterfly sum over the wave with shuffle_xor, then shuffle_idx from lane 0, and a barrier."""
    ty = ELEM_TYPES[elem]
    m = new_module(ti, attrs)
    fn, b = new_kernel(m, ti, name, [GPTR, GPTR], attrs)
    x, out = fn.args
    i = global_index(b, ti, block)
    v = b.load(b.gep(x, [i], inbounds=True, source_etype=ty), typ=ty)
    mask = ti.warp_size // 2
    while mask:
        o = ti.shuffle_xor(b, v, mask)
        v = b.fadd(v, o) if ty in (F32, F64, F16) else b.add(v, o)
        mask //= 2
    v = ti.shuffle_idx(b, v, ir.Constant(I32, 0))
    ti.barrier(b)
    lane = ti.lane_id(b)
    nprog = ti.num_programs(b, 0)
    w = b.add(lane, nprog)
    b.store(v, b.gep(out, [i], inbounds=True, source_etype=ty))
    b.store(w, b.gep(out, [b.add(i, ir.Constant(I32, 1 << 20))], inbounds=True, source_etype=I32))
    b.ret_void()
    return str(m)


def lds_kernel(ti: AmdTargetInfo, attrs: dict, block: int, name: str = "ldsk") -> str:
    """Write to an LDS array, barrier, read a neighbour's slot: exercises LDS + the fence sequence."""
    m = new_module(ti, attrs)
    arr_ty = ir.ArrayType(F32, block)
    lds = ir.GlobalVariable(m, arr_ty, "smem", addrspace=ti.shared_address_space)
    lds.linkage = "internal"
    lds.initializer = ir.Constant(arr_ty, ir.Undefined)  # LDS cannot be initialised
    lds.align = 16
    lds.type = ir.PointerType(addrspace=ti.shared_address_space)  # llvmlite globals default to typed pointers
    fn, b = new_kernel(m, ti, name, [GPTR, GPTR], attrs)
    x, out = fn.args
    tid = ti.thread_id(b, 0)
    i = global_index(b, ti, block)
    v = b.load(b.gep(x, [i], inbounds=True, source_etype=F32), typ=F32)
    zero = ir.Constant(I32, 0)
    b.store(v, b.gep(lds, [zero, tid], inbounds=True, source_etype=arr_ty))
    ti.barrier(b)
    nb = b.urem(b.add(tid, ir.Constant(I32, 1)), ir.Constant(I32, block))
    w = b.load(b.gep(lds, [zero, nb], inbounds=True, source_etype=arr_ty), typ=F32)
    b.store(w, b.gep(out, [i], inbounds=True, source_etype=F32))
    b.ret_void()
    return str(m)


def pressure_kernel(ti: AmdTargetInfo, attrs: dict, block: int, live: int = 160, name: str = "press") -> str:
    """Loads ``live`` values, sums them, then stores each times the sum: all stay live at once,
    so register use depends on what ``amdgpu-waves-per-eu`` allows."""
    m = new_module(ti, attrs)
    fn, b = new_kernel(m, ti, name, [GPTR, GPTR], attrs)
    x, out = fn.args
    i = global_index(b, ti, block)
    base = b.mul(i, ir.Constant(I32, live))
    vals = []
    for j in range(live):
        idx = b.add(base, ir.Constant(I32, j))
        vals.append(b.load(b.gep(x, [idx], inbounds=True, source_etype=F32), typ=F32))
    total = vals[0]
    for v in vals[1:]:
        total = b.fadd(total, v)
    for j, v in enumerate(vals):
        idx = b.add(base, ir.Constant(I32, j))
        b.store(b.fmul(v, total), b.gep(out, [idx], inbounds=True, source_etype=F32))
    b.ret_void()
    return str(m)
