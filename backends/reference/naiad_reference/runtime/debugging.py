"""The executor's debugging ops: ``print`` (tl.device_print), ``assert`` (tl.device_assert in
debug mode), ``debug_barrier`` (nothing to wait for: programs of a batch run in lockstep),
``descriptor_access`` (a TMA annotation beside a descriptor's load/store: nothing to do), and
``inline_asm``, which has no meaning without a GPU."""
from __future__ import annotations

import sys

import numpy as np

from naiad.errors import DeviceAssertionError, NaiadError


def _programs(interp, active, values):
    """Indices (into the batch) of the programs that execute this op."""
    n = max([interp.ctx.program_index.shape[0]] + [v.shape[0] for v in values])
    if active is None:
        return range(n)
    act = np.broadcast_to(active, (max(n, active.shape[0]),))
    return [int(i) for i in np.nonzero(act)[0]]


def _format(value, hex_: bool) -> str:
    if isinstance(value, (np.bool_, bool)):
        return str(int(value))
    if hex_:
        if isinstance(value, np.floating):
            return float(value).hex()
        width = value.dtype.itemsize * 2
        return f"0x{int(value) & ((1 << (4 * width)) - 1):0{width}x}"
    if isinstance(value, np.floating):
        return repr(float(value)) if value.dtype.itemsize > 4 else f"{float(value):.8g}"
    return str(int(value))


def op_print(interp, op, active):
    """One line per element: ``pid (x, y, z) idx (i, j) prefix: value``."""
    values = [interp.env[v] for v in op.operands]
    prefix = op.attrs.get("prefix", "")
    hex_ = bool(op.attrs.get("hex", False))
    out = []
    for p in _programs(interp, active, values):
        pid = interp.ctx.program_of(p)
        head = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
        if not values:
            out.append(f"{head} {prefix}".rstrip())
        for k, v in enumerate(values):
            label = prefix if len(values) == 1 else f"{prefix} (operand {k})"
            if not isinstance(v, np.ndarray):
                raise NaiadError("reference executor: device_print cannot print pointers")
            row = v[min(p, v.shape[0] - 1)]
            for idx in np.ndindex(*row.shape):
                where = f" idx ({', '.join(str(i) for i in idx)})" if idx else ""
                out.append(f"{head}{where} {label}: {_format(row[idx], hex_)}".replace(" : ", ": "))
    if out:
        sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()


def op_assert(interp, op, active):
    cond = interp.env[op.operands[0]]
    for p in _programs(interp, active, [cond]):
        row = np.asarray(cond[min(p, cond.shape[0] - 1)])
        bad = np.argwhere(~row) if row.ndim else ([()] if not row else [])
        if len(bad):
            idx = tuple(int(i) for i in bad[0])
            at = f", index {idx}" if idx else ""
            raise DeviceAssertionError(f"{op.attrs['message']} (program "
                                       f"{interp.ctx.program_of(p)}{at})")


def op_debug_barrier(interp, op, active):
    return None


def op_assume(interp, op, active):
    """A hint for the compiler, as in Triton's interpreter: nothing to run."""
    return None


def op_descriptor_access(interp, op, active):
    """A note for backends with tensor maps (TMA); the load/store beside it does the work."""
    return None


def op_descriptor_make(interp, op, active):
    """The tensor map of a descriptor made in the kernel: only ``descriptor_access`` reads it,
    and that does nothing here; the base pointer stands in for it."""
    interp._set(op, interp.env[op.operands[0]])


def op_inline_asm(interp, op, active):
    where = op.attrs.get("where") or (str(op.loc) if op.loc is not None else "")
    where = f" at {where}" if where else ""
    raise NaiadError(f"tl.inline_asm_elementwise{where} runs GPU assembly, which the reference "
                     f"executor cannot run; give the reference backend a fallback path "
                     f"(e.g. `if USE_ASM:` on a constexpr)")
