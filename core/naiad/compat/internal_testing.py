"""``triton._internal_testing`` under naiad: the helpers Triton's unit tests import.

Written for naiad from the helpers' documented behaviour: dtype lists, device predicates that
answer for the current naiad target (the reference executor counts as Triton's interpreter: one
lane per warp, no assembly to inspect), and conversions between numpy and torch tensors.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.random import RandomState

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


# -- what the current target is ------------------------------------------------------------------
def _target():
    from naiad.runtime.targets import current_state

    return current_state().target


def _nvidia_cc() -> int:
    t = _target()
    if t.backend != "nvidia":
        return 0
    digits = "".join(c for c in t.arch if c.isdigit())
    return int(digits) if digits else 0


def get_current_target():
    from naiad.runtime.driver import active

    return active.get_current_target()


def is_interpreter() -> bool:
    """True on an interpreted naiad target (the reference executor)."""
    from naiad.runtime.targets import current_state

    return not current_state().spec.compiled


def is_compile_warmup() -> bool:
    return False


def is_cuda() -> bool:
    return _target().backend == "nvidia"


def is_hip() -> bool:
    return _target().backend == "amd"


def is_xpu() -> bool:
    return False


def is_ampere_or_newer() -> bool:
    return _nvidia_cc() >= 80


def is_hopper() -> bool:
    return 90 <= _nvidia_cc() < 100


def is_hopper_or_newer() -> bool:
    return _nvidia_cc() >= 90


def is_blackwell() -> bool:
    return 100 <= _nvidia_cc() < 120


def is_blackwell_ultra() -> bool:
    return _nvidia_cc() == 103


def is_rubin() -> bool:
    return False


def is_sm12x() -> bool:
    return 120 <= _nvidia_cc() < 130


def _amd_arch() -> str:
    t = _target()
    return t.arch if t.backend == "amd" else ""


def is_hip_cdna2() -> bool:
    return _amd_arch() == "gfx90a"


def is_hip_cdna3() -> bool:
    return _amd_arch() == "gfx942"


def is_hip_cdna4() -> bool:
    return _amd_arch() == "gfx950"


def is_hip_cdna3_or_newer() -> bool:
    return _amd_arch() in ("gfx942", "gfx950")


def is_hip_cdna() -> bool:
    return _amd_arch() in ("gfx90a", "gfx942", "gfx950")


def is_hip_rdna3() -> bool:
    return _amd_arch().startswith("gfx11")


def is_hip_rdna4() -> bool:
    return _amd_arch().startswith("gfx12") and _amd_arch() != "gfx1250"


def is_hip_rdna4m() -> bool:
    return False


def is_hip_rdna() -> bool:
    return is_hip_rdna3() or is_hip_rdna4()


def is_hip_gfx1250() -> bool:
    return _amd_arch() == "gfx1250"


def get_hip_lds_size() -> int:
    return 160 * 1024 if is_hip_cdna4() else 64 * 1024


def supports_tma(byval_only: bool = False) -> bool:
    return False   # naiad's TMA path belongs to the NVIDIA matrix work (issue 9)


def supports_ws() -> bool:
    return False


def supports_clc() -> bool:
    return False


def tma_skip_msg(byval_only: bool = False) -> str:
    return "naiad does not use TMA on this target"


def _requires_tma():
    import pytest

    return pytest.mark.skipif(True, reason=tma_skip_msg())


def __getattr__(name):
    if name == "requires_tma":
        return _requires_tma()
    raise AttributeError(f"triton._internal_testing under naiad has no {name!r}")


# -- data ----------------------------------------------------------------------------------------
def numpy_random(shape, dtype_str, rs: Optional[RandomState] = None, low=None, high=None):
    """Random numpy data of ``dtype_str``: integers uniform in [low, high) of the type's range
    and never 0 (so division tests are defined), floats standard normal, bfloat16 as float32
    values with the low 16 bits cleared, float8 as small int8 bit patterns, bool as signs."""
    if isinstance(shape, int):
        shape = (shape,)
    rs = rs if rs is not None else RandomState(seed=17)
    if dtype_str in integral_dtypes:
        info = np.iinfo(np.dtype(dtype_str))
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        x = rs.randint(lo, hi, shape, dtype=np.dtype(dtype_str))
        x[x == 0] = 1
        return x
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32)
        return (bits & np.uint32(0xFFFF0000)).view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def random_int(low, high, *, warmup_value=None, **kwargs):
    return int(np.random.randint(low, high, **kwargs))


def random_float(*, warmup_value=0.5, **kwargs):
    return float(np.random.random(**kwargs))


def to_triton(x: np.ndarray, device, dst_type=None):
    """A torch tensor on ``device`` holding ``x`` (unsigned and float8 data reinterpreted to the
    requested type; float32 data converted when ``dst_type`` is bfloat16)."""
    import torch

    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(np.dtype(name[1:]))
        return torch.tensor(signed, device=device).view(getattr(torch, name))
    if dst_type and "float8" in dst_type:
        torch_name = {"float8e4nv": "float8_e4m3fn", "float8e5": "float8_e5m2",
                      "float8e4b8": "float8_e4m3fnuz", "float8e5b16": "float8_e5m2fnuz"}.get(
                          dst_type, dst_type)
        if not hasattr(torch, torch_name):     # float8e4b15: Triton's labelled bytes
            import naiad.language as tl
            from .triton_root import reinterpret

            return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
        return torch.tensor(x, device=device).view(getattr(torch, torch_name))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(x: str):
    import naiad.language as tl

    alias = {"bool": "int1", "float8e4nv": "float8e4nv", "float8_e4m3fn": "float8e4nv",
             "float8_e5m2": "float8e5"}.get(x, x)
    found = getattr(tl, alias, None)
    if found is None:
        raise ValueError(f"naiad.language has no dtype {x!r}")
    return found


def torch_dtype_name(dtype) -> str:
    """``"float32"`` for torch.float32 or tl.float32; names of other dtypes unchanged."""
    text = str(dtype)
    if text.startswith("torch."):
        return text[len("torch."):]
    name = getattr(dtype, "name", None)
    if isinstance(name, str):
        return {"fp16": "float16", "fp32": "float32", "fp64": "float64", "bf16": "bfloat16",
                "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}.get(name, name)
    raise TypeError(f"not a dtype: {dtype!r}")


def to_numpy(x):
    """A numpy array of a torch tensor (bfloat16 widened to float32) or a numpy array."""
    if isinstance(x, np.ndarray):
        return x
    if type(x).__name__ == "TensorWrapper":     # labelled bytes: their integer view
        return x.base.detach().cpu().numpy().view(np.int8)
    if type(x).__module__.startswith("torch"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            return t.float().numpy()
        if str(t.dtype).startswith("torch.float8"):
            import torch

            return t.view(torch.int8).numpy()
        return t.numpy()
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def default_alloc_fn(size: int, align: int, _):
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda" if is_cuda() or is_hip() else "cpu")


def unwrap_tensor(t):
    return t
