"""Tensor descriptors: ``tl.make_tensor_descriptor`` and ``desc.load/store/atomic_*``.

A descriptor is a compile-time object holding run-time values: the base pointer, the global
shape (i32 scalars) and strides (i64 scalars), and the constexpr block shape. Every access is
lowered here, in the language, to ordinary masked pointer loads/stores/atomics on the block
``offsets + arange(block)``, with Triton's out-of-bounds semantics: a load gives zero (or NaN,
``padding_option="nan"``) outside ``[0, shape)``, a store or atomic outside it is dropped. So
descriptors work on every backend.

A host ``TensorDescriptor`` argument whose launcher built a hardware tensor map for it (NVIDIA
TMA, see ``naiad.runtime.descriptor_args``) also gets, beside each load and store, a
``descriptor_access`` op holding the map and the block's offsets: the backend may move the
block as a unit instead (and drops the op otherwise, saying why in a performance remark).
A descriptor made in the kernel gets its map from a ``descriptor_make`` op (the base, shape
and strides as operands): its accesses are annotated the same way (once helpers are inlined,
the map operand of such an access is that op's result). A backend that builds tensor maps on the device (NVIDIA sm_90: ``naiad_nvidia.passes.
device_tensor_maps``) lowers the op; every other drops both ops, keeping the masked accesses.
"""
from __future__ import annotations

import itertools

from ..errors import CompilationError
from ..ir import types as irt
from .core import as_int, builtin, tensor, unwrap
from .dtypes import dtype_of_ir

_ATOMIC_DTYPES = {
    "add": ("i32", "u32", "u64", "f32", "f16", "bf16"),
    "min": ("i32", "u32", "i64", "u64"), "max": ("i32", "u32", "i64", "u64"),
    "and": ("i32", "u32", "i64", "u64"), "or": ("i32", "u32", "i64", "u64"),
    "xor": ("i32", "u32", "i64", "u64"),
}
#: ids linking a ``descriptor_access`` op to its load/store (unique within a process)
_ACCESS_IDS = itertools.count(1)


