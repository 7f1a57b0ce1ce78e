"""A CPU "device" for testing the GPU lowering's *numerics* without a GPU.

The kernel goes through the real pipeline (frontend, generic passes, GPU passes, vendor-neutral
lowering) with a TargetInfo whose intrinsics call back into Python: thread ids come from a
thread-local, ``barrier`` is a ``threading.Barrier`` of the program's threads, shuffles exchange
values through per-warp slots between two warp barriers. The LLVM IR is JIT-compiled for the
host and every thread of a program runs it on its own OS thread (ctypes releases the GIL while
the kernel runs), programs one after the other. Shared memory is a buffer poisoned before every
program.

Small warps (e.g. 4 or 8 lanes) keep thread counts low and prove nothing assumes 32 lanes.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
import threading

import numpy as np
from llvmlite import ir

from naiad.gpu.lower import lower_to_llvm
from naiad.plugins import Options, TargetInfo

I32 = ir.IntType(32)

_llvm_ready = False


def _llvm():
    global _llvm_ready
    import llvmlite.binding as llvm

    if not _llvm_ready:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()   # inline assembly (tl.inline_asm_elementwise)
        # half-precision conversions on x86 are libcalls (__extendhfsf2, __truncsfhf2)
        llvm.load_library_permanently(ctypes.util.find_library("gcc_s") or "libgcc_s.so.1")
        _llvm_ready = True
    return llvm


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


def perm_table(module, perm) -> ir.GlobalVariable:
    """A constant i32 array in ``module`` holding the lane permutation ``perm`` (lane i reads
    lane perm[i]); kept in the kernel itself so that cached kernels carry their tables."""
    name = "simt_perm_" + "_".join(map(str, perm))
    gv = module.globals.get(name)
    if gv is None:
        ty = ir.ArrayType(I32, len(perm))
        gv = ir.GlobalVariable(module, ty, name)
        gv.global_constant = True
        gv.linkage = "private"
        gv.initializer = ir.Constant(ty, [ir.Constant(I32, p) for p in perm])
    return gv


class CpuTargetInfo(TargetInfo):
    """Intrinsics as calls to ``simt_*`` host functions; math via LLVM intrinsics/libm.

    ``xor_moves(mask)``, when given, says which fixed lane permutations a backend composes an
    XOR shuffle from (AMD: DPP, ds_swizzle, permlanex16 moves, see naiad_amd.lowering.cross_lane);
    each becomes one ``simt_shfl_perm`` call (with a pointer to the permutation's table), so the
    conformance suite executes those plans.
    """

    kernel_calling_convention = ""
    global_address_space = 0
    shared_address_space = 0

    def __init__(self, warp_size: int = 8, xor_moves=None):
        llvm = _llvm()
        self.warp_size = warp_size
        self.xor_moves = xor_moves
        self.triple = llvm.get_process_triple()
        tm = llvm.Target.from_triple(self.triple).create_target_machine()
        self.data_layout = str(tm.target_data)
        self.calls: dict[str, int] = {}

    def _call(self, b, name, ret, args):
        self.calls[name] = self.calls.get(name, 0) + 1
        return b.call(_declare(b.module, name, ret, [a.type for a in args]), args)

    def thread_id(self, builder, axis=0):
        return self._call(builder, "simt_tid", I32, [])

    def program_id(self, builder, axis):
        return self._call(builder, "simt_pid", I32, [ir.Constant(I32, axis)])

    def num_programs(self, builder, axis):
        return self._call(builder, "simt_nprog", I32, [ir.Constant(I32, axis)])

    def barrier(self, builder):
        self._call(builder, "simt_barrier", ir.VoidType(), [])

    def _word(self, builder, value, fn, extra):
        if value.type == I32:
            return self._call(builder, fn, I32, [value, extra])
        assert isinstance(value.type, ir.FloatType), value.type
        w = self._call(builder, fn, I32, [builder.bitcast(value, I32), extra])
        return builder.bitcast(w, value.type)

    def shuffle_xor(self, builder, value, lane_mask):
        if self.xor_moves is None:
            return self._word(builder, value, "simt_shfl_xor", ir.Constant(I32, lane_mask))
        for perm in self.xor_moves(lane_mask):
            table = builder.bitcast(perm_table(builder.module, perm), ir.PointerType(I32))
            value = self._word(builder, value, "simt_shfl_perm", table)
        return value

    def shuffle_idx(self, builder, value, src_lane):
        return self._word(builder, value, "simt_shfl_idx", src_lane)

    def printf(self, builder, fmt, args):
        """The host C library's printf (tl.device_print); flush with ``libc.fflush(None)``."""
        module = builder.module
        data = bytearray(fmt.encode("ascii")) + b"\0"
        name = f"simt_fmt_{len(module.globals)}"
        g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), len(data)), name)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(g.value_type, data)
        g.type = ir.PointerType()
        fn = module.globals.get("printf")
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(I32, [ir.PointerType()], var_arg=True),
                             "printf")
        self.calls["printf"] = self.calls.get("printf", 0) + 1
        builder.call(fn, [g] + list(args))
    def matrix_multiply(self, builder, instruction, a, b, c):
        """One matrix-instruction issue as a call into the device, which runs the wave's issue
        on the ISA model (:mod:`amd_matrix_isa`) -- not on the table's lane maps. Each lane
        passes its fragments as doubles and gets its D registers back."""
        dbl = ir.DoubleType()
        ident = matrix_instruction_id(instruction.name)
        args = [ir.Constant(I32, ident)]
        for vals, elem in ((a, instruction.a_type), (b, instruction.b_type),
                           (c, instruction.acc_type)):
            if len(vals) > MMA_MAX:
                raise ValueError(f"{instruction.name}: {len(vals)} registers per fragment")
            args += [_to_double(builder, v, elem) for v in vals]
            args += [ir.Constant(dbl, 0.0)] * (MMA_MAX - len(vals))
        self._call(builder, "simt_mma", ir.VoidType(), args)
        out = []
        for i in range(len(c)):
            v = self._call(builder, "simt_mma_result", dbl, [ir.Constant(I32, i)])
            out.append(builder.fptrunc(v, c[i].type) if instruction.acc_type == "f32"
                       else builder.fptosi(v, c[i].type))
        return out

    # -- AMD buffer instructions (naiad_amd's amd.buffer_load/store): the range check, executed
    def buffer_resource(self, builder, base):
        """The simulated buffer resource is its base pointer; num_records is naiad_amd's."""
        return base

    def _buffer_access(self, builder, rsrc, byte_offset, size):
        """(address, in range): the hardware's raw-buffer rule -- the access is done only when
        ``offset + size <= num_records``, the offset read as unsigned 32 bits."""
        from naiad_amd.passes.buffer_range import NUM_RECORDS

        i64 = ir.IntType(64)
        off = builder.zext(byte_offset, i64)
        end = builder.add(off, ir.Constant(i64, size))
        ok = builder.icmp_unsigned("<=", end, ir.Constant(i64, NUM_RECORDS))
        return builder.gep(rsrc, [off], source_etype=ir.IntType(8)), ok

    def buffer_load(self, builder, rsrc, byte_offset, ty):
        """0 outside num_records, as the hardware returns."""
        self.calls["buffer_load"] = self.calls.get("buffer_load", 0) + 1
        ptr, ok = self._buffer_access(builder, rsrc, byte_offset, _store_size(ty))
        return self.masked_load(builder, ptr, ty, ok, 1)

    def buffer_store(self, builder, rsrc, byte_offset, value):
        """Dropped outside num_records, as the hardware does."""
        self.calls["buffer_store"] = self.calls.get("buffer_store", 0) + 1
        ptr, ok = self._buffer_access(builder, rsrc, byte_offset, _store_size(value.type))
        self.masked_store(builder, ptr, value, ok, 1)

    def op_lowering(self, name):
        """naiad_amd's lowerings of its buffer ops (they call the buffer members above)."""
        if name.startswith("amd.buffer_"):
            from naiad_amd.lowering.buffer_ops import LOWERINGS

            return LOWERINGS.get(name)
        return None

    def math(self, builder, name, args, elem):
        t = args[0].type
        sfx = {"f32": "f32", "f64": "f64"}[elem]
        libm = {"erf": "erf"}
        if name in libm:
            fname = libm[name] + ("f" if elem == "f32" else "")
            return builder.call(_declare(builder.module, fname, t, [t]), list(args))
        if name == "sqrt_rn":
            name = "sqrt"
        if name == "rsqrt":
            s = self.math(builder, "sqrt", args, elem)
            return builder.fdiv(ir.Constant(t, 1.0), s)
        llvm_name = {"abs": "fabs"}.get(name, name)
        fn = _declare(builder.module, f"llvm.{llvm_name}.{sfx}", t, [t] * len(args))
        return builder.call(fn, list(args))


