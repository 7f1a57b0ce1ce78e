"""Launch arguments -> naiad types, specialisation facts and the values the launcher receives.

Each runtime argument is classified into a *key* ``(type string, fact)``: the type is Triton's
signature spelling (``"*fp32"``, ``"i32"``, ``"fp32"``...), the fact is ``16`` (pointer or integer
divisible by 16), ``1`` (integer equal to 1) or ``0``. Keys are interned tuples so the warm launch
path builds its cache key without allocating per argument type.

What a pointer argument becomes depends on the target: the reference executor (an interpreter)
receives host arrays (numpy views); a compiled target receives the device address that its
launcher's ``data_pointer(obj)`` reports (or ``__cuda_array_interface__`` / ``data_ptr()``).

Speed: :class:`ArgBinder` keeps one small function per argument *type* (``by_type``), which
the warm launch path calls directly. Array types a launcher knows (it offers
``pointer_getter(type)``) get a binder that reads the address through that getter and finds the
key pair in a dict keyed by the dtype *object* (torch.float32, numpy's float32): no string is built
or parsed per launch.
"""
from __future__ import annotations

import struct

import numpy as np

from ..errors import NaiadError

SPEC_NONE, SPEC_ONE, SPEC_DIV16 = 0, 1, 16
_F64 = struct.Struct("<d")

#: numpy dtype name -> naiad element spelling
NUMPY_NAMES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
    # fp8 (ml_dtypes names), spelled as Triton's signatures spell them
    "float8_e5m2": "fp8e5", "float8_e4m3fn": "fp8e4nv", "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2fnuz": "fp8e5b16",  # (float8e4b15 has no numpy or torch type)
}
#: torch dtype str() -> naiad element spelling (no torch import needed)
TORCH_NAMES = {
    "torch.bool": "i1", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32",
    "torch.int64": "i64", "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32",
    "torch.uint64": "u64", "torch.float16": "fp16", "torch.bfloat16": "bf16",
    "torch.float32": "fp32", "torch.float64": "fp64",
    "torch.float8_e5m2": "fp8e5", "torch.float8_e4m3fn": "fp8e4nv",
    "torch.float8_e4m3fnuz": "fp8e4b8", "torch.float8_e5m2fnuz": "fp8e5b16",
}

_KEYS: dict[tuple[str, int], tuple[str, int]] = {}


def key(sig: str, fact: int) -> tuple[str, int]:
    """The interned key tuple ``(sig, fact)``."""
    k = (sig, fact)
    return _KEYS.setdefault(k, k)


K_I1 = key("i1", 0)
K_FP32 = key("fp32", 0)
K_I32 = (key("i32", 0), key("i32", SPEC_ONE), key("i32", SPEC_DIV16))
_K_I32_0, _K_I32_1, _K_I32_16 = K_I32
K_I64 = (key("i64", 0), key("i64", SPEC_ONE), key("i64", SPEC_DIV16))
K_U64 = (key("u64", 0), key("u64", SPEC_ONE), key("u64", SPEC_DIV16))


#: types whose values are not their own in-memory cache key (see :func:`value_key`)
VALUE_KEYED_TYPES = frozenset({float, np.float16, np.float32, np.float64, np.longdouble,
                               tuple, list})


def value_key(value):
    """The in-memory cache key of a constexpr value: equal only for values that compile alike.

    Floats are keyed by their bits: ``-0.0 == 0.0`` in Python (one key would run a kernel built
    for the other sign) and ``nan != nan`` (every launch would miss). Tuples and lists key their
    items. Other values are their own key (their type is keyed beside them)."""
    t = type(value)
    if t is float:
        return (t, _F64.pack(value))
    if t is tuple or t is list:
        return (t, tuple([value_key(v) for v in value]))
    if t in VALUE_KEYED_TYPES:
        return (t, value.tobytes())
    return value