class tensor_descriptor:
    """What ``tl.make_tensor_descriptor`` returns (and what a ``TensorDescriptor`` kernel
    argument becomes): a view of a strided global tensor, accessed one block at a time."""

    def __init__(self, base: tensor, shape: list, strides: list, block_shape: tuple,
                 padding: str = "zero", tensor_map: tensor | None = None,
                 portable_reason: str | None = None, block_gcd: tuple | None = None):
        self.base = base
        self.shape = shape
        self.strides = strides
        self.block_shape = list(block_shape)
        self.padding = padding
        #: the hardware tensor map of a host descriptor (a pointer), or None
        self.tensor_map = tensor_map
        #: why a host descriptor has no tensor map on a backend that offers them
        self.portable_reason = portable_reason
        #: a host map's launch fact: per dimension, gcd(extent, block size)
        self.block_gcd = block_gcd

    @property
    def dtype(self):
        return dtype_of_ir(self.base.type.scalar.pointee)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.dtype}{self.block_shape}>"

    # -- the block and its mask ---------------------------------------------------------------
    def _block(self, s, offsets, what: str):
        offsets = list(unwrap(offsets)) if isinstance(unwrap(offsets), (list, tuple)) \
            else [unwrap(offsets)]
        rank = len(self.block_shape)
        if len(offsets) != rank:
            raise CompilationError(f"{what}: expected {rank} offsets, but got {len(offsets)}")
        from .creation import arange

        shape = tuple(self.block_shape)
        address, mask = None, None
        for d, (off, size) in enumerate(zip(offsets, shape)):
            off = s.cast(s.to_tensor(unwrap(off)), irt.i64)
            if off.is_block():
                raise CompilationError(f"{what}: offset {d} must be a scalar, got {off.type}")
            idx = s.cast(arange(0, size, _semantic=s), irt.i64)
            for axis in range(rank):
                if axis < d:
                    idx = s.expand_dims(idx, 0)
                elif axis > d:
                    idx = s.expand_dims(idx, len(idx.shape))
            idx = s.binary("add", idx, off)
            inside = s.logical("and", s.compare("ge", idx, 0),
                               s.compare("lt", idx, s.cast(self.shape[d], irt.i64)))
            term = s.binary("mul", idx, self.strides[d])
            address = term if address is None else s.binary("add", address, term)
            mask = inside if mask is None else s.logical("and", mask, inside)
        address, mask = s.broadcast_to(address, shape), s.broadcast_to(mask, shape)
        return s.binary("add", self.base, address), mask

    def _mark_access(self, s, offsets, memory_op, kind: str) -> None:
        """Link ``memory_op`` (the portable lowering) to a ``descriptor_access`` op that holds
        the tensor map and the offsets, for a backend that moves the block as a unit."""
        offsets = list(unwrap(offsets)) if isinstance(unwrap(offsets), (list, tuple)) \
            else [unwrap(offsets)]
        values = [s.cast(s.to_tensor(unwrap(o)), irt.i32).handle for o in offsets]
        access = next(_ACCESS_IDS)
        attrs = {"access": access, "kind": kind, "block": list(self.block_shape)}
        if self.tensor_map is not None:
            values.insert(0, self.tensor_map.handle)
            attrs["map"] = True
            if self.block_gcd is not None:
                attrs["block_gcd"] = [int(g) for g in self.block_gcd]
        else:
            attrs["portable"] = self.portable_reason
        s.builder.create("descriptor_access", values, [], attrs)
        memory_op.attrs["descriptor_access"] = access

    def _value(self, s, value, what: str) -> tensor:
        v = s.to_tensor(unwrap(value))
        if list(v.shape) != self.block_shape:
            raise CompilationError(f"{what}: the value's shape {list(v.shape)} must match the "
                                   f"descriptor's block shape {self.block_shape}")
        return s.cast(v, self.base.type.scalar.pointee)

    @builtin
    def load(self, offsets, cache_modifier="", eviction_policy="", _semantic=None):
        """The block at ``offsets``; elements outside the tensor read as zero (NaN with
        ``padding_option="nan"``)."""
        from .memory import load

        s = _semantic
        ptr, mask = self._block(s, offsets, "desc.load")
        fill = float("nan") if self.padding == "nan" else 0
        value = load(ptr, mask=mask, other=fill, cache_modifier=cache_modifier,
                     eviction_policy=eviction_policy, _semantic=s)
        self._mark_access(s, offsets, value.handle.defining_op, "load")
        return value

    @builtin
    def store(self, offsets, value, store_reduce="", _semantic=None):
        """Store ``value`` (the block's shape; converted to the element type) at ``offsets``;
        elements outside the tensor are dropped."""
        from .memory import store

        s = _semantic
        if unwrap(store_reduce):
            return self._atomic(s, str(unwrap(store_reduce)), offsets, value)
        ptr, mask = self._block(s, offsets, "desc.store")
        store(ptr, self._value(s, value, "desc.store"), mask=mask, _semantic=s)
        self._mark_access(s, offsets, _last_op(s.builder), "store")
        return None

    def _atomic(self, s, kind: str, offsets, value):
        from . import memory

        what = f"desc.atomic_{kind}"
        elem = self.base.type.scalar.pointee
        allowed = _ATOMIC_DTYPES.get(kind)
        if allowed is None:
            raise CompilationError(f"{what}: unknown reduction {kind!r}")
        if elem.name not in allowed:
            raise CompilationError(f"{what}: unsupported dtype {dtype_of_ir(elem)} (allowed: "
                                   f"{', '.join(allowed)})")
        ptr, mask = self._block(s, offsets, what)
        getattr(memory, f"atomic_{kind}")(ptr, self._value(s, value, what), mask=mask,
                                          sem="relaxed", _semantic=s)
        return None

    @builtin
    def atomic_add(self, offsets, value, _semantic=None):
        return self._atomic(_semantic, "add", offsets, value)

    @builtin
    def atomic_min(self, offsets, value, _semantic=None):
        return self._atomic(_semantic, "min", offsets, value)

    @builtin
    def atomic_max(self, offsets, value, _semantic=None):
        return self._atomic(_semantic, "max", offsets, value)

    @builtin
    def atomic_and(self, offsets, value, _semantic=None):
        return self._atomic(_semantic, "and", offsets, value)

    @builtin
    def atomic_or(self, offsets, value, _semantic=None):
        return self._atomic(_semantic, "or", offsets, value)

    @builtin
    def atomic_xor(self, offsets, value, _semantic=None):
        return self._atomic(_semantic, "xor", offsets, value)


def _last_op(builder):
    """The op the builder inserted last."""
    ops = builder.block.ops
    return ops[-1] if builder.before is None else ops[ops.index(builder.before) - 1]