def _store_size(ty) -> int:
    """Bytes of an integer or integer-vector type (what buffer accesses move)."""
    if isinstance(ty, ir.VectorType):
        return ty.count * _store_size(ty.element)
    return max(ty.width // 8, 1)


#: matrix instruction names by the id the simt_mma callback receives: every name of the AMD
#: table in sorted order, so the id in a kernel from the on-disk cache means the same name
MATRIX_NAMES: list[str] = []


def _known_names() -> list[str]:
    if not MATRIX_NAMES:
        from naiad_amd.ir.matrix_table import ROWS

        MATRIX_NAMES.extend(sorted({r.name for rows in ROWS.values() for r in rows}))
    return MATRIX_NAMES
#: registers per fragment passed to simt_mma (A, B and C each padded to this many doubles)
MMA_MAX = 16


def matrix_instruction_id(name: str) -> int:
    names = _known_names()
    if name not in names:
        raise ValueError(f"the simulator has no ISA model for {name}")
    return names.index(name)


def _to_double(builder, v, elem: str):
    dbl = ir.DoubleType()
    if elem == "bf16":  # i16 bits -> f32 -> f64
        bits = builder.shl(builder.zext(v, I32), ir.Constant(I32, 16))
        return builder.fpext(builder.bitcast(bits, ir.FloatType()), dbl)
    if elem in ("i8", "i32"):
        return builder.sitofp(v, dbl)
    if elem.startswith("f8"):  # fp8 bits (i8) -> f32 (exact) -> f64
        from naiad.gpu.lower.float8 import decode
        from naiad.ir.float8 import FORMATS

        return builder.fpext(decode(builder, FORMATS[elem], v), dbl)
    return builder.fpext(v, dbl)


_SIG = {"float32": "fp32", "float64": "fp64", "float16": "fp16", "bfloat16": "bf16",
        "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
        "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
        "float8_e5m2": "fp8e5", "float8_e4m3fn": "fp8e4nv", "float8_e4m3fnuz": "fp8e4b8",
        "float8_e5m2fnuz": "fp8e5b16"}
_CTYPE = {"i1": ctypes.c_uint8, "i8": ctypes.c_int8, "i16": ctypes.c_int16,
          "i32": ctypes.c_int32, "i64": ctypes.c_int64, "u8": ctypes.c_uint8,
          "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
          "fp32": ctypes.c_float, "fp64": ctypes.c_double}


def signature_of(value) -> str:
    if isinstance(value, np.ndarray):
        return "*" + _SIG[value.dtype.name]
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, (int, np.integer)):
        return "i32"
    return "fp32"


