"""The documented error bounds of the ops a backend may compute approximately, in float32 ulps.

Triton documents float ``/`` and ``tl.exp`` as fast approximations; naiad follows that where a
backend has the fast instruction (docs/language.md, "Approximate operations"). Each entry is the
bound docs/language.md states, as a function of the input ``x`` (float64 array) giving the
allowed ulps per element: naiad's backends are held to their own (tighter) documented bounds,
any other backend to the language's contract. Every other op keeps conformance's ordinary
tolerances (harness.tolerance).
"""
from __future__ import annotations

import warnings

import numpy as np

#: ulps (from the exact value) of ex2.approx.f32 -- 2 from the correctly rounded result, as CUDA
#: documents exp2f; 2.18 measured on the H200 -- and of AMD's v_exp_f32 family; and the slope of
#: the error from rounding x * log2(e) to float32: the exponent is off by up to
#: |x| (2^-24 * log2e + log2e's own 1.3e-8 relative rounding), 1.22 |x| ulp of the result
EXP2_ULPS = 2.5
EXP_ROUNDING_SLOPE = 1.25


def _exp_fast(x):
    return EXP2_ULPS + EXP_ROUNDING_SLOPE * np.abs(x)


def _const(u):
    return lambda x: np.full(np.shape(x), u, np.float64)


#: The language's contract, for any backend (a third-party one included): ``/`` and ``tl.exp``
#: may be Triton's fast versions, ``tl.div_rn`` is correctly rounded, libdevice's functions are
#: within 4 ulp (docs/language.md). Ops: "div" (x / y, fp32), "exp" (tl.exp, fp32), "div_rn"
#: (tl.div_rn), "libdevice_exp" (libdevice.exp); bound(x) in float32 ulps.
CONTRACT = {"div": _const(2.0), "exp": _exp_fast, "div_rn": _const(0.5),
            "libdevice_exp": _const(4.0)}
#: what naiad's own backends document (tighter than the contract where they are exact)
BOUNDS = {
    ("div", "reference"): _const(0.5),         # numpy: correctly rounded
    # numpy's float32 exp (SIMD): 2.39 ulp measured over 2e6 inputs on the dev host
    ("exp", "reference"): _const(2.6),
    ("libdevice_exp", "reference"): _const(2.6),
    ("div", "nvidia"): _const(2.0),            # div.full.f32, PTX ISA: 2 ulp, full range
    ("exp", "nvidia"): _exp_fast,              # ex2.approx.f32(fl(x * log2e))
    ("libdevice_exp", "nvidia"): _const(3.0),  # expansion <= 1 ulp + ex2.approx's 2
    ("div", "amd"): _const(0.5),               # LLVM's correctly rounded AMDGPU expansion
    ("exp", "amd"): _exp_fast,                 # v_exp_f32(fl(x * log2e)), tl.exp and libdevice
    ("libdevice_exp", "amd"): _exp_fast,
}


def bound(op: str, backend: str, x) -> np.ndarray:
    """Allowed float32 ulps per element of ``op`` on ``backend`` (``nvidia:sm_90`` counts as
    ``nvidia``)."""
    base = backend.split(":", 1)[0]
    return BOUNDS.get((op, base), CONTRACT[op])(np.asarray(x, np.float64))


def ulp_error(got, ref) -> np.ndarray:
    """|got - ref| in float32 ulps of ``ref`` (float64); subnormal results in units of the
    smallest subnormal; 0 where both are the same inf/nan, inf where only one is."""
    ref = np.asarray(ref, np.float64)
    fi = np.finfo(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = np.floor(np.log2(np.maximum(np.abs(ref), fi.smallest_normal)))
        err = np.abs(np.asarray(got, np.float64) - ref) / 2.0 ** (e - fi.nmant)
        ref32 = ref.astype(np.float32)
    got = np.asarray(got, np.float32)
    special = ~np.isfinite(ref32) | ~np.isfinite(got)
    same = (got == ref32) | (np.isnan(got) & np.isnan(ref32))
    return np.where(special, np.where(same, 0.0, np.inf), err)
