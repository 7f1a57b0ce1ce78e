"""The conformance harness: one declarative ``check`` per case, run in two tiers.

* **compile** tier: the kernel compiles for the selected backend down to its binary stage, and the
  binary passes the backend's own validation (a non-empty binary, a resource report for compiled
  backends). Needs no device.
* **execute** tier: outputs are poisoned, the kernel runs on the selected backend, and every output
  named in ``expect`` is compared with the numpy result computed by the test; for backends other
  than ``reference`` the same launch also runs on the reference executor and the two must agree.
  Skipped, with the reason, when the backend has no device here.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pytest

import naiad
from naiad.ir.types import scalar_from_numpy
from naiad.plugins import BinaryResult, get_plugin_manager
from naiad.runtime.allocator import get_allocator

#: dtype names as the tests spell them -> numpy dtypes
DTYPES = {
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "bfloat16": None, "float32": np.float32, "float64": np.float64,
}
INT_DTYPES = ["int8", "int16", "int32", "int64"]
UINT_DTYPES = ["uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
ALL_DTYPES = INT_DTYPES + UINT_DTYPES + FLOAT_DTYPES

_SIG_NAMES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64",
              "f8e5": "fp8e5", "f8e4nv": "fp8e4nv", "f8e4b8": "fp8e4b8", "f8e5b16": "fp8e5b16"}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(DTYPES[name])


def sig_of_dtype(dtype) -> str:
    """Triton-style type string of a numpy dtype (``float32`` -> ``fp32``)."""
    name = scalar_from_numpy(dtype).name
    return _SIG_NAMES.get(name, name)


def sig_of_arg(value) -> str:
    if isinstance(value, np.ndarray):
        return "*" + sig_of_dtype(value.dtype)
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, np.generic):
        return sig_of_dtype(value.dtype)
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"conformance harness cannot type argument {value!r}")


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a result of ``dtype`` with numpy."""
    name = np.dtype(dtype).name
    return {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (2e-5, 1e-6),
            "float64": (1e-12, 1e-14)}.get(name, (0.0, 0.0))


@contextlib.contextmanager
def _scratch_allocator():
    """An allocator for kernels that need global scratch memory (NVIDIA's tensor descriptors
    made in the kernel), installed as Triton's own tests install one with
    ``triton.set_allocator``; the buffers live until the outputs have been read back."""
    buffers = []

    def allocate(size, alignment, stream):
        # device allocations start at 256-byte boundaries, past any alignment asked here
        buffers.append(naiad.to_device(np.empty(max(size, 1), np.uint8)))
        return buffers[-1]

    before = get_allocator()
    naiad.set_allocator(allocate)
    try:
        yield
    finally:
        naiad.set_allocator(before)