_DIV = re.compile(r"(%\"?[\w.]+\"?) = (sdiv|udiv|srem|urem) (i\d+) ([^,\n]+), ([^\n]+)")


def _trap_free_division(text: str) -> str:
    """x86 traps on integer division by zero (and INT_MIN / -1); GPUs do not. Masked-off lanes
    divide zeros, so division goes through helpers that give 0 (wrapping for -1) instead."""
    used = set()

    def repl(m):
        res, op, ty, a, b = m.groups()
        used.add((op, ty))
        return f"{res} = call {ty} @simt_{op}_{ty}({ty} {a}, {ty} {b.strip()})"

    text = _DIV.sub(repl, text)
    helpers = []
    for op, ty in sorted(used):
        signed = op[0] == "s"
        minus_one = (f"  %m = icmp eq {ty} %b, -1\n" if signed else "  %m = icmp eq i1 0, 1\n")
        neg = f"sub {ty} 0, %a" if op == "sdiv" else f"add {ty} 0, 0"
        helpers.append(
            f"define internal {ty} @simt_{op}_{ty}({ty} %a, {ty} %b) {{\n"
            f"  %z = icmp eq {ty} %b, 0\n{minus_one}"
            f"  %bad = or i1 %z, %m\n"
            f"  %safe = select i1 %bad, {ty} 1, {ty} %b\n"
            f"  %q = {op} {ty} %a, %safe\n"
            f"  %n = {neg}\n"
            f"  %r1 = select i1 %m, {ty} %n, {ty} %q\n"
            f"  %r = select i1 %z, {ty} 0, {ty} %r1\n"
            f"  ret {ty} %r\n}}\n")
    return text + "\n" + "".join(helpers)


