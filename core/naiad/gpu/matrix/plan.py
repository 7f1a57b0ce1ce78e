"""Which registers each matrix-instruction issue reads and writes.

The operand and accumulator layouts (:mod:`.layout`) put an issue's fragment in their lowest
register bits, so register group ``g`` (registers ``g * size .. g * size + size - 1``) is one
fragment whose lane-0, warp-0 coordinate is the fragment's *origin*. An issue multiplies the A
fragment at origin (m0, k0) by the B fragment at (k0, n0) into the C fragment at (m0, n0).

Nothing here trusts that the layouts were built from the instruction: :func:`check_layouts`
compares them with the table's lane maps (same M/N coordinates per lane and register, K
coordinates spread the same way in A and B), so a layout that disagrees with its instruction
is an internal error at compile time, never a wrong product.
"""
from __future__ import annotations

from ...errors import IRError
from ..linear_layout import LinearLayout, log2


def _k_relabel(hw: LinearLayout, ll: LinearLayout, kdim: int, what: str) -> dict[int, int]:
    """Hardware K coordinate bit -> tensor K coordinate of ``ll`` (the operand layout);
    checks that the other coordinate matches the hardware map exactly."""
    mapping: dict[int, int] = {}
    for dim in ("register", "lane"):
        for i, hv in enumerate(hw.bases.get(dim, ())):
            lv = ll.bases[dim][i] if i < ll.in_bits(dim) else None
            if lv is None or lv[1 - kdim] != hv[1 - kdim]:
                raise IRError(f"internal: {what} layout {dim} bit {i} holds {lv}, the "
                              f"instruction's lane map {hv}")
            if bool(lv[kdim]) != bool(hv[kdim]):
                raise IRError(f"internal: {what} layout {dim} bit {i} K coordinate {lv[kdim]} "
                              f"does not follow the instruction's {hv[kdim]}")
            if hv[kdim]:
                mapping[hv[kdim]] = lv[kdim]
    return mapping


def check_layouts(instr, a_ll: LinearLayout, b_ll: LinearLayout, c_ll: LinearLayout) -> None:
    """The operand/accumulator layouts hold the instruction's fragments (see module doc)."""
    c_hw = instr.c_map
    for dim in ("register", "lane"):
        n = c_hw.in_bits(dim)
        if list(c_ll.bases.get(dim, ()))[:n] != list(c_hw.bases.get(dim, ())):
            raise IRError(f"internal: the accumulator layout's {dim} bases "
                          f"{list(c_ll.bases.get(dim, ()))[:n]} are not {instr.name}'s "
                          f"{list(c_hw.bases.get(dim, ()))}")
    if c_ll.in_bits("lane") != c_hw.in_bits("lane"):
        raise IRError("internal: the accumulator layout's lanes are not the instruction's")
    ka = _k_relabel(instr.a_map, a_ll, 1, "A")
    kb = _k_relabel(instr.b_map, b_ll, 0, "B")
    if ka != kb:
        raise IRError(f"internal: A and B spread K differently ({ka} vs {kb})")
    for va, vb, vc in zip(a_ll.bases.get("warp", ()), b_ll.bases.get("warp", ()),
                          c_ll.bases.get("warp", ())):
        if va != (vc[0], 0) or vb != (0, vc[1]):
            raise IRError(f"internal: warp bases of A {va} / B {vb} do not follow the "
                          f"accumulator's {vc}")


def _fragments(ll: LinearLayout, size: int) -> dict[tuple, list[int]]:
    """Origin -> registers of each fragment (first group wins on broadcast duplicates)."""
    bits = log2(size)
    out: dict[tuple, list[int]] = {}
    for g in range(ll.in_size("register") >> bits):
        origin = ll.apply(register=g << bits)
        out.setdefault(origin, [(g << bits) | j for j in range(size)])
    return out


def issue_plan(instr, a_ll, b_ll, c_ll) -> list[tuple[list[int], list[int], list[int]]]:
    """(A registers, B registers, C registers) per issue, K outermost, each list in the
    instruction's element order."""
    check_layouts(instr, a_ll, b_ll, c_ll)
    a = _fragments(a_ll, instr.a_map.in_size("register"))
    b = _fragments(b_ll, instr.b_map.in_size("register"))
    c = _fragments(c_ll, instr.c_map.in_size("register"))
    k_origins = sorted({k for _, k in a})
    plan = []
    for k0 in k_origins:
        for (m0, n0), c_regs in c.items():
            try:
                plan.append((a[(m0, k0)], b[(k0, n0)], c_regs))
            except KeyError:
                raise IRError(f"internal: no operand fragment for the {instr.name} issue at "
                              f"m={m0}, n={n0}, k={k0}") from None
    return plan
