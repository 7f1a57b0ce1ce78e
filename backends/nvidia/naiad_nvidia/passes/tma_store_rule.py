"""When a 2-D descriptor store may go by TMA: only when it provably writes nothing outside
the descriptor's view -- one rule for host ``TensorDescriptor`` maps and maps built in the
kernel (``tl.make_tensor_descriptor``).

Why: on the H200 a TMA store of 16 x 16 float boxes into a 37 x 45 view whose rows are 48
floats apart wrote the 3 padding columns of every row, through any map (naiad's and Triton's,
in-kernel and host; ``bench/nv_tma_store_probe.py``). In a real program the padding is a
neighbouring tensor's data. The masked pointer store is exact, so a store TMA might widen
keeps it (a performance remark says why).

Two hypotheses fit that run; :data:`INNER_CLIP` picks the one the rule trusts. The probe's
second run (column counts 37, 44 and 45, guard rows after the view) settled it: 111, 0 and 111
padding elements written, no guard row -- ``"16B"``, rows clipped:

* ``"box"`` (exact under both; the default until the probe ran): the inner dimension is not clipped inside a box that
  crosses the view's edge. Exact when no box crosses it: the inner extent and the column offset
  are both multiples of the box's width (``block_shape[-1]``).
* ``"16B"``: the inner dimension is clipped at 16-byte granularity (45 floats = 180 bytes write
  up to 192). Exact when a row of the view is a multiple of 16 bytes long.

:data:`OUTER_CLIPPED` says whether rows beyond the view's row count are dropped (the probe's
guard rows tell); when False, the same "no box crosses the edge" test applies to rows.

What is known about an extent: for an in-kernel map, its value's axis info (a constant, a
constexpr, an int argument specialised divisible by 16, ...); for a host map, the launch's
``block_gcd`` fact (per dimension, gcd(extent, block size); part of the descriptor's
specialisation key, see ``naiad.runtime.descriptor_args``).
"""
from __future__ import annotations

#: how a TMA store clips the inner dimension at the view's edge: "box" or "16B" (module docs)
INNER_CLIP = "16B"   # the H200 probe: 37/44/45 columns -> 111/0/111 padding written
#: whether a TMA store drops rows at or beyond the view's row count
OUTER_CLIPPED = True


def tma_store_is_exact(block: list[int], elem_bytes: int, extent_multiple: list[int],
                       offset_multiple: list[int]) -> str | None:
    """None when a TMA store of ``block`` (rows, cols) cannot write outside the view, else
    why it might. ``extent_multiple[d]`` / ``offset_multiple[d]``: a number known to divide the
    view's extent / the store's offset along ``d`` (the value itself when constant, 1 when
    nothing is known)."""
    rows, cols = block
    if INNER_CLIP == "16B":
        if extent_multiple[1] * elem_bytes % 16:
            return (f"its column count is not known to make rows a multiple of 16 bytes "
                    f"({elem_bytes}-byte elements), and TMA stores write whole 16-byte chunks "
                    f"at the row's end")
    elif extent_multiple[1] % cols or offset_multiple[1] % cols:
        what = "count" if extent_multiple[1] % cols else "offset"
        return (f"its column {what} is not known to be a multiple of the block's {cols} "
                f"columns, and a TMA store crossing the view's last column writes past it "
                f"(into a padded row's padding)")
    if not OUTER_CLIPPED and (extent_multiple[0] % rows or offset_multiple[0] % rows):
        return (f"its row count or row offset is not known to be a multiple of the block's "
                f"{rows} rows, and a TMA store crossing the view's last row writes past it")
    return None


def known_multiple(info) -> int:
    """A number known to divide the integer ``info`` (axis info) describes: the constant
    itself, else its power-of-two divisibility."""
    from naiad.backend import axis_info

    if info.constant is not None and int(info.constant) > 0:
        return int(info.constant)
    return axis_info.every_element_div(info)
