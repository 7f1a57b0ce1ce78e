"""Device memory without any framework: ``naiad.to_device``, ``naiad.empty``, ``naiad.zeros``.

Each call goes to the launcher of the target (the current one unless ``target=`` names another).
GPU backends return their device arrays (``.numpy()`` copies back); the reference target runs on
the host, so it returns plain numpy arrays (its launcher may override that).
"""
from __future__ import annotations

import numpy as np

from ..errors import NaiadError
from .specialize import ArgumentError
from .targets import state_for

#: spellings accepted for dtypes besides numpy's own: signature/IR names
_DTYPE_ALIASES = {
    "fp16": "float16", "fp32": "float32", "fp64": "float64", "f16": "float16",
    "f32": "float32", "f64": "float64", "i1": "bool", "int1": "bool", "i8": "int8",
    "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
    "u32": "uint32", "u64": "uint64",
}


def as_numpy_dtype(dtype) -> np.dtype:
    """numpy dtype from a numpy dtype/type, a name (``"float32"``, ``"fp32"``, ``"bf16"``), a
    naiad IR scalar type or a ``naiad.language`` dtype."""
    if isinstance(dtype, np.dtype):
        return dtype
    np_attr = getattr(dtype, "numpy_dtype", None)  # naiad.ir.types.ScalarType
    if isinstance(np_attr, np.dtype):
        return np_attr
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if isinstance(name, str):
        name = name.strip()
        if name in ("bf16", "bfloat16"):
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        name = _DTYPE_ALIASES.get(name, name)
        try:
            return np.dtype(name)
        except TypeError:
            pass
    try:
        return np.dtype(dtype)
    except TypeError:
        raise ArgumentError(f"not a dtype naiad understands: {dtype!r}") from None


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
    except TypeError:
        raise ArgumentError(f"a shape is an int or a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ArgumentError(f"negative dimension in shape {out}")
    return out


def _launcher(target):
    state = state_for(target)
    return state, state.launcher


def to_device(array, target=None):
    """Copy a host array (numpy, or anything numpy can view) to the target's memory."""
    state, launcher = _launcher(target)
    host = np.asarray(array)
    if host.dtype == object:
        raise ArgumentError("to_device needs a numeric array, got dtype object")
    try:
        return launcher.to_device(host)
    except NotImplementedError:
        if state.spec.compiled:
            raise NaiadError(f"the {state.name} launcher cannot allocate device memory") from None
        return np.array(host, copy=True)


def empty(shape, dtype="float32", target=None):
    """An uninitialised array on the target."""
    state, launcher = _launcher(target)
    shape, dt = _shape(shape), as_numpy_dtype(dtype)
    try:
        return launcher.empty(shape, dt)
    except NotImplementedError:
        if state.spec.compiled:
            raise NaiadError(f"the {state.name} launcher cannot allocate device memory") from None
        return np.empty(shape, dt)


def zeros(shape, dtype="float32", target=None):
    """A zero-filled array on the target."""
    state, launcher = _launcher(target)
    shape, dt = _shape(shape), as_numpy_dtype(dtype)
    fill = getattr(launcher, "zeros", None)
    if fill is not None:
        try:
            return fill(shape, dt)
        except NotImplementedError:
            pass
    return to_device(np.zeros(shape, dt), target=state.target)


def to_host(array) -> np.ndarray:
    """A numpy copy of what ``to_device``/``empty``/``zeros`` returned on any target: device
    arrays are copied back (``.numpy()``), host arrays (the reference target) pass through."""
    if isinstance(array, np.ndarray):
        return array
    copy_back = getattr(array, "numpy", None)
    if copy_back is None:
        raise ArgumentError(f"to_host needs a naiad array or a numpy array, got "
                            f"{type(array).__name__}")
    return np.asarray(copy_back())