class JitKernel:
    """LLVM IR of one kernel JIT-compiled for the host, launchable on the CPU device."""

    def __init__(self, llvm_ir: str, name: str, warp_size: int, num_warps: int,
                 shared_bytes: int, triple: str):
        llvm = _llvm()
        self.name = name
        self.device = _Device(warp_size, num_warps, shared_bytes)
        self.device.install(llvm)
        mod = llvm.parse_assembly(_trap_free_division(llvm_ir))
        mod.verify()
        tm = llvm.Target.from_triple(triple).create_target_machine(opt=1)
        self.engine = llvm.create_mcjit_compiler(mod, tm)
        self.engine.finalize_object()
        self.address = self.engine.get_function_address(name)

    def launch(self, grid, values, types, timeout: float = 60.0):
        """``values``: ctypes-ready Python values, ``types``: naiad type strings."""
        ctypes_args, argtypes = [], []
        for v, t in zip(values, types):
            if t.startswith("*"):
                argtypes.append(ctypes.c_void_p)
                ctypes_args.append(ctypes.c_void_p(int(v)))
            elif t == "fp16":
                # half arguments travel in the low 16 bits of an SSE register
                bits = int(np.array(v, np.float16).view(np.uint16))
                argtypes.append(ctypes.c_float)
                ctypes_args.append(ctypes.c_float(np.array(bits, np.uint32).view(np.float32)))
            elif t == "bf16":
                import ml_dtypes

                bits = int(np.array(v, np.float32).astype(ml_dtypes.bfloat16).view(np.int16))
                argtypes.append(ctypes.c_int16)
                ctypes_args.append(ctypes.c_int16(bits))
            else:
                ct = _CTYPE[t]
                argtypes.append(ct)
                ctypes_args.append(ct(int(v) if t[0] in "iu" else float(v)))
        cfn = ctypes.CFUNCTYPE(None, *argtypes)(self.address)
        self.device.run(grid, lambda: cfn(*ctypes_args), timeout)


class Compiled:
    """A @jit kernel compiled for the CPU device through the whole pipeline."""

    def __init__(self, fn, args, constexprs, warp_size, num_warps, signature=None,
                 specialization=None, pm=None):
        from naiad.frontend import generate
        from naiad.passes import run_generic_pipeline

        params = [p for p in fn.arg_names if p not in constexprs]
        sig = dict(zip(params, [signature_of(a) for a in args]))
        sig.update(signature or {})
        self.signature = sig
        module = generate(fn, sig, constexprs, specialization or {})
        run_generic_pipeline(module)
        self.ti = CpuTargetInfo(warp_size)
        self.num_warps = num_warps
        self.lowered = lower_to_llvm(module, fn.__name__, None, Options(num_warps=num_warps),
                                     self.ti, pm)
        self.name = fn.__name__
        self.jit = JitKernel(self.lowered.llvm_ir, self.name, warp_size, num_warps,
                             self.lowered.shared_bytes, self.ti.triple)

    def __call__(self, grid, args, timeout: float = 60.0):
        values = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
        self.jit.launch(grid, values, list(self.signature.values()), timeout)


