"""Known divergences: a hazard tag the generator puts on a construct -> who differs, and why.

A failing case whose kernel carries a tag listed here for the failing peer is reported as a known
divergence (``xfail`` with the reason) instead of a failure. Remove an entry when its cause is
fixed; the cases it covered then count again. Peers: ``reference`` (invariants only), ``simt``,
``nvidia``, ``amd``, ``triton``; ``gpu`` means every naiad GPU target (simt, nvidia, amd), which
share the core lowering. The generator also puts informational tags on its kernels (``nan_payload``,
``abs_int_min``, ``trig_large_argument``, ``dot_float``...); a tag not listed here excuses nothing.
"""
from __future__ import annotations

GPU = ("simt", "nvidia", "amd")

#: tag -> (peers, reason)
KNOWN: dict[str, tuple[tuple[str, ...], str]] = {
    "atomic_uniform": (GPU + ("triton",),
                       "issue 13 (1): the reference executor applies an atomic whose pointer and "
                       "value are the same in every program once per launch, not once per program"),
    "umulhi_signed": (("triton", "nvidia", "amd", "simt"),
                      "issue 13 (2): tl.umulhi on signed integers is the signed high half on the "
                      "reference and in constant folding, the unsigned one on GPUs and Triton"),
    "shift_signedness": (("triton",),
                         "issue 13 (4): int >> uint shifts logically by the promoted type in "
                         "naiad, arithmetically by the left operand's signedness in Triton"),
    "float_mod": (("nvidia",),
                  "issue 13: float % is frem, which LLVM's NVPTX backend expands to "
                  "x - trunc(x/y)*y instead of fmod"),
    "rtz": (GPU + ("triton",),
            "issue 13: fp_downcast_rounding='rtz' is ignored by the GPU lowering and dropped by "
            "the canonicalizer and the constant folder"),
    "half_accumulation": (GPU + ("triton",),
                          "issue 13: fp16/bf16 reductions and scans accumulate in fp32 on the "
                          "reference, in half precision in the GPU IR"),
    "float_to_int_range": (GPU + ("triton",),
                           "issue 13: out-of-range or NaN float -> int casts follow numpy/x86 on "
                           "the reference and saturate on GPUs (undefined in the docs)"),
    "argminmax_nan": (GPU + ("triton",),
                      "issue 13: argmin/argmax with a NaN return an index that is neither the "
                      "extremum nor the NaN"),
    "bfloat16": (("triton",),
                 "Triton's interpreter (not Triton): bf16 values are kept as raw 16-bit "
                 "integers, so maximum/minimum/comparisons order the bits "
                 "(tl.maximum(bf16 3.5, -100.0) gives -100)"),
    "triton_atomic_dtype": (("triton",),
                            "Triton's interpreter (not Triton): atomics on uint32 and "
                            "atomic_xchg on float32 raise 'Unsupported data type'"),
    "float_discontinuity": (GPU + ("triton",),
                            "not a bug: a comparison, float -> int cast, floor/ceil or bitcast of "
                            "a float from math functions or a cross-lane sum turns a last-bit "
                            "difference between correct implementations into a different value"),
    "float_arg_weak": (("triton",),
                       "new (fuzz): Triton types an fp32 scalar kernel argument weakly next to "
                       "an fp16 tensor (x_f16 * alpha is fp16; naiad: fp32, as its docs say); "
                       "x_f16 + tl.sum(y_f32) is fp32 in both"),
    "float_overflow_order": (GPU,
                             "not a bug: a float product across lanes (cumprod, a mul combine) "
                             "or a dot of unclamped operands is evaluated in another order on "
                             "GPUs (tree, FMA) than on the reference (sequential, BLAS); with "
                             "edge values one order overflows to inf or underflows to 0 where "
                             "the other does not, and inf - inf or 0 * inf gives NaN on one side "
                             "only (fuzz seeds 582 and 946 on simt)"),
    "atomic_minmax_nan": (GPU + ("triton",),
                          "new (fuzz seed 306 with --avoid-known): float atomic_min/atomic_max "
                          "with a NaN value store NaN on the reference (np.minimum), while the "
                          "GPU lowering and Triton ignore the NaN (minnum), as tl.minimum's "
                          "documented 'NaN yields the other operand' says"),
    "float_sum_with_edges": (GPU + ("triton",),
                             "not a bug: a float sum across lanes over edge values (the largest "
                             "finite float, inf) depends on the order: max + x - max absorbs x "
                             "sequentially but not in a tree, and a later 0/0 or step turns "
                             "that into NaN or another value (seed 1142 with --avoid-known)"),
    "math_half": (("triton",),
                  "issue 13: naiad accepts exp/log/sqrt/... on fp16/bf16, Triton rejects them"),
}


def known_reasons(hazards, peer: str, outcome) -> list[str]:
    """Reasons of the known divergences that explain a failure of ``peer`` on a kernel tagged
    with ``hazards`` (empty: the failure is new)."""
    base = peer.split(":", 1)[0]
    return [f"{tag}: {reason}" for tag, (peers, reason) in sorted(KNOWN.items())
            if tag in hazards and base in peers]


def known_tags(peer: str) -> frozenset:
    """The tags whose divergences concern ``peer`` (what ``--avoid-known`` leaves out)."""
    base = peer.split(":", 1)[0]
    return frozenset(tag for tag, (peers, _) in KNOWN.items() if base in peers)