def check_block_shape(elem: irt.Type, block_shape) -> tuple:
    """Triton's static rules for a descriptor's block shape (messages as Triton's)."""
    shape = tuple(as_int(b, "a block_shape entry") for b in block_shape)
    if not 1 <= len(shape) <= 5:
        raise CompilationError(f"Expected 1 <= ndim <= 5 but got {len(shape)} dimensions")
    elem_size = max(elem.bitwidth // 8, 1)
    if shape[-1] * elem_size < 16:
        raise CompilationError(
            "Descriptor block shape must have at least 16 bytes in the last dimension, but got "
            f"{shape[-1]} * {elem_size} = {shape[-1] * elem_size} bytes")
    for b in shape:
        if b <= 0 or b & (b - 1):
            raise CompilationError(f"block_shape entries must be powers of two, got {list(shape)}")
    return shape


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero",
                           _semantic=None, _tensor_map=None, _portable_reason=None,
                           _block_gcd=None):
    """A descriptor of the tensor at ``base`` with ``shape`` and ``strides`` (elements; the last
    stride must be 1), accessed in blocks of ``block_shape`` (constexprs)."""
    s = _semantic
    base = s.to_tensor(unwrap(base))
    if not base.type.scalar.is_pointer or base.is_block():
        raise CompilationError(f"base must be a pointer type, got {base.type}")
    shape, strides = list(unwrap(shape)), list(unwrap(strides))
    block_shape = list(unwrap(block_shape))
    ndim = len(shape)
    if len(strides) != ndim:
        raise CompilationError(f"Expected {ndim} strides but got {len(strides)}")
    if len(block_shape) != ndim:
        raise CompilationError(f"Expected block_shape to have {ndim} dimensions but got "
                               f"{len(block_shape)}")
    elem = base.type.scalar.pointee
    block = check_block_shape(elem, block_shape)
    last = unwrap(strides[-1])
    if not isinstance(last, tensor) and last != 1:
        raise CompilationError(f"Tensor descriptor last dim must be 1 but got {last}")
    padding = unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise CompilationError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and not elem.is_float:
        raise CompilationError("Padding option `nan` is not supported for integer blocks")
    shape_vals = [s.cast(s.to_tensor(unwrap(x)), irt.i32) for x in shape]
    stride_vals = [s.cast(s.to_tensor(unwrap(x)), irt.i64) for x in strides]
    for what, vals in (("shape", shape_vals), ("strides", stride_vals)):
        if any(v.is_block() for v in vals):
            raise CompilationError(f"make_tensor_descriptor: {what} entries must be scalars")
    if _tensor_map is None and _portable_reason is None:
        _tensor_map = _device_map(s, base, shape_vals, stride_vals, block, padding)
    return tensor_descriptor(base, shape_vals, stride_vals, block, padding, _tensor_map,
                             _portable_reason, _block_gcd)


#: the IR type of a tensor map's address (128 opaque bytes in global memory)
MAP_TYPE = irt.PointerType(irt.u8)


def _device_map(s, base, shape_vals, stride_vals, block, padding) -> tensor:
    """The ``descriptor_make`` op of a descriptor made in the kernel: its tensor map, which a
    backend with device-built maps (NVIDIA sm_90) writes in global scratch memory; elsewhere
    the op and the accesses through it are dropped and the masked accesses do the work."""
    operands = [base.handle] + [v.handle for v in shape_vals] + [v.handle for v in stride_vals]
    op = s.builder.create("descriptor_make", operands, [MAP_TYPE],
                          {"block": list(block), "padding": padding})
    return tensor(op.results[0])


# -- TensorDescriptor kernel arguments (naiad.runtime.descriptor_args spreads each into fields) --
def expanded_names(name: str, rank: int) -> tuple[list[str], list[str]]:
    """The parameter names a descriptor argument ``name`` of ``rank`` is spread into."""
    return ([f"{name}__shape_{i}" for i in range(rank)],
            [f"{name}__stride_{i}" for i in range(rank)])


def bind_descriptors(fn, scope, semantic) -> None:
    """Frontend side: bind each spread parameter's name to its descriptor (with its tensor
    map ``p__tensor_map`` and its ``p__block_gcd`` fact when the launcher built one;
    ``p__portable`` says why it did not)."""
    maps = getattr(fn, "tensor_maps", {})
    for name, rank in getattr(fn, "descriptor_params", {}).items():
        shapes, strides = expanded_names(name, rank)
        tensor_map = reason = block_gcd = None
        if name in maps:
            if maps[name]:
                tensor_map = scope.lookup(f"{name}__tensor_map")
                block_gcd = tuple(unwrap(scope.lookup(f"{name}__block_gcd")))
            else:
                reason = str(scope.lookup(f"{name}__portable"))
        desc = make_tensor_descriptor(
            scope.lookup(f"{name}__base"), [scope.lookup(n) for n in shapes],
            [scope.lookup(n) for n in strides], list(scope.lookup(f"{name}__block")),
            padding_option=scope.lookup(f"{name}__padding"), _semantic=semantic,
            _tensor_map=tensor_map, _portable_reason=reason, _block_gcd=block_gcd)
        scope.bind(name, desc)