@dataclass
class Conformance:
    """Per-test access to the selected backend, the tier and a fresh random generator."""

    backend: str
    tier: str
    rng: np.random.Generator
    device_present: bool
    last: dict = field(default_factory=dict)

    # -- inputs -----------------------------------------------------------------------------
    def rand(self, shape, dtype: str | np.dtype, low=None, high=None) -> np.ndarray:
        """Fresh random (never all-zero) values of ``dtype``; ints span a safe range by default."""
        dt = np_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            lo = info.min if low is None else low
            hi = info.max if high is None else high
            lo, hi = max(lo, info.min), min(hi, info.max)
            return self.rng.integers(lo, hi, size=shape, endpoint=True, dtype=dt)
        if dt.kind == "b":
            return self.rng.random(size=shape) < 0.5
        lo = -4.0 if low is None else low
        hi = 4.0 if high is None else high
        return self.rng.uniform(lo, hi, size=shape).astype(dt)

    def poison(self, shape, dtype: str | np.dtype) -> np.ndarray:
        """An output buffer filled with NaN (floats) or a sentinel (ints) so unwritten elements
        show up as mismatches."""
        dt = np_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
        if dt.kind == "f" or dt.name == "bfloat16":
            return np.full(shape, np.nan, dtype=dt)
        if dt.kind == "b":
            return np.zeros(shape, dtype=dt) ^ (self.rng.random(size=shape) < 0.5)
        return np.full(shape, np.iinfo(dt).max - 3, dtype=dt)

    # -- the one check ------------------------------------------------------------------------
    def check(self, kernel, grid, args: Sequence[Any], expect: dict[int, np.ndarray],
              constexprs: dict[str, Any] | None = None, rtol: float | None = None,
              atol: float | None = None, options: dict[str, Any] | None = None,
              equal_nan: bool = True, compare: Callable | None = None) -> None:
        """Compile (compile tier) or run and compare (execute tier) ``kernel`` on ``args``.

        ``expect`` maps argument positions of output arrays to their expected numpy values;
        ``compare(actual, expected)`` overrides the element-wise comparison when given.
        """
        constexprs = dict(constexprs or {})
        options = dict(options or {})
        if self.tier == "compile":
            self._compile(kernel, args, constexprs, options)
            return
        if not self.device_present:
            pytest.skip(f"execute tier: no {self.backend} device on this machine "
                        f"(the compile tier covers this case)")
        got = self._run(self.backend, kernel, grid, args, constexprs, options)
        self._compare(got, expect, rtol, atol, equal_nan, compare, "numpy")
        if self.backend != "reference":
            ref = self._run("reference", kernel, grid, args, constexprs, options)
            self._compare(got, {i: ref[i] for i in expect}, rtol, atol, equal_nan, compare,
                          "the reference executor")

    # -- internals ----------------------------------------------------------------------------
    def _compile(self, kernel, args, constexprs, options):
        params = [p for p in kernel.arg_names if p not in constexprs]
        if len(params) != len(args):
            raise TypeError(f"{kernel.__name__} takes {len(params)} runtime arguments, "
                            f"the case passed {len(args)}")
        signature = {p: sig_of_arg(a) for p, a in zip(params, args)}
        ck = naiad.compile(kernel, signature=signature, constexprs=constexprs,
                           target=self.backend, options=options)
        assert ck.asm.get("tile"), "no tile IR produced"
        assert ck.binary, f"empty {ck.binary_stage} stage"
        codegen = get_plugin_manager().hook.naiad_codegen(target=ck.target)
        if codegen is not None:     # compiled backends validate their own binaries
            codegen.validate_binary(BinaryResult(
                stages={s: ck.asm[s] for s in ck.asm if s not in ("tile", "gpu", "llir")},
                binary_stage=ck.binary_stage, metadata=ck.metadata,
                resources=ck.metadata.get("resources")))
        self.last = {"compiled": ck}

    def _run(self, backend, kernel, grid, args, constexprs, options) -> dict[int, np.ndarray]:
        with naiad.target(backend), _scratch_allocator():
            on_device = [naiad.to_device(a.copy()) if isinstance(a, np.ndarray) else a
                         for a in args]
            kernel[grid](*on_device, **constexprs, **options)
            return {i: _to_host(a) for i, a in enumerate(on_device)
                    if isinstance(args[i], np.ndarray)}

    @staticmethod
    def _compare(got, expect, rtol, atol, equal_nan, compare, against):
        for i, want in expect.items():
            have = got[i]
            if compare is not None:
                compare(have, want)
                continue
            want = np.asarray(want)
            assert have.shape == want.shape, f"output {i}: shape {have.shape} != {want.shape}"
            r, a = tolerance(want.dtype)
            r = r if rtol is None else rtol
            a = a if atol is None else atol
            if want.dtype.kind in "iub" and r == 0 and a == 0:
                bad = np.nonzero(have != want)
            else:
                h64 = have.astype(np.float64)
                w64 = want.astype(np.float64)
                close = np.isclose(h64, w64, rtol=r, atol=a, equal_nan=equal_nan)
                bad = np.nonzero(~close)
            if bad[0].size:
                idx = tuple(b[0] for b in bad)
                raise AssertionError(
                    f"output {i} differs from {against} at {bad[0].size} of {want.size} "
                    f"elements; first at {idx}: got {have[idx]!r}, expected {want[idx]!r}")


def _to_host(a) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    return a.numpy()
