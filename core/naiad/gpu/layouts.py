"""Layout attributes of the GPU IR: which thread (or shared-memory offset) holds which element.

Each layout is a frozen dataclass (hashable: it is part of a tensor type) that prints as
``#mnemonic<key = value, ...>``, parses back through :mod:`naiad.ir.parser`, and reduces to a
:class:`~naiad.gpu.linear_layout.LinearLayout` with :meth:`Layout.to_linear`. The lowering only
ever looks at that linear form, which is why a backend's own layout class (added through the
``naiad_layouts`` hook and :func:`register_layout`) needs nothing else from core.

Core layouts:

``blocked(sizePerThread, threadsPerWarp, warpsPerCTA, order)``
    each thread holds a ``sizePerThread`` block, lanes tile a warp, warps tile the CTA; ``order``
    lists dims fastest first. Larger tensors repeat in registers; smaller ones are broadcast.
``slice(dim, parent)``
    ``parent`` with dimension ``dim`` removed (the layout of a reduction's result).
``dot_operand(opIdx, parent, kWidth)``
    the A (opIdx 0) or B (opIdx 1) operand of a ``dot`` whose result has layout ``parent``; the
    parent decides what it means (for ``blocked``: each thread holds all of K for its rows/cols).
``shared(vec, perPhase, maxPhase, order)``
    swizzled shared memory: element (r, c) sits in row r at column
    ``((c / vec) XOR ((r / perPhase) mod maxPhase)) * vec + c mod vec``.
``linear(register, lane, warp)``
    explicit bases (the result of ``trans``/``reshape``/``join``/``split`` on another layout).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Sequence

from ..errors import IRError
from .linear_layout import LinearLayout, fit_to_shape, is_pow2, log2


class Layout:
    """Base of every layout attribute.

    Subclasses (core's and backends') are frozen dataclasses: equality and hashing come from
    the fields, and printing/parsing from their ``metadata={"name": ...}`` (see ``_param``).
    They set ``mnemonic`` and implement :meth:`to_linear`; a layout that can hold a dot's
    result also implements :meth:`dot_operand_linear`.
    """

    mnemonic: ClassVar[str] = ""
    #: distributed layouts map (register, lane, warp); shared ones map (offset)
    distributed: ClassVar[bool] = True

    # -- the common form --------------------------------------------------------------------
    def to_linear(self, shape: Sequence[int]) -> LinearLayout:
        raise NotImplementedError(f"{type(self).__name__} must implement to_linear")

    def dot_operand_linear(self, op_idx: int, shape: Sequence[int], k_width: int) -> LinearLayout:
        """Linear form of ``dot_operand(op_idx, self, k_width)``; layouts that can be a dot's
        result layout implement it."""
        raise IRError(f"{self} cannot be the parent of a dot operand layout")

    # -- text -------------------------------------------------------------------------------
    def params(self) -> list[tuple[str, Any]]:
        """(printed name, value) pairs, in print order."""
        return [(f.metadata.get("name", f.name), getattr(self, f.name))
                for f in dataclasses.fields(self)]  # type: ignore[arg-type]

    def __str__(self) -> str:
        from ..ir.printer import format_attr

        body = ", ".join(f"{k} = {format_attr(v)}" for k, v in self.params())
        return f"#{self.mnemonic}<{body}>"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> "Layout":
        """Build from printed names -> values (lists arrive as tuples)."""
        names = {f.metadata.get("name", f.name): f for f in dataclasses.fields(cls)}  # type: ignore
        unknown = set(params) - set(names)
        if unknown:
            raise IRError(f"#{cls.mnemonic} has no parameter {', '.join(sorted(unknown))}; "
                          f"it takes {', '.join(names)}")
        kwargs = {}
        for pname, f in names.items():
            if pname in params:
                kwargs[f.name] = params[pname]
            elif f.default is dataclasses.MISSING:
                raise IRError(f"#{cls.mnemonic} needs parameter {pname}")
        return cls(**kwargs)

    @classmethod
    def parse(cls, text: str) -> "Layout":
        return cls.from_params(parse_params(text))


def _param(name: str, **kw):
    return dataclasses.field(metadata={"name": name}, **kw)


def _int_tuple(value, what: str, rank: int | None = None) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise IRError(f"{what} must be a list of integers, got {value!r}")
    if rank is not None and len(value) != rank:
        raise IRError(f"{what} must have {rank} entries, got {list(value)}")
    return tuple(int(v) for v in value)


def _pow2_tuple(value, what: str, rank: int | None = None) -> tuple[int, ...]:
    out = _int_tuple(value, what, rank)
    if not all(is_pow2(v) for v in out):
        raise IRError(f"{what} entries must be powers of two, got {list(out)}")
    return out


def _check_shape(shape: Sequence[int], rank: int, who: str) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != rank:
        raise IRError(f"{who} has rank {rank} but the tensor shape {list(shape)} has rank "
                      f"{len(shape)}")
    if not all(is_pow2(s) for s in shape):
        raise IRError(f"tensor shape {list(shape)} must have power-of-two dimensions")
    return shape


def _unit(rank: int, dim: int, value: int) -> tuple[int, ...]:
    v = [0] * rank
    v[dim] = value
    return tuple(v)


# -- blocked ------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=True)
class BlockedLayout(Layout):
    mnemonic: ClassVar[str] = "blocked"
    size_per_thread: tuple[int, ...] = _param("sizePerThread")
    threads_per_warp: tuple[int, ...] = _param("threadsPerWarp")
    warps_per_cta: tuple[int, ...] = _param("warpsPerCTA")
    order: tuple[int, ...] = _param("order")

    def __post_init__(self):
        rank = len(_int_tuple(self.order, "order"))
        set_ = object.__setattr__
        set_(self, "size_per_thread", _pow2_tuple(self.size_per_thread, "sizePerThread", rank))
        set_(self, "threads_per_warp", _pow2_tuple(self.threads_per_warp, "threadsPerWarp", rank))
        set_(self, "warps_per_cta", _pow2_tuple(self.warps_per_cta, "warpsPerCTA", rank))
        set_(self, "order", _int_tuple(self.order, "order"))
        if sorted(self.order) != list(range(rank)):
            raise IRError(f"order {list(self.order)} is not a permutation of 0..{rank - 1}")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def lanes(self) -> int:
        return _prod(self.threads_per_warp)

    @property
    def warps(self) -> int:
        return _prod(self.warps_per_cta)

    def tile_bases(self) -> dict[str, list[tuple[int, ...]]]:
        """Bases of one CTA tile: registers, then lanes, then warps, each along ``order``."""
        rank = self.rank
        bases: dict[str, list[tuple[int, ...]]] = {"register": [], "lane": [], "warp": []}
        covered = [1] * rank
        for dim_name, per in (("register", self.size_per_thread), ("lane", self.threads_per_warp),
                              ("warp", self.warps_per_cta)):
            for d in self.order:
                for i in range(log2(per[d])):
                    bases[dim_name].append(_unit(rank, d, covered[d] << i))
                covered[d] *= per[d]
        return bases

    def to_linear(self, shape):
        shape = _check_shape(shape, self.rank, str(self))
        return fit_to_shape(self.tile_bases(), shape, self.order)

    def dot_operand_linear(self, op_idx, shape, k_width):
        """FMA operands: a thread holds the whole K extent of the rows (A) or columns (B) whose
        results it computes; lanes/warps that split the other dimension hold copies."""
        shape = _check_shape(shape, self.rank, f"dot operand of {self}")
        if op_idx == 0:
            k_dim, parent_shape = self.rank - 1, shape[:-1] + (1,)
        elif op_idx == 1:
            k_dim, parent_shape = self.rank - 2, shape[:-2] + (1, shape[-1])
        else:
            raise IRError(f"dot operand index must be 0 or 1, got {op_idx}")
        parent = self.to_linear(parent_shape).without_zero_bases("register")
        k_bases = [_unit(self.rank, k_dim, 1 << i) for i in range(log2(shape[k_dim]))]
        return LinearLayout({"register": k_bases + list(parent.bases["register"]),
                             "lane": parent.bases["lane"], "warp": parent.bases["warp"]}, shape)

    def permuted(self, order: Sequence[int]) -> "BlockedLayout":
        """The layout of ``trans(x, order)`` when x has this layout (no data moves)."""
        inv = [list(order).index(d) for d in range(self.rank)]
        return BlockedLayout(tuple(self.size_per_thread[o] for o in order),
                             tuple(self.threads_per_warp[o] for o in order),
                             tuple(self.warps_per_cta[o] for o in order),
                             tuple(inv[o] for o in self.order))


# -- slice --------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=True)
class SliceLayout(Layout):
    mnemonic: ClassVar[str] = "slice"
    dim: int = _param("dim")
    parent: Layout = _param("parent")

    def __post_init__(self):
        if not isinstance(self.dim, int) or isinstance(self.dim, bool) or self.dim < 0:
            raise IRError(f"slice dim must be a non-negative integer, got {self.dim!r}")
        if not isinstance(self.parent, Layout) or not self.parent.distributed:
            raise IRError(f"slice parent must be a distributed layout, got {self.parent!r}")

    def to_linear(self, shape):
        shape = tuple(int(s) for s in shape)
        if self.dim > len(shape):
            raise IRError(f"{self} cannot hold a rank-{len(shape)} tensor")
        parent_shape = shape[:self.dim] + (1,) + shape[self.dim:]
        parent = self.parent.to_linear(parent_shape)
        return parent.drop_out_dim(self.dim).without_zero_bases("register")


# -- dot operand ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=True)
class DotOperandLayout(Layout):
    mnemonic: ClassVar[str] = "dot_operand"
    op_idx: int = _param("opIdx")
    parent: Layout = _param("parent")
    k_width: int = _param("kWidth", default=0)

    def __post_init__(self):
        if self.op_idx not in (0, 1) or isinstance(self.op_idx, bool):
            raise IRError(f"dot_operand opIdx must be 0 or 1, got {self.op_idx!r}")
        if not isinstance(self.parent, Layout):
            raise IRError(f"dot_operand parent must be a layout, got {self.parent!r}")
        if not isinstance(self.k_width, int) or self.k_width < 0:
            raise IRError(f"dot_operand kWidth must be a non-negative integer, got "
                          f"{self.k_width!r}")

    def to_linear(self, shape):
        return self.parent.dot_operand_linear(self.op_idx, tuple(int(s) for s in shape),
                                              self.k_width)


# -- shared ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=True)
class SharedLayout(Layout):
    mnemonic: ClassVar[str] = "shared"
    distributed: ClassVar[bool] = False
    vec: int = _param("vec")
    per_phase: int = _param("perPhase")
    max_phase: int = _param("maxPhase")
    order: tuple[int, ...] = _param("order")

    def __post_init__(self):
        for name, v in (("vec", self.vec), ("perPhase", self.per_phase),
                        ("maxPhase", self.max_phase)):
            if not is_pow2(v):
                raise IRError(f"shared {name} must be a power of two, got {v!r}")
        order = _int_tuple(self.order, "order")
        if sorted(order) != list(range(len(order))):
            raise IRError(f"order {list(order)} is not a permutation of 0..{len(order) - 1}")
        object.__setattr__(self, "order", order)

    def offset_of(self, coord: Sequence[int], shape: Sequence[int]) -> int:
        """Element offset of ``coord`` (the defining formula; linear over GF(2))."""
        order = self.order
        col_dim = order[0]
        c = coord[col_dim]
        cols = shape[col_dim]
        if len(order) > 1:
            r = coord[order[1]]
            groups = max(cols // self.vec, 1)
            phase = (r // self.per_phase) % self.max_phase
            col = (((c // self.vec) ^ phase) % groups) * self.vec + c % self.vec
        else:
            r, col = 0, c
        offset = col
        stride = cols
        for d in order[1:]:
            offset += coord[d] * stride
            stride *= shape[d]
        return offset

    def to_linear(self, shape):
        shape = _check_shape(shape, len(self.order), str(self))
        probe = LinearLayout({}, shape)
        nbits = log2(probe.numel)
        # the defining formula on each coordinate bit, then invert that (bijective) matrix
        forward = [(self.offset_of(probe.unflatten(1 << b), shape),) for b in range(nbits)]
        fwd = LinearLayout({"coord": forward}, (probe.numel,))
        if not fwd.is_bijective():
            raise IRError(f"{self} is not a bijection on shape {list(shape)}")
        bases = [probe.unflatten(fwd.solve((1 << j,))["coord"]) for j in range(nbits)]
        return LinearLayout({"offset": bases}, shape)


# -- explicit linear ------------------------------------------------------------------------------

def _basis_list(value, what: str) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, (list, tuple)):
        raise IRError(f"{what} must be a list of coordinates, got {value!r}")
    return tuple(_int_tuple(v, f"a {what} basis") for v in value)


@dataclass(frozen=True, eq=True)
class LinearEncoding(Layout):
    mnemonic: ClassVar[str] = "linear"
    register: tuple[tuple[int, ...], ...] = _param("register")
    lane: tuple[tuple[int, ...], ...] = _param("lane")
    warp: tuple[tuple[int, ...], ...] = _param("warp")

    def __post_init__(self):
        for name in ("register", "lane", "warp"):
            object.__setattr__(self, name, _basis_list(getattr(self, name), name))

    @classmethod
    def from_linear(cls, ll: LinearLayout) -> "LinearEncoding":
        return cls(ll.bases.get("register", ()), ll.bases.get("lane", ()),
                   ll.bases.get("warp", ()))

    def to_linear(self, shape):
        shape = tuple(int(s) for s in shape)
        for v in self.register + self.lane + self.warp:
            if len(v) != len(shape):
                raise IRError(f"{self} has rank {len(v)}, the tensor {len(shape)}")
        return fit_to_shape({"register": self.register, "lane": self.lane, "warp": self.warp},
                            shape)

    def dot_operand_linear(self, op_idx, shape, k_width):
        raise IRError("a #linear layout cannot be a dot result layout; convert to #blocked")


# -- registry and parsing ---------------------------------------------------------------------

_LAYOUTS: dict[str, type[Layout]] = {}


def register_layout(cls: type[Layout]) -> type[Layout]:
    """Make a layout class known by its ``mnemonic`` (printing, parsing, lowering). Backends'
    classes arrive through the ``naiad_layouts`` hook; registering again replaces."""
    if not (isinstance(cls, type) and issubclass(cls, Layout)):
        raise TypeError(f"layouts must subclass naiad.gpu.layouts.Layout, got {cls!r}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", cls.mnemonic or ""):
        raise TypeError(f"layout class {cls.__name__} needs an identifier mnemonic")
    _LAYOUTS[cls.mnemonic] = cls
    from ..ir.parser import register_attribute

    register_attribute(cls.mnemonic, cls.parse)
    return cls


def parse_params(text: str) -> dict[str, Any]:
    """``key = value, ...`` (values in the IR's attribute syntax) -> dict."""
    from ..ir.parser import parse_attribute

    out: dict[str, Any] = {}
    for item in _split_top_level(text):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise IRError(f"expected 'name = value', got {item.strip()!r}")
        if key in out:
            raise IRError(f"parameter {key} given twice")
        out[key] = parse_attribute(value.strip())
    return out


def _split_top_level(text: str) -> list[str]:
    parts, depth, start, in_str = [], 0, 0, False
    for i, ch in enumerate(text):
        if in_str:
            if ch == '"' and text[i - 1] != "\\":
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "<[(":
            depth += 1
        elif ch in ">])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_layout(text: str) -> Layout:
    """Parse ``#mnemonic<...>`` text into a layout object."""
    from ..ir.parser import parse_attribute

    value = parse_attribute(text.strip())
    if not isinstance(value, Layout):
        raise IRError(f"{text!r} is not a layout attribute")
    return value


for _cls in (BlockedLayout, SliceLayout, DotOperandLayout, SharedLayout, LinearEncoding):
    register_layout(_cls)


# -- linear forms, cached ---------------------------------------------------------------------

@lru_cache(maxsize=4096)
def linear_of(layout: Layout, shape: tuple[int, ...]) -> LinearLayout:
    """``layout.to_linear(shape)``, cached (layouts and shapes are hashable)."""
    return layout.to_linear(tuple(shape))


# -- construction helpers ---------------------------------------------------------------------

def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def blocked_for(shape: Sequence[int], num_warps: int, warp_size: int,
                order: Sequence[int] | None = None,
                size_per_thread: Sequence[int] | None = None) -> BlockedLayout:
    """A blocked layout spreading ``shape`` over ``num_warps`` warps of ``warp_size`` lanes:
    lanes first fill the fastest dims (``order``), warps next; lanes or warps left over when the
    tensor is small are broadcast along the fastest dim."""
    shape = [int(s) for s in shape]
    rank = len(shape)
    order = list(order) if order is not None else list(range(rank - 1, -1, -1))
    spt = [int(s) for s in size_per_thread] if size_per_thread is not None else [1] * rank
    spt = [min(s, d) for s, d in zip(spt, shape)]
    remaining = [max(1, d // s) for d, s in zip(shape, spt)]
    tpw, lanes = [1] * rank, warp_size
    for d in order:
        t = min(lanes, remaining[d])
        tpw[d], lanes, remaining[d] = t, lanes // t, remaining[d] // t
    tpw[order[0]] *= lanes
    wpc, warps = [1] * rank, num_warps
    for d in order:
        w = min(warps, max(remaining[d], 1))
        wpc[d], warps, remaining[d] = w, warps // w, max(remaining[d] // w, 1)
    wpc[order[0]] *= warps
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))