class ArgumentError(NaiadError, TypeError):
    """A launch argument naiad cannot pass to a kernel (wrong kind, unsupported dtype, host
    array on a device target, missing or duplicate argument, bad grid)."""


def int_key(v: int) -> tuple[str, int]:
    """Key of a Python int: i32 when it fits, else i64, else u64; facts 1 and 16."""
    if -0x80000000 <= v <= 0x7FFFFFFF:
        table = K_I32
    elif -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        table = K_I64
    elif 0 <= v <= 0xFFFFFFFFFFFFFFFF:
        table = K_U64
    else:
        raise ArgumentError(f"integer {v} does not fit in 64 bits")
    if v == 1:
        return table[1]
    return table[2] if v % 16 == 0 else table[0]


_UNSPECIALIZED: dict[tuple[str, int], tuple[str, int]] = {}


def without_fact(k: tuple[str, int]) -> tuple[str, int]:
    """The interned key of the same type with no fact (``do_not_specialize`` arguments)."""
    out = _UNSPECIALIZED.get(k)
    if out is None:
        out = _UNSPECIALIZED[k] = key(k[0], SPEC_NONE)
    return out


def pointer_keys(sig: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """``(key of a misaligned pointer, key of a 16-byte aligned one)`` for element ``sig``:
    indexed by ``not address & 15``."""
    return key("*" + sig, SPEC_NONE), key("*" + sig, SPEC_DIV16)


def element_sig(obj) -> str:
    """Element spelling (``"fp32"``) of an array-like: numpy/cupy/naiad ``.dtype``, torch's
    ``.dtype`` (by name, torch is never imported), or ``__cuda_array_interface__['typestr']``."""
    dt = getattr(obj, "dtype", None)
    if dt is not None:
        if isinstance(dt, np.dtype):
            name = NUMPY_NAMES.get(dt.name)
            if name is None:
                raise ArgumentError(f"naiad has no element type for dtype {dt}")
            return name
        text = str(dt)
        if text.startswith("torch."):
            name = TORCH_NAMES.get(text)
            if name is None:
                raise ArgumentError(f"naiad has no element type for {text}")
            return name
        name = getattr(dt, "name", None)  # naiad.language dtypes and the like
        if isinstance(name, str):
            for cand in (name, _short(name)):
                if cand in NUMPY_NAMES.values() or cand == "fp8e4b15":  # (no numpy type)
                    return cand
        try:
            return element_sig_of_dtype(np.dtype(dt))
        except (TypeError, ValueError):
            pass
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return element_sig_of_dtype(np.dtype(cai["typestr"]))
    raise ArgumentError(f"cannot tell the element type of {type(obj).__name__}")


def _short(name: str) -> str:
    return {"f16": "fp16", "f32": "fp32", "f64": "fp64", "float32": "fp32", "float16": "fp16",
            "float64": "fp64", "bfloat16": "bf16", "int32": "i32", "int64": "i64", "int8": "i8",
            "int16": "i16", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
            "int1": "i1"}.get(name, name)


def element_sig_of_dtype(dt: np.dtype) -> str:
    name = NUMPY_NAMES.get(np.dtype(dt).name)
    if name is None:
        raise ArgumentError(f"naiad has no element type for dtype {dt}")
    return name


def _is_torch_tensor(obj) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


class ArgBinder:
    """Classifies runtime arguments for one target. ``bind(value) -> (key, launch value)``.

    ``launcher`` is the target's Launcher (or None). ``keys_only`` binders serve ``warmup``,
    which compiles ahead of time: an array the launcher refuses (a host array, no device here)
    still gives its pointer type, counted as 16-byte aligned.
    """

    def __init__(self, interpreted: bool, target_name: str, launcher=None,
                 keys_only: bool = False):
        self.interpreted = interpreted
        self.target_name = target_name
        self.launcher = launcher
        self.keys_only = keys_only
        self._ptr_keys: dict = {}   # numpy dtype -> "*fp32" key (interpreted targets)
        self._ptr_key_pairs: dict = {}       # numpy/torch dtype -> pointer_keys(...)
        self._ptr_key_dtype_types: set = set()   # the types of those dtype objects
        self._by_type = {bool: self._bool, int: self._int, float: self._float}
        if interpreted:
            self._by_type[np.ndarray] = self._host_array

    def bind(self, value):
        fn = self._by_type.get(type(value))
        if fn is None:
            return self._dispatch_for(value)
        return fn(value)

    @property
    def by_type(self) -> dict:
        """``type -> function(value) -> (key, launch value)`` for the types seen so far (the warm
        launch path calls these directly; types not in it go through :meth:`bind`)."""
        return self._by_type

    # -- scalars ---------------------------------------------------------------------------------
    @staticmethod
    def _bool(v):
        return K_I1, v

    @staticmethod
    def _int(v):
        if -0x80000000 <= v <= 0x7FFFFFFF:     # the common case, without a call
            if v & 15:
                return (_K_I32_1 if v == 1 else _K_I32_0), v
            return _K_I32_16, v
        return int_key(v), v

    @staticmethod
    def _float(v):
        return K_FP32, v

    def _np_scalar(self, v):
        sig = NUMPY_NAMES.get(v.dtype.name)
        if sig is None:
            raise ArgumentError(f"naiad has no scalar type for numpy {v.dtype}")
        if v.dtype.kind in "iu":
            iv = int(v)
            fact = SPEC_ONE if iv == 1 else (SPEC_DIV16 if iv % 16 == 0 else SPEC_NONE)
            return key(sig, fact), v
        return key(sig, SPEC_NONE), v

    # -- pointers ---------------------------------------------------------------------------------
    def _host_array(self, a):
        k = self._ptr_keys.get(a.dtype)
        if k is None:
            k = key("*" + element_sig_of_dtype(a.dtype), SPEC_DIV16)
            self._ptr_keys[a.dtype] = k
        return k, a

    def _interpreted_pointer(self, obj):
        """Host view of an array-like for the interpreter (zero-copy where possible)."""
        if type(obj).__name__ == "TensorWrapper" and hasattr(obj, "base"):
            sig = element_sig(obj)            # bytes labelled with a dtype (float8e4b15)
            from ..language.dtypes import to_ir_type

            _, view = self._interpreted_pointer(obj.base)
            return key("*" + sig, SPEC_DIV16), view.view(to_ir_type(sig).numpy_dtype)
        if _is_torch_tensor(obj):
            if getattr(getattr(obj, "device", None), "type", "cpu") != "cpu":
                raise ArgumentError(f"a {obj.device} tensor cannot be passed to a kernel for "
                                    f"target {self.target_name}, which runs on the host; use a "
                                    f"CPU tensor or a numpy array")
            name = str(obj.dtype)
            if name == "torch.bfloat16" or name.startswith("torch.float8"):
                import ml_dtypes
                import torch  # present: obj is a torch tensor

                # numpy has no such dtype: the same bytes as ml_dtypes' type of that name
                bits = torch.int16 if name == "torch.bfloat16" else torch.uint8
                view = obj.detach().view(bits).numpy().view(getattr(ml_dtypes, name[6:]))
            else:
                view = obj.detach().numpy()
            return self._host_array(view)
        if hasattr(obj, "__cuda_array_interface__") and not hasattr(obj, "__array_interface__"):
            raise ArgumentError(f"a device array ({type(obj).__name__}) cannot be passed to a "
                                f"kernel for target {self.target_name}, which runs on the host; "
                                f"pass a numpy array")
        if hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__"):
            return self._host_array(np.asarray(obj))
        if hasattr(obj, "__dlpack__"):
            return self._host_array(np.from_dlpack(obj))
        raise ArgumentError(f"cannot pass {type(obj).__name__} to a kernel: expected a numpy "
                            f"array, a scalar (int, float, bool, numpy scalar) or a tensor")

    def _pointer_keys_of(self, obj):
        """The (misaligned, aligned) key pair of an array-like, remembered per numpy or torch
        dtype object (other element types are worked out each time)."""
        dt = getattr(obj, "dtype", None)
        keys = self._ptr_key_pairs.get(dt) if type(dt) in self._ptr_key_dtype_types else None
        if keys is None:
            keys = pointer_keys(element_sig(obj))
            if isinstance(dt, np.dtype) or type(dt).__module__ == "torch":
                self._ptr_key_dtype_types.add(type(dt))
                self._ptr_key_pairs[dt] = keys
        return keys

    def _device_pointer(self, obj):
        keys = self._pointer_keys_of(obj)
        ptr = None
        if self.launcher is not None:
            try:
                ptr = self.launcher.data_pointer(obj)
            except NaiadError:
                if not self.keys_only:
                    raise
        if ptr is None:
            cai = getattr(obj, "__cuda_array_interface__", None)
            if cai is not None:
                ptr = cai["data"][0]
            elif _is_torch_tensor(obj) and getattr(obj, "is_cuda", False):
                ptr = obj.data_ptr()
        if ptr is None:
            if self.keys_only:
                return keys[1], 0
            if isinstance(obj, np.ndarray):
                raise ArgumentError(
                    f"a host numpy array was passed to a kernel for target {self.target_name}; "
                    f"copy it to the device first with naiad.to_device(array)")
            raise ArgumentError(f"the {self.target_name} launcher does not accept "
                                f"{type(obj).__name__} as a pointer argument")
        ptr = int(ptr)
        return keys[not ptr & 15], ptr

    # -- dispatch ---------------------------------------------------------------------------------
    def _dispatch_for(self, value):
        """Classify a value of a type not seen before; remember the handler for its type."""
        t = type(value)
        if value is None:
            raise ArgumentError("None is only accepted for constexpr parameters")
        if isinstance(value, (np.bool_,)):
            fn = self._bool
        elif isinstance(value, np.generic):
            fn = self._np_scalar
        elif isinstance(value, bool):
            fn = self._bool
        elif isinstance(value, int):   # int subclasses (IntEnum...)
            return int_key(int(value)), int(value)
        elif isinstance(value, float):
            return K_FP32, float(value)
        elif t.__name__ == "TensorDescriptor":
            raise ArgumentError("a TensorDescriptor argument is accepted by kernel[grid](...) "
                                "launches only (not by warmup() or naiad.compile); pass the "
                                "tensor and its strides, or launch the kernel")
        elif isinstance(value, (str, bytes, list, tuple, dict)):
            raise ArgumentError(f"a {t.__name__} cannot be a runtime argument: pass a numpy "
                                f"array (or tensor) for a pointer, a number for a scalar, or "
                                f"declare the parameter tl.constexpr")
        elif self.interpreted:
            fn = self._interpreted_pointer
        else:
            fn = self._typed_pointer_binder(t) or self._device_pointer
        self._by_type[t] = fn
        return fn(value)

    def _typed_pointer_binder(self, t):
        """A binder for arrays of type ``t`` whose address the launcher reads with a getter it
        hands out for that type (``launcher.pointer_getter(t)``); None when it offers none.

        The element key pair is looked up by dtype object, filled on first sight of a dtype."""
        if self.keys_only or self.launcher is None:
            return None
        get_ptr = self.launcher.pointer_getter(t)
        if get_ptr is None:
            return None
        keys_of = self._ptr_key_pairs   # dtype object -> (misaligned key, aligned key)
        keys_for = self._pointer_keys_of

        def bind_array(obj):
            ptr = get_ptr(obj)
            keys = keys_of.get(obj.dtype)
            if keys is None:
                keys = keys_for(obj)
            return keys[not ptr & 15], ptr

        return bind_array
