"""Run a generated :class:`~.program.Program` on the reference executor and on a peer, compare.

Peers: a naiad target (``simt``, ``nvidia``, ``amd``, a vendor's) executed when its device is
present, else compiled to its binary (the compile tier); ``triton`` (Triton's interpreter, when
importable); ``reference`` alone checks invariants (the masked region is written, the rest keeps
its poison, two runs agree bit for bit).

Comparison: integers and bools exactly; floats with :data:`TOLERANCES` (per dtype), NaN positions
and infinities exactly; kernels whose floats are accumulated across lanes (reductions, scans, dot,
atomics) get an absolute allowance of ``rtol * max(1, max |expected|)`` for the summation order.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .divergences import known_reasons, known_tags
from .program import Program

#: (rtol, atol) per float dtype
TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (4e-2, 1e-2), "float32": (1e-4, 1e-6),
              "float64": (1e-9, 1e-12)}
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    """``status``: pass | compiled | mismatch | error | invariant."""

    status: str
    detail: str = ""
    known: list = field(default_factory=list)   # reasons from divergences.py when tagged

    @property
    def failed(self) -> bool:
        return self.status in ("mismatch", "error", "invariant")

    def signature(self) -> str:
        """What the reducer keeps constant: the kind of failure, not its numbers."""
        return self.status + ":" + self.detail.split(":", 1)[0]


# -- inputs -------------------------------------------------------------------------------------
def _edges(d: str) -> list:
    if dt.is_float(d):
        # ml_dtypes' finfo knows bfloat16; numpy's does only with some ml_dtypes versions
        info = ml_dtypes.finfo(dt.numpy_dtype(d))
        return [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.smallest_subnormal),
                float(info.tiny), float(info.max), -float(info.max), 1.0, -1.0]
    if d == "int1":
        return [True, False]
    info = np.iinfo(np.dtype(d))
    return [0, 1, -1 if info.min else 2, info.min, info.max, info.max - 1]


def random_values(rng: np.random.Generator, d: str, size: int, edges: bool) -> np.ndarray:
    """Fresh values of ``d``: small and full-range numbers, and edge values when asked."""
    npd = dt.numpy_dtype(d)
    if d == "int1":
        return rng.random(size) < 0.5
    if dt.is_float(d):
        vals = rng.uniform(-4, 4, size)
        ints = rng.random(size) < 0.2
        vals[ints] = np.round(vals[ints])
        out = vals.astype(npd)
    else:
        info = np.iinfo(npd)
        small = rng.integers(max(info.min, -20), 21, size=size, endpoint=True)
        full = rng.integers(info.min, info.max, size=size, endpoint=True, dtype=npd)
        out = np.where(rng.random(size) < 0.6, small.astype(npd), full).astype(npd)
    if edges:
        pick = rng.random(size) < 0.1
        choices = np.array(_edges(d), dtype=np.float64 if dt.is_float(d) else object)
        for i in np.nonzero(pick)[0]:
            out[i] = npd.type(choices[rng.integers(len(choices))])
    return out


def poison(d: str, size: int, which: int) -> np.ndarray:
    npd = dt.numpy_dtype(d)
    if d == "int1":
        return np.full(size, bool(which), dtype=npd)
    if dt.is_float(d):
        return np.full(size, [np.nan, 1234.5][which], dtype=npd)
    info = np.iinfo(npd)
    return np.full(size, [info.max - 3, info.min + 5][which], dtype=npd)


def has_edge_values(p: Program) -> bool:
    """Whether the seed's inputs mix in edge values (±0, ±inf, NaN, subnormals, extremes)."""
    return bool(np.random.default_rng(p.seed).random() < 0.5)


#: float operations that make a NaN from finite inputs (0/0, x % 0, log/sqrt of a negative) or
#: an infinity that a later inf - inf turns into one
_NAN_MAKERS = (" / ", " % ", "tl.log", "tl.sqrt(", "tl.rsqrt(", "tl.exp", "tl.cumprod(")


def effective_hazards(p: Program) -> frozenset:
    """The kernel's hazard tags plus those that need NaN or huge values to matter: from edge
    values in the inputs, or (float atomic min/max) computed by the kernel (seed 24135 with
    --avoid-known: 0/0 reached an atomic_max)."""
    out = set(p.hazards)
    edges = has_edge_values(p)
    if edges and "float_sum" in out:
        out.add("float_sum_with_edges")
    if "float_atomic_minmax" in out and (edges or any(m in p.source() for m in _NAN_MAKERS)):
        out.add("atomic_minmax_nan")
    return frozenset(out)


def make_arguments(p: Program, which_poison: int = 0) -> list:
    """The launch's array and scalar arguments (deterministic in the seed)."""
    rng = np.random.default_rng(p.seed)
    edges = rng.random() < 0.5
    total = p.grid * p.elements_per_program
    arrays = []
    for b in p.buffers:
        if b.role == "input":
            arrays.append(random_values(rng, b.dtype, total, edges))
        elif b.role == "output":
            arrays.append(poison(b.dtype, total, which_poison))
        elif b.role == "program":
            arrays.append(poison(b.dtype, p.grid, which_poison))
        elif b.role == "atomic":
            slots = int(b.value)
            init = rng.integers(0, 50, slots) if b.name.startswith("atom") else np.zeros(slots)
            arrays.append(init.astype(dt.numpy_dtype(b.dtype)))
        else:
            arrays.append(rng.integers(0, 2, total).astype(dt.numpy_dtype(b.dtype)))
    return arrays + [p.n, p.m, p.k, p.alpha]


