"""The instruction table a backend supplies: one :class:`MatrixInstruction` per matrix op.

An entry states the instruction's shape (``m x n x k``), operand and accumulator element types,
the ``input_precision`` values it may serve for f32 operands, the wave size it runs on, and its
*lane maps*: linear layouts from (register, lane) of one wave to coordinates of the A (m x k),
B (k x n) and C (m x n) tiles of one issue, in the hardware's element order (register bit j is
bit j of the element index the instruction reads). ``k_width`` is the number of consecutive K
elements one lane holds per operand fragment (the operand layouts' ``kWidth``: the
instruction's own K elements per lane, times ``kpack``). ``make_layout(warps_per_cta)`` builds
the backend's :class:`~naiad.gpu.matrix.layout.MatrixLayout` for a warp split.

An entry may instead name a backend op (``op``, with ``op_attrs``) that the backend's own passes
lower -- NVIDIA's ``nvidia.mma`` -- and a layout of its own; ``k_width`` is then whatever its
``#dot_operand`` layouts take (no core kWidth rules apply). ``warps(m, n, num_warps)`` states
the backend's warp rule when the core's :func:`~naiad.gpu.matrix.accelerate.choose_warps` is
not it (None: this entry does not fit the dot), and ``from_widened`` lets an entry multiply the
narrower tiles a dot's operands were widened from by ``cast`` (float8 on wgmma: the frontend
widens float8 operands to f16).

Entries are registered by name (:func:`register_matrix_instructions`) so the GPU IR's
``matrix_mma`` op can name its instruction as text and still be lowered after a round trip.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from ...errors import IRError
from ..linear_layout import LinearLayout


@dataclass(frozen=True)
class MatrixInstruction:
    name: str
    shape: tuple[int, int, int]
    a_type: str
    b_type: str
    acc_type: str
    wave_size: int
    a_map: LinearLayout = field(repr=False)
    b_map: LinearLayout = field(repr=False)
    c_map: LinearLayout = field(repr=False)
    k_width: int = 1
    #: for f32 operands: the ``input_precision`` values this instruction computes faithfully
    precisions: tuple[str, ...] = ()
    #: operands may be read straight from shared memory (wgmma); register operands otherwise
    operands_from_shared: bool = False
    make_layout: Callable = field(default=None, repr=False, compare=False)
    #: the GPU-IR op a dot on this entry becomes, and that op's attributes (pairs); the core's
    #: ``matrix_mma`` (attributes ``instruction`` and ``k_width``) unless a backend lowers its own
    op: str = "matrix_mma"
    op_attrs: tuple = ()
    #: ``(m, n, num_warps) -> (wm, wn) | None``: the backend's warp split for this entry
    warps: Callable | None = field(default=None, repr=False, compare=False)
    #: the operand element types (e.g. ``("f16",)``) of a dot whose ``cast`` operands this entry
    #: may take unwidened: it then multiplies the narrower tiles they were cast from
    from_widened: tuple = ()
    #: attributes of the dot (e.g. ``max_num_imprecise_acc``) copied onto the op when set
    carried_attrs: tuple = ()

    @property
    def core_op(self) -> bool:
        """Lowered by the core's ``matrix_mma`` (so its layouts follow the core's rules)."""
        return self.op == "matrix_mma"

    def __post_init__(self):
        m, n, k = self.shape
        for what, ll, want in (("A", self.a_map, (m, k)), ("B", self.b_map, (k, n)),
                               ("C", self.c_map, (m, n))):
            if ll.out_shape != want:
                raise IRError(f"{self.name}: {what} lane map covers {ll.out_shape}, not {want}")
            if ll.in_size("lane") != self.wave_size:
                raise IRError(f"{self.name}: {what} lane map has {ll.in_size('lane')} lanes, "
                              f"the wave {self.wave_size}")
            if not ll.is_surjective():
                raise IRError(f"{self.name}: {what} lane map does not cover its tile")
        if self.core_op and self.k_width % self.k_base:
            raise IRError(f"{self.name}: kWidth {self.k_width} is not a multiple of the "
                          f"{self.k_base} K elements a lane holds")

    @property
    def k_base(self) -> int:
        """K elements of A one lane holds for one issue."""
        return self.a_map.in_size("register")

    @property
    def k_pack(self) -> int:
        """Issues one operand fragment feeds (1 for an entry lowered by a backend op)."""
        return self.k_width // self.k_base if self.core_op else 1

    @property
    def k_step(self) -> int:
        """K covered by the ``k_pack`` consecutive issues one operand fragment feeds."""
        return self.shape[2] * self.k_pack

    def transposed(self) -> "MatrixInstruction":
        """The entry as a transposed layout uses it (see ``MatrixLayout.transposed``): A's map
        is the hardware B map transposed, B's the A map transposed, C's the C map transposed."""
        import dataclasses

        m, n, k = self.shape
        return dataclasses.replace(self, shape=(n, m, k), a_type=self.b_type, b_type=self.a_type,
                                   a_map=self.b_map.permute((1, 0)),
                                   b_map=self.a_map.permute((1, 0)),
                                   c_map=self.c_map.permute((1, 0)))

    def serves(self, a: str, b: str, acc: str, precision: str | None) -> bool:
        if (a, b, acc) != (self.a_type, self.b_type, self.acc_type):
            return False
        if a == "f32":
            return (precision or "tf32") in self.precisions
        return True


_CATALOG: dict[str, MatrixInstruction] = {}


def register_matrix_instructions(entries: Iterable[MatrixInstruction]) -> None:
    """Make entries known by name (the ``instruction`` attribute of ``matrix_mma``)."""
    for e in entries:
        _CATALOG[e.name] = e


def matrix_instruction(name: str) -> MatrixInstruction:
    try:
        return _CATALOG[name]
    except KeyError:
        raise IRError(f"unknown matrix instruction {name!r}: the backend that owns it has not "
                      f"registered its instruction table") from None
