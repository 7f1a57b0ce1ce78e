"""How does a TMA store clip a box that crosses a padded view's edge? naiad and Triton.

    python3 bench/nv_tma_store_probe.py        # on a machine with an NVIDIA sm_90 GPU (<60 s)

Why: on the H200 a TMA store of 16 x 16 float boxes into a 37 x 45 view whose rows are 48 floats
apart wrote the 3 padding columns of every row (111 elements), through any map: naiad's and
Triton's, in-kernel and host. Two hypotheses fit: (a) the inner dimension is clipped at 16-byte
granularity (45 floats = 180 B, written up to 192 B), (b) it is not clipped inside a box that
crosses the edge. naiad stores by TMA only where ``passes/tma_store_rule`` proves the store exact
(``INNER_CLIP = "box"`` holds under both; ``"16B"`` under (a) only). This run settles it:
column counts 37, 44 and 45 (rows 48 floats apart, boxes 16 wide) and 16 poisoned guard rows
after the view's 37 rows (the last box row-crosses the edge: rows 37..47). Per way, it counts
padding elements written, guard-row elements written and in-range elements wrong:

* naiad as shipped (the rule: masked stores where TMA might write outside; must write none);
* naiad with the TMA store forced (the rule bypassed: what the hardware does);
* Triton 3.x, in-kernel descriptor and host ``TensorDescriptor`` (always TMA).

Predicted padding written by a TMA store: (a) 111 / 0 / 111, (b) 407 / 148 / 111 for 37 / 44 /
45 columns; guard rows 0 if the outer dimension is clipped (``OUTER_CLIPPED``). The last lines
say which constants ``passes/tma_store_rule`` should hold.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SOURCE = '''
import naiad as triton
import naiad.language as tl


@triton.jit
def store_in_kernel_map(X, Out, M, N, row_stride, BM: tl.constexpr, BN: tl.constexpr):
    dst = tl.make_tensor_descriptor(Out, [M, N], [row_stride, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    x = tl.load(X + rows[:, None] * BN * tl.num_programs(1) + cols[None, :])
    dst.store([pm * BM, pn * BN], x)


@triton.jit
def store_host_map(X, dst, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    x = tl.load(X + rows[:, None] * BN * tl.num_programs(1) + cols[None, :])
    dst.store([pm * BM, pn * BN], x)
'''

M, STRIDE, GUARD, BM, BN = 37, 48, 16, 16, 16
EXTENTS = (37, 44, 45)
POISON = -7.0
#: padding a TMA store writes per hypothesis, per column count
PREDICTED = {"16B": {37: 111, 44: 0, 45: 111}, "box": {37: 407, 44: 148, 45: 111}}


def _force_naiad_tma_stores():
    """Bypass naiad's store rule (the probe's question is what TMA itself writes)."""
    import naiad_nvidia.passes.tma_ring as ring

    ring._store_may_widen = lambda access, elem, facts: None


def _fresh_naiad_cache():
    import os
    import tempfile

    os.environ["NAIAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="tma_store_probe_")


def _count(out, x, n):
    return (int((out[:M, n:] != POISON).sum()), int((out[M:] != POISON).sum()),
            int((out[:M, :n] != x[:M, :n]).sum()))


def run(flavour: str, torch, forced=False):
    """{(map kind, column count): (padding written, guard written, in-range wrong)}."""
    from same_source import load_kernels

    if flavour == "naiad":
        import naiad
        from naiad.tools.tensor_descriptor import TensorDescriptor
        _fresh_naiad_cache()
        if forced:
            _force_naiad_tma_stores()
        set_allocator = naiad.set_allocator
    else:
        import triton
        from triton.tools.tensor_descriptor import TensorDescriptor
        set_allocator = triton.set_allocator
    set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    module = load_kernels(SOURCE, flavour, f"tma_store_probe{'_forced' if forced else ''}")
    results = {}
    for n in EXTENTS:
        grid = (-(-M // BM), -(-n // BN))
        x = torch.randn(grid[0] * BM, grid[1] * BN, device="cuda")
        for way in ("in-kernel map", "host TensorDescriptor"):
            out = torch.full((M + GUARD, STRIDE), POISON, device="cuda")
            if way == "host TensorDescriptor":
                desc = TensorDescriptor(out, [M, n], [STRIDE, 1], [BM, BN])
                module.store_host_map[grid](x, desc, BM=BM, BN=BN)
            else:
                module.store_in_kernel_map[grid](x, out, M, n, STRIDE, BM=BM, BN=BN)
            torch.cuda.synchronize()
            results[way, n] = _count(out, x, n)
    return results


def verdict(rows: dict) -> list[str]:
    """What the forced-TMA and Triton rows say about the two hypotheses and the outer edge."""
    tma = {k: v for k, v in rows.items() if k[0] != "naiad (rule)"}
    out = []
    for name, want in PREDICTED.items():
        fits = bool(tma) and all(pad == want[n] for (_, _, n), (pad, _, _) in tma.items())
        what = "(a) 16-byte chunks" if name == "16B" else "(b) no clip inside the box"
        out.append(f"INNER_CLIP = {name!r} {what}: "
                   f"{'fits every TMA row' if fits else 'does not fit'}")
    guard = sum(g for (_, _, _), (_, g, _) in tma.items())
    out.append(f"guard rows written by TMA stores: {guard} -> OUTER_CLIPPED = {guard == 0}")
    naiad_bad = sum(p + g + w for (who, _, _), (p, g, w) in rows.items() if who == "naiad (rule)")
    out.append(f"naiad as shipped wrote {naiad_bad} elements outside the view or wrong "
               f"(must be 0)")
    return out


def main():
    import torch

    print(f"TMA store of {BM}x{BN} float blocks into {M} x N views (N = "
          f"{', '.join(map(str, EXTENTS))}), rows {STRIDE} floats apart, {GUARD} guard rows "
          f"after the view; padding and guard rows poisoned")
    print("| compiler | map | N | padding written | guard written | in-range wrong |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for who, flavour, forced in (("naiad (rule)", "naiad", False),
                                 ("naiad (TMA forced)", "naiad", True),
                                 ("triton", "triton", False)):
        try:
            for (way, n), counts in run(flavour, torch, forced).items():
                rows[who, way, n] = counts
                print(f"| {who} | {way} | {n} | " + " | ".join(map(str, counts)) + " |")
        except Exception as exc:   # noqa: BLE001 -- report and go on to the next way
            print(f"| {who} | - | - | failed: {type(exc).__name__}: {exc} | | |")
    for line in verdict(rows):
        print(line)


if __name__ == "__main__":
    main()