def written_mask(p: Program) -> np.ndarray:
    """Elements of an output buffer the kernel's store mask covers."""
    total = p.grid * p.elements_per_program
    idx = np.arange(total)
    if p.rank == 1:
        return idx < p.n
    row, col = idx // p.C, idx % p.C
    return (row < p.n) & (col < p.m)


# -- loading a program's source -------------------------------------------------------------------
_MODULES: dict[str, object] = {}


def load_kernel(p: Program, flavor: str = "naiad"):
    """Write the source to a file (naiad and Triton read the kernel's source) and import it."""
    src = p.source(flavor)
    digest = hashlib.sha1(src.encode()).hexdigest()[:16]
    key = f"{flavor}_{digest}"
    if key in _MODULES:
        return _MODULES[key].kernel
    folder = Path(os.environ.get("NAIAD_FUZZ_DIR") or tempfile.gettempdir()) / "naiad_fuzz"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"seed{p.seed}_{key}.py"
    path.write_text(src)
    name = f"naiad_fuzz_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if len(_MODULES) > 256:
        _MODULES.clear()
    _MODULES[key] = module
    return module.kernel


# -- backends -----------------------------------------------------------------------------------
@contextlib.contextmanager
def simt_registered():
    """The test-only SIMT backend (tests/gpu/simt_backend.py) registered for the duration, unless
    it already is (``-p simt_backend``); unregistered after, so other tests see the usual
    plugins."""
    from naiad.plugins.manager import get_plugin_manager, register, unregister

    if get_plugin_manager().get_plugin("simt") is not None:
        yield
        return
    gpu = str(ROOT / "tests" / "gpu")
    if gpu not in sys.path:
        sys.path.insert(0, gpu)
    import simt_backend

    register(simt_backend.PLUGIN, name="simt")
    try:
        yield
    finally:
        unregister(name="simt")


def device_present(target: str) -> bool:
    from naiad.runtime.targets import resolve_target

    _, spec = resolve_target(target)
    if not spec.compiled:
        return True
    try:
        return spec.detect_arch() is not None
    except Exception:
        return False


def run_naiad(p: Program, target: str, which_poison: int = 0) -> list[np.ndarray]:
    import naiad

    kernel = load_kernel(p)
    args = make_arguments(p, which_poison)
    with naiad.target(target):
        dev = [naiad.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        kernel[(p.grid,)](*dev, R=p.R, C=p.C, num_warps=p.num_warps)
        return [naiad.to_host(a) for a in dev if not isinstance(a, (int, float))]


def compile_naiad(p: Program, target: str):
    """The compile tier: the kernel reaches the backend's binary and passes its validation."""
    import naiad

    kernel = load_kernel(p)
    sig = {b.param: "*" + dt.sig(b.dtype) for b in p.buffers}
    sig.update(n="i32", m="i32", k="i32", alpha="fp32")
    ck = naiad.compile(kernel, signature=sig, constexprs={"R": p.R, "C": p.C}, target=target,
                       options={"num_warps": p.num_warps})
    binary = ck.binary
    assert binary, f"empty {ck.binary_stage} stage"
    if ck.binary_stage in ("cubin", "hsaco"):
        assert bytes(binary[:4]) == b"\x7fELF", f"{ck.binary_stage} is not an ELF file"
        assert isinstance(ck.metadata.get("registers", ck.metadata.get("vgpr")), int), \
            f"no register count in the resource report: {ck.metadata}"
    return ck


def run_triton(p: Program) -> list[np.ndarray]:
    os.environ["TRITON_INTERPRET"] = "1"
    import torch

    kernel = load_kernel(p, "triton")
    args = make_arguments(p)
    tens = []
    for a in args:
        if not isinstance(a, np.ndarray):
            tens.append(a)
        elif a.dtype.name == "bfloat16":
            tens.append(torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16))
        else:
            tens.append(torch.from_numpy(a.copy()))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        kernel[(p.grid,)](*tens, R=p.R, C=p.C, num_warps=p.num_warps)
    out = []
    for t, a in zip(tens, args):
        if isinstance(a, np.ndarray):
            if t.dtype == torch.bfloat16:
                out.append(t.view(torch.int16).numpy().view(a.dtype))
            else:
                out.append(t.numpy())
    return out