class _Device:
    """Threads, barriers, shuffles and shared memory of one program at a time."""

    _installed: "_Device | None" = None
    _callbacks = None

    def __init__(self, warp_size, num_warps, shared_bytes):
        self.ws, self.nw = warp_size, num_warps
        self.nthreads = warp_size * num_warps
        self.smem = (ctypes.c_uint8 * max(shared_bytes + 64, 64))()
        self.local = threading.local()
        self.pid = (0, 0, 0)
        self.grid = (1, 1, 1)
        self.errors: list[str] = []

    # callbacks ----------------------------------------------------------------------------
    def _tid(self):
        return self.local.tid

    def _program(self, axis):
        return self.pid[axis]

    def _nprog(self, axis):
        return self.grid[axis]

    def _barrier(self):
        try:
            self.block_barrier.wait()
        except threading.BrokenBarrierError:
            self.errors.append("block barrier broken (threads disagree on barriers)")

    def _exchange(self, value, src):
        t = self.local.tid
        w, lane = divmod(t, self.ws)
        slots = self.slots[w]
        slots[lane] = value
        try:
            self.warp_barriers[w].wait()
            out = slots[src % self.ws]
            if not 0 <= src < self.ws:
                self.errors.append(f"shuffle from lane {src} outside the warp")
            self.warp_barriers[w].wait()
        except threading.BrokenBarrierError:
            self.errors.append("warp barrier broken (lanes disagree on shuffles)")
            return 0
        return out

    def _shfl_xor(self, value, mask):
        return self._exchange(value, (self.local.tid % self.ws) ^ mask)

    def _shfl_idx(self, value, src):
        return self._exchange(value, src)

    def _mma(self, ident, *regs):
        """A wave's matrix-instruction issue: every lane posts its fragments; lane 0 runs the
        ISA model on the whole wave; every lane takes its D registers."""
        from amd_matrix_isa import model

        mdl = model(_known_names()[ident])
        t = self.local.tid
        w, lane = divmod(t, self.ws)
        if mdl.wave != self.ws:
            self.errors.append(f"{mdl.name} runs on wave{mdl.wave}, the device has {self.ws}")
            return
        a = regs[:mdl.kb]
        b = regs[MMA_MAX:MMA_MAX + mdl.kb]
        c = regs[2 * MMA_MAX:2 * MMA_MAX + mdl.d_count]
        self.mma_slots[w][lane] = (a, b, c)
        try:
            self.warp_barriers[w].wait()
            if lane == 0:
                slots = self.mma_slots[w]
                try:
                    self.mma_out[w] = mdl.execute([s[0] for s in slots], [s[1] for s in slots],
                                                  [s[2] for s in slots])
                except AssertionError as e:
                    self.errors.append(str(e))
                    self.mma_out[w] = None
            self.warp_barriers[w].wait()
        except threading.BrokenBarrierError:
            self.errors.append("warp barrier broken (lanes disagree on matrix instructions)")
            return
        out = self.mma_out[w]
        self.local.mma_result = [0.0] * mdl.d_count if out is None else \
            [float(x) for x in out[lane]]

    def _mma_result(self, i):
        return self.local.mma_result[i]

    def _shfl_perm(self, value, table):
        src = ctypes.cast(table, ctypes.POINTER(ctypes.c_int32))[self.local.tid % self.ws]
        return self._exchange(value, src)

    def install(self, llvm):
        cls = type(self)
        cls._installed = self
        if cls._callbacks is None:
            def current():
                return cls._installed

            cbs = {
                "simt_tid": ctypes.CFUNCTYPE(ctypes.c_int32)(lambda: current()._tid()),
                "simt_pid": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(
                    lambda a: current()._program(a)),
                "simt_nprog": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(
                    lambda a: current()._nprog(a)),
                "simt_barrier": ctypes.CFUNCTYPE(None)(lambda: current()._barrier()),
                "simt_shfl_xor": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(
                    lambda v, m: current()._shfl_xor(v, m)),
                "simt_shfl_idx": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(
                    lambda v, s: current()._shfl_idx(v, s)),
                "simt_mma": ctypes.CFUNCTYPE(None, ctypes.c_int32,
                                             *[ctypes.c_double] * (3 * MMA_MAX))(
                    lambda i, *regs: current()._mma(i, *regs)),
                "simt_mma_result": ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int32)(
                    lambda i: current()._mma_result(i)),
                "simt_shfl_perm": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)(
                    lambda v, p: current()._shfl_perm(v, p)),
            }
            cls._callbacks = cbs
        for name, cb in cls._callbacks.items():
            llvm.add_symbol(name, ctypes.cast(cb, ctypes.c_void_p).value)
        llvm.add_symbol("global_smem", ctypes.addressof(self.smem))

    def run(self, grid, call, timeout):
        type(self)._installed = self
        grid = tuple(grid) + (1,) * (3 - len(grid))
        self.grid = grid
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    self.pid = (x, y, z)
                    self._run_program(call, timeout)
        if self.errors:
            raise AssertionError("; ".join(sorted(set(self.errors))))

    def _run_program(self, call, timeout):
        ctypes.memset(self.smem, 0xA5, len(self.smem))  # poison shared memory
        self.block_barrier = threading.Barrier(self.nthreads, timeout=timeout)
        self.warp_barriers = [threading.Barrier(self.ws, timeout=timeout) for _ in range(self.nw)]
        self.slots = [[0] * self.ws for _ in range(self.nw)]
        self.mma_slots = [[None] * self.ws for _ in range(self.nw)]
        self.mma_out = [None] * self.nw

        def body(t):
            self.local.tid = t
            call()

        threads = [threading.Thread(target=body, args=(t,), daemon=True)
                   for t in range(self.nthreads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout)
            if th.is_alive():
                self.block_barrier.abort()
                for wb in self.warp_barriers:
                    wb.abort()
                raise AssertionError(f"program {self.pid} did not finish in {timeout}s")


def run(fn, grid, args, constexprs=None, *, warp_size=8, num_warps=2, signature=None,
        specialization=None, pm=None):
    """Compile ``fn`` for the CPU device and run it on ``grid``; arrays are updated in place.
    Returns the :class:`Compiled` kernel (its ``lowered`` holds the GPU IR and LLVM IR)."""
    k = Compiled(fn, args, dict(constexprs or {}), warp_size, num_warps, signature,
                 specialization, pm)
    k(grid, args)
    return k
