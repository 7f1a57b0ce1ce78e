"""Linear layouts: maps from the bits of hardware indices to tensor coordinates, combined by XOR.

Every layout attribute (``blocked``, ``slice``, ``dot_operand``, ``shared``, a backend's MMA
layouts) reduces to one :class:`LinearLayout`, so the lowering needs only this one form. For a
distributed layout the input dimensions are ``register``, ``lane`` and ``warp``; for a shared
layout it is ``offset``. Input bit ``i`` of dimension ``dim`` has a *basis*: the tensor coordinate
it selects. The coordinate of an input ``(r, l, w)`` is the XOR of the bases of its set bits.

Tensor shapes are powers of two, so a coordinate is a bit string (row-major: the last dimension
holds the low bits) and every question about a layout (which thread owns an element, which bits
are broadcast duplicates, where an element sits) is linear algebra over GF(2) on those strings.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..errors import IRError

DISTRIBUTED_DIMS = ("register", "lane", "warp")


def is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def log2(n: int) -> int:
    if not is_pow2(n):
        raise IRError(f"{n} is not a power of two")
    return n.bit_length() - 1


def _coord_bits(shape: Sequence[int]) -> list[int]:
    return [log2(s) for s in shape]


class Echelon:
    """Incremental Gaussian elimination over GF(2): which vectors are independent of the ones
    added before, and how to write a vector as a combination of them."""

    def __init__(self):
        self.rows: dict[int, tuple[int, int]] = {}  # pivot bit -> (vector, combination mask)
        self.count = 0

    def reduce(self, v: int) -> tuple[int, int]:
        """(residual, combination): ``v == residual ^ XOR(added[i] for i in combination)``;
        the residual is zero exactly when ``v`` is in the span of the added vectors."""
        combo = 0
        for pivot in sorted(self.rows, reverse=True):
            if v >> pivot & 1:
                vec, c = self.rows[pivot]
                v ^= vec
                combo ^= c
        return v, combo

    def add(self, v: int) -> bool:
        """Add ``v`` (the next vector, numbered by call order); True when it was independent."""
        idx = self.count
        self.count += 1
        res, combo = self.reduce(v)
        if res == 0:
            return False
        self.rows[res.bit_length() - 1] = (res, combo | (1 << idx))
        return True


class LinearLayout:
    """``bases[dim][i]`` is the tensor coordinate selected by bit ``i`` of input ``dim``.

    Immutable; equality compares bases and shape. ``out_shape`` is the tensor shape (powers of
    two). Coordinates are tuples of ints, one per tensor dimension.
    """

    __slots__ = ("bases", "out_shape", "_bits", "_flat", "_values")

    def __init__(self, bases: Mapping[str, Iterable[Sequence[int]]], out_shape: Sequence[int]):
        self.out_shape = tuple(int(s) for s in out_shape)
        self._bits = _coord_bits(self.out_shape)
        rank = len(self.out_shape)
        norm: dict[str, tuple[tuple[int, ...], ...]] = {}
        for dim, vecs in bases.items():
            out = []
            for v in vecs:
                v = tuple(int(c) for c in v)
                if len(v) != rank:
                    raise IRError(f"basis {v} of {dim} has rank {len(v)}, the tensor {rank}")
                for c, s in zip(v, self.out_shape):
                    if not 0 <= c < s:
                        raise IRError(f"basis {v} of {dim} is outside the shape {self.out_shape}")
                out.append(v)
            norm[dim] = tuple(out)
        self.bases = norm
        self._flat = {d: tuple(self.flatten(v) for v in vs) for d, vs in norm.items()}
        self._values: dict[str, tuple[int, ...]] = {}

    # -- basic queries ----------------------------------------------------------------------
    @property
    def in_dims(self) -> tuple[str, ...]:
        return tuple(self.bases)

    @property
    def rank(self) -> int:
        return len(self.out_shape)

    def in_bits(self, dim: str) -> int:
        return len(self.bases.get(dim, ()))

    def in_size(self, dim: str) -> int:
        return 1 << self.in_bits(dim)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.out_shape:
            n *= s
        return n

    def flatten(self, coord: Sequence[int]) -> int:
        """Row-major linear index of ``coord`` (bit concatenation: the last dim is lowest)."""
        flat, shift = 0, 0
        for c, b in zip(reversed(tuple(coord)), reversed(self._bits)):
            flat |= int(c) << shift
            shift += b
        return flat

    def unflatten(self, flat: int) -> tuple[int, ...]:
        out = []
        for b in reversed(self._bits):
            out.append(flat & ((1 << b) - 1))
            flat >>= b
        return tuple(reversed(out))

    def flat_bases(self, dim: str) -> tuple[int, ...]:
        return self._flat.get(dim, ())

    def flat_values(self, dim: str) -> tuple[int, ...]:
        """``apply_flat(dim=i)`` for every ``i`` of ``dim`` (its other inputs 0), in order.

        Why: the lowering maps every register of a tile (up to 256 per gather) through its
        layout; each value here is one XOR of an earlier one and a basis, and the table is
        kept with the (immutable) layout."""
        values = self._values.get(dim)
        if values is None:
            table = [0]
            for vec in self.flat_bases(dim):
                table += [v ^ vec for v in table]
            values = self._values[dim] = tuple(table)
        return values

    def apply_flat(self, **indices: int) -> int:
        flat = 0
        for dim, idx in indices.items():
            if idx < 0 or idx >= self.in_size(dim):
                raise IRError(f"{dim} index {idx} is outside 0..{self.in_size(dim) - 1}")
            for bit, vec in enumerate(self.flat_bases(dim)):
                if idx >> bit & 1:
                    flat ^= vec
        return flat

    def apply(self, register: int = 0, lane: int = 0, warp: int = 0, **others: int) -> tuple:
        """Tensor coordinate of the given input indices (XOR of the selected bases)."""
        idx = {}
        for dim, value in (("register", register), ("lane", lane), ("warp", warp)):
            if dim in self.bases:
                idx[dim] = value
            elif value:
                raise IRError(f"layout has no input dimension {dim}")
        idx.update(others)
        return self.unflatten(self.apply_flat(**idx))

    def __call__(self, *args, **kwargs):
        return self.apply(*args, **kwargs)

    def __eq__(self, other) -> bool:
        return (isinstance(other, LinearLayout) and self.out_shape == other.out_shape
                and self.bases == other.bases)

    def __hash__(self) -> int:
        return hash((self.out_shape, tuple(sorted(self.bases.items()))))

    def __repr__(self) -> str:
        parts = ", ".join(f"{d}={list(map(list, v))}" for d, v in self.bases.items())
        return f"LinearLayout({parts}, shape={list(self.out_shape)})"

    # -- linear algebra ---------------------------------------------------------------------
    def _columns(self, dims: Sequence[str] | None = None) -> list[tuple[str, int, int]]:
        """(dim, bit, flat basis) for every input bit, dims in order, low bits first."""
        return [(d, i, v) for d in (dims or self.in_dims) for i, v in enumerate(self.flat_bases(d))]

    def free_masks(self, dims: Sequence[str] | None = None) -> dict[str, int]:
        """Per input dim, the mask of its *free* bits: bits whose basis is a combination of bases
        earlier in (``dims`` order, low bits first). Inputs whose free bits are all zero form a
        canonical preimage of every coordinate: they are the elements' *owners*, so a broadcast
        element is stored (or an atomic applied) exactly once."""
        ech = Echelon()
        masks = {d: 0 for d in (dims or self.in_dims)}
        for d, i, v in self._columns(dims):
            if not ech.add(v):
                masks[d] |= 1 << i
        return masks

    def is_surjective(self) -> bool:
        ech = Echelon()
        rank = sum(ech.add(v) for _, _, v in self._columns())
        return rank == sum(self._bits)

    def is_injective(self) -> bool:
        return all(m == 0 for m in self.free_masks().values())

    def is_bijective(self) -> bool:
        return self.is_surjective() and self.is_injective()

    def solve(self, coord: Sequence[int], dims: Sequence[str] | None = None) -> dict[str, int]:
        """The owner input of ``coord``: the unique preimage whose free bits are zero."""
        cols = self._columns(dims)
        ech = Echelon()
        used = []
        for d, i, v in cols:
            if ech.add(v):
                used.append((d, i))
            else:
                used.append(None)
        res, combo = ech.reduce(self.flatten(coord))
        if res:
            raise IRError(f"coordinate {tuple(coord)} is not reached by {self!r}")
        out = {d: 0 for d in (dims or self.in_dims)}
        for k, slot in enumerate(used):
            if combo >> k & 1:
                d, i = slot
                out[d] |= 1 << i
        return out

    # -- transformations (used by shape ops, whose data stays in registers) ------------------
    def map_coords(self, fn, new_shape: Sequence[int]) -> "LinearLayout":
        """Apply the linear coordinate map ``fn`` to every basis."""
        return LinearLayout({d: [fn(v) for v in vs] for d, vs in self.bases.items()}, new_shape)

    def permute(self, order: Sequence[int]) -> "LinearLayout":
        """Result dim ``i`` is this layout's dim ``order[i]`` (the ``trans`` op)."""
        shape = [self.out_shape[o] for o in order]
        return self.map_coords(lambda v: tuple(v[o] for o in order), shape)

    def reshape(self, new_shape: Sequence[int]) -> "LinearLayout":
        """Same row-major order of elements, new shape (the ``reshape`` op)."""
        other = LinearLayout({}, new_shape)
        if other.numel != self.numel:
            raise IRError(f"cannot reshape {self.out_shape} to {tuple(new_shape)}")
        return self.map_coords(lambda v: other.unflatten(self.flatten(v)), new_shape)

    def drop_out_dim(self, dim: int) -> "LinearLayout":
        shape = self.out_shape[:dim] + self.out_shape[dim + 1:]
        return self.map_coords(lambda v: v[:dim] + v[dim + 1:], shape)

    def insert_out_dim(self, dim: int) -> "LinearLayout":
        """A new size-1 dim at ``dim`` (the ``expand_dims`` op)."""
        shape = self.out_shape[:dim] + (1,) + self.out_shape[dim:]
        return self.map_coords(lambda v: v[:dim] + (0,) + v[dim:], shape)

    def without_zero_bases(self, dim: str) -> "LinearLayout":
        bases = dict(self.bases)
        bases[dim] = [v for v in bases.get(dim, ()) if any(v)]
        return LinearLayout(bases, self.out_shape)


def fit_to_shape(bases: Mapping[str, Sequence[Sequence[int]]], shape: Sequence[int],
                 order: Sequence[int] | None = None) -> LinearLayout:
    """Fit a layout's tile to a tensor shape.

    Components beyond the shape wrap to zero (a smaller tensor is *broadcast*: several inputs
    own one element); dims the tile does not cover get extra register bases (a larger tensor
    *repeats* in registers), added dim by dim in ``order`` (fastest first).
    """
    shape = tuple(int(s) for s in shape)
    rank = len(shape)
    order = list(order) if order is not None else list(range(rank - 1, -1, -1))
    fitted = {d: [tuple(int(c) % s for c, s in zip(v, shape)) for v in vs]
              for d, vs in bases.items()}
    for d in DISTRIBUTED_DIMS[:1]:
        fitted.setdefault(d, [])
    for dim in order:
        covered = 0
        for vs in fitted.values():
            for v in vs:
                covered |= v[dim]
        extent = 1 << covered.bit_length() if covered else 1
        while extent < shape[dim]:
            vec = [0] * rank
            vec[dim] = extent
            fitted["register"].append(tuple(vec))
            extent *= 2
    return LinearLayout(fitted, shape)