# -- comparison ---------------------------------------------------------------------------------
def compare(p: Program, got: list[np.ndarray], want: list[np.ndarray], against: str) -> str:
    """'' when equal, else a one-line description of the first differing buffer."""
    accumulates = any(s.cross_lane or s.kind == "atomic" for s in p.stmts)
    loosest = loosest_float(p)
    for b, have, exp in zip(p.buffers, got, want):
        if b.role == "input":
            continue
        bad = differing(b.dtype, have, exp, accumulates, loosest)
        if bad.size:
            i = bad[0]
            return (f"{b.name} ({b.dtype}) differs from {against} at {bad.size} of {exp.size} "
                    f"elements; first at [{i}]: got {have[i]!r}, expected {exp[i]!r}")
    return ""


def loosest_float(p: Program) -> str | None:
    """The least precise float dtype the kernel computes in: a value rounded to it and widened
    later keeps its error, so outputs are compared at that dtype's tolerance."""
    text = p.source()
    present = [d for d in dt.FLOATS if f"tl.{d}" in text or any(b.dtype == d for b in p.buffers)]
    return max(present, key=lambda d: TOLERANCES[d][0]) if present else None


def differing(d: str, have: np.ndarray, want: np.ndarray, accumulates: bool,
              loosest: str | None = None) -> np.ndarray:
    if not dt.is_float(d):
        return np.nonzero(have != want)[0]
    rtol, atol = max(TOLERANCES[d], TOLERANCES.get(loosest or d, TOLERANCES[d]))
    with np.errstate(all="ignore"):     # widening a bf16 NaN warns on some numpy versions
        h, w = have.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(w)
        if accumulates and finite.any():
            atol = max(atol, rtol * max(1.0, float(np.abs(w[finite]).max())))
        same_special = (np.isnan(h) & np.isnan(w)) | (h == w)
        close = np.isfinite(h) & finite & (np.abs(h - w) <= atol + rtol * np.abs(w))
    return np.nonzero(~(same_special | close))[0]


def reference_invariants(p: Program) -> str:
    """Two runs with different poisons: the masked region agrees, the rest keeps its poison."""
    first = run_naiad(p, "reference", 0)
    second = run_naiad(p, "reference", 1)
    wmask = written_mask(p)
    for b, x, y in zip(p.buffers, first, second):
        if b.role == "output":
            px, py = poison(b.dtype, x.size, 0), poison(b.dtype, y.size, 1)
            outside = ~wmask
            if differing(b.dtype, x[outside], px[outside], False).size or \
                    differing(b.dtype, y[outside], py[outside], False).size:
                return f"{b.name}: a masked-off element was written"
            if differing(b.dtype, x[wmask], y[wmask], False).size:
                return f"{b.name}: the written region depends on the output's old contents"
        elif b.role != "input" and differing(b.dtype, x, y, False).size:
            return f"{b.name}: two runs on the same inputs differ"
    return ""


# -- one case ---------------------------------------------------------------------------------------
def run_case(p: Program, peer: str) -> Outcome:
    """Run ``p`` on the reference and on ``peer``; classify the result."""
    try:
        outcome = _run_case(p, peer)
    except Exception as exc:  # a valid kernel rejected, or a crash
        outcome = Outcome("error", f"{type(exc).__name__}: {_first_line(exc)}")
    if outcome.failed:
        outcome.known = known_reasons(effective_hazards(p), peer, outcome)
    return outcome


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def _run_case(p: Program, peer: str) -> Outcome:
    if peer == "reference":
        bad = reference_invariants(p)
        return Outcome("invariant", bad) if bad else Outcome("pass")
    try:
        want = run_naiad(p, "reference")
    except Exception as exc:
        return Outcome("error", f"reference {type(exc).__name__}: {_first_line(exc)}")
    if peer == "triton":
        try:
            got = run_triton(p)
        except Exception as exc:
            return Outcome("error", f"triton {type(exc).__name__}: {_first_line(exc)}")
        bad = compare(p, got, want, "the reference executor")
        return Outcome("mismatch", bad) if bad else Outcome("pass")
    if peer.split(":", 1)[0] == "simt":
        with simt_registered():
            got = run_naiad(p, peer)
        bad = compare(p, got, want, "the reference executor")
        return Outcome("mismatch", bad) if bad else Outcome("pass")
    if device_present(peer):
        got = run_naiad(p, peer)
        bad = compare(p, got, want, "the reference executor")
        return Outcome("mismatch", bad) if bad else Outcome("pass")
    compile_naiad(p, peer)
    return Outcome("compiled")


def run_seed(job: tuple) -> tuple[str, str]:
    """``(peer, seed, reduce)`` -> (label, report line); the unit of work of the command line
    (a module-level function, so worker processes can run it)."""
    from .generator import generate
    from .reducer import reduce_program
    from .seeds import generator_limits

    peer, seed, reduce, avoid_known = job
    avoid = known_tags(peer) if avoid_known else frozenset()
    p = generate(seed, avoid=avoid, **generator_limits(peer))
    out = run_case(p, peer)
    label = "known" if out.failed and out.known else out.status
    line = ""
    if out.failed:
        tags = ",".join(r.split(":", 1)[0] for r in out.known)
        line = f"seed {seed}: {label} {out.status}: {out.detail} [{tags}]"
        if reduce and not out.known:
            line += "\n" + reduce_program(p, peer, out).source()
    return label, line
