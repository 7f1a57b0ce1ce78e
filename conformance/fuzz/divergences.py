"""Known divergences: a hazard tag the generator puts on a construct -> who differs, and why.

A failing case whose kernel carries a tag listed here for the failing peer is reported as a known
divergence (``xfail`` with the reason) instead of a failure. Remove an entry when its cause is
fixed; the cases it covered then count again. Peers: ``reference`` (invariants only), ``simt``,
``nvidia``, ``amd``, ``triton``; ``gpu`` means every naiad GPU target (simt, nvidia, amd), which
share the core lowering. The generator also puts informational tags on its kernels
(``abs_int_min``, ``dot_float``...); a tag not listed here excuses nothing.
"""
from __future__ import annotations

GPU = ("simt", "nvidia", "amd")

#: tag -> (peers, reason)
KNOWN: dict[str, tuple[tuple[str, ...], str]] = {
    "rtz": (("triton",),
            "Triton's interpreter: fp_downcast_rounding='rtz' (naiad rounds toward zero on "
            "every backend since issue 13)"),
    "half_accumulation": (("triton",),
                          "Triton's interpreter accumulates fp16/bf16 reductions and scans "
                          "differently; naiad rounds to the half type per combine on every "
                          "backend since issue 13"),
    "float_to_int_range": (("triton",),
                           "out-of-range or NaN float -> int casts: undefined in Triton (numpy's "
                           "answer in its interpreter); naiad saturates on every backend"),
    "argminmax_nan": (("triton",),
                      "Triton: argmin/argmax with a NaN return an index that depends on the "
                      "combine order; naiad ignores NaN (docs/language.md) since issue 13"),
    "bfloat16": (("triton",),
                 "Triton's interpreter (not Triton): bf16 values are kept as raw 16-bit "
                 "integers, so maximum/minimum/comparisons order the bits "
                 "(tl.maximum(bf16 3.5, -100.0) gives -100)"),
    "triton_atomic_dtype": (("triton",),
                            "Triton's interpreter (not Triton): atomics on uint32 and "
                            "atomic_xchg on float32 raise 'Unsupported data type'"),
    "float_discontinuity": (GPU + ("triton",),
                            "not a bug: a comparison, float -> int cast, floor/ceil or bitcast of "
                            "a float from math functions, a float32 '/' (NVIDIA's div.full.f32, "
                            "<= 2 ulp, as Triton) or a cross-lane sum turns a last-bit "
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
    "nan_payload": (("nvidia", "amd", "triton"),
                    "not a bug (fuzz seeds 10070, 10844 on the H200; 20962 with Triton's "
                    "interpreter): a NaN's sign and payload are not specified; GPU arithmetic "
                    "returns its canonical NaN (0x7fffffff, f16 0x7fff) where numpy on the host "
                    "keeps x86's (0xffc00000) or the input's, and Triton's interpreter negates "
                    "or combines NaNs in another order than the reference, so a bitcast of a "
                    "NaN to another type reads other bits"),
    "loop_index_weak": (("triton",),
                        "Triton's interpreter (not Triton): the index of a range/tl.range loop "
                        "is a Python int there, an int32 in compiled Triton and in naiad; next "
                        "to an 8/16-bit integer tensor the interpreter computes in the narrow "
                        "type (u8 + i is u8, compiled Triton: i32), so it wraps earlier, "
                        "rejects int8 // (u8 + i) ('different signedness') and (u16 + i) == -4 "
                        "('unsigned tensor and a negative scalar'); compiled Triton 3.9 "
                        "accepts both (fuzz seeds 21285, 22835)"),
    "signed_shift_to_uint64": (("triton",),
                               "Triton's interpreter (not Triton): int64 >> uint64 (a uint64 "
                               "result) keeps numpy's int64 array under the uint64 type, so the "
                               "next operation with a uint64 raises numpy's \"ufunc 'bitwise_and' "
                               "not supported for the input types\" (fuzz seeds 20204, 22981)"),
    "trig_large_argument": (("nvidia", "amd"),
                            "documented limit (fuzz seeds 10099, 10317 on the H200): the NVIDIA "
                            "and AMD math libraries reduce sin/cos arguments without Payne-Hanek "
                            "(lowering/mathlib.py); NVIDIA returns sin 0, cos 1 beyond |x| = "
                            "2**30 (f32) / 2**50 (f64), AMD a bounded but meaningless value, "
                            "the reference numpy's correctly reduced one"),
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
