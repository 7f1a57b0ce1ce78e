"""Triton's tutorials, the same unmodified files run by naiad and by Triton, in one process.

    python bench/triton_tutorials.py /path/to/triton-tutorials [--only 03,06] [--out bench/RESULTS.md]
    python bench/triton_tutorials.py /path/to/triton-tutorials --smoke      # tiny sizes, any target

Each tutorial file is loaded twice: once with ``triton`` resolved to naiad (naiad's import hook)
and once with the real Triton (skipped when Triton is not installed). Only its *definitions* run
(imports, functions, classes, constants and the module-level assignments that do not call the
file's own functions): its demos and ``benchmark.run(...)`` calls are skipped, and an import that
fails (e.g. ``triton.experimental.gluon`` under naiad) is noted and skipped. Then, per kernel case below, the
same inputs go to both: outputs are checked against torch (and naiad's against Triton's), both
are timed with the same clock in the same run (CUDA events with an L2 flush on a GPU, the host
clock otherwise), and the registers/spills of every compiled configuration are reported. Every
failure is caught per case and recorded with its reason; the table always prints.

The files are never copied into naiad. ``--smoke`` uses tiny sizes so the whole table can be
produced on the reference backend (CPU torch tensors) in CI.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import math
import os
import statistics
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]


# -- loading a tutorial's definitions -----------------------------------------------------------
def _names_in(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _calls_in(node) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            while isinstance(f, ast.Attribute):
                f = f.value
            if isinstance(f, ast.Name):
                out.add(f.id)
    return out


def _is_main_guard(test) -> bool:
    return "__name__" in _names_in(test)


def _launching_functions(tree: ast.Module) -> set[str]:
    """The file's functions that launch a kernel (``kernel[grid](...)`` in their body, or a call
    of such a function): calling one at module level is a demo, not a definition."""
    bodies = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    launching = {name for name, node in bodies.items()
                 if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
                        for c in ast.walk(node))}
    changed = True
    while changed:   # callers of launching functions launch too
        changed = False
        for name, node in bodies.items():
            if name not in launching and _calls_in(node) & launching:
                launching.add(name)
                changed = True
    return launching


def definitions(tree: ast.Module) -> ast.Module:
    """The statements of a tutorial that define things (see the module docstring)."""
    launching = _launching_functions(tree)
    skipped: set[str] = set()

    def keep_block(stmts):
        out = []
        for st in stmts:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                out.append(_tolerant_import(st))
            elif isinstance(st, (ast.FunctionDef, ast.ClassDef)):
                out.append(st)
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                value = st.value
                bad = value is not None and ((_calls_in(value) & launching)
                                             or (_names_in(value) & skipped))
                if bad:
                    for t in targets:
                        skipped.update(_names_in(t))
                else:
                    out.append(st)
            elif isinstance(st, ast.If) and not _is_main_guard(st.test) \
                    and not (_names_in(st.test) & skipped):
                body = keep_block(st.body)
                orelse = keep_block(st.orelse)
                if body or orelse:
                    st.body = body or [ast.Pass()]
                    st.orelse = orelse
                    out.append(st)
            elif isinstance(st, ast.Try):
                out.append(st)
        return out

    new = ast.Module(body=keep_block(tree.body), type_ignores=[])
    return ast.fix_missing_locations(new)


def _tolerant_import(st):
    """``try: <import> except ImportError as e: _naiad_bench_missing.append(...)``."""
    handler = ast.parse("_naiad_bench_missing.append(repr(_e))").body
    return ast.copy_location(ast.Try(
        body=[st], handlers=[ast.ExceptHandler(type=ast.Name("ImportError", ast.Load()),
                                               name="_e", body=handler)],
        orelse=[], finalbody=[]), st)


def load_tutorial(path: Path, label: str, preset: dict | None = None) -> types.ModuleType:
    """Execute the definitions of ``path`` as module ``_tutorial_<label>_<stem>``; ``preset``
    globals stand in for module-level values that cannot be computed here (``DEVICE`` without
    a GPU, used as a default argument)."""
    source = path.read_text()
    tree = definitions(ast.parse(source, str(path)))
    name = f"_tutorial_{label}_{path.stem.replace('-', '_')}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module._naiad_bench_missing = []
    module.__dict__.update(preset or {})
    sys.modules[name] = module      # inspect.getsource and dataclasses look modules up
    for stmt in tree.body:   # one statement at a time: a failing one is noted, the rest load
        code = compile(ast.Module(body=[stmt], type_ignores=[]), str(path), "exec")
        try:
            exec(code, module.__dict__)
        except Exception as exc:   # noqa: BLE001 -- e.g. 09's cuBLAS handle from triton._C
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                raise
            module._naiad_bench_missing.append(
                f"line {stmt.lineno}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    return module


def load_both(path: Path, with_triton: bool, preset: dict | None = None) -> dict[str, Any]:
    """{"naiad": module or exception, "triton": module or exception or None}."""
    from naiad.compat import triton_alias

    out: dict[str, Any] = {}
    try:
        with triton_alias.aliased():
            out["naiad"] = load_tutorial(path, "naiad", preset)
    except BaseException as exc:   # noqa: BLE001 -- recorded, the table still prints
        out["naiad"] = exc
    if with_triton:
        try:
            out["triton"] = load_tutorial(path, "triton", preset)
        except BaseException as exc:  # noqa: BLE001
            out["triton"] = exc
    else:
        out["triton"] = None
    return out


# -- the cases ---------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    """One call of a tutorial's host function: ``inputs(torch, device, smoke) -> dict``,
    ``call(module, inputs) -> output(s)``, ``reference(torch, inputs) -> output(s)`` or None
    (then only naiad vs Triton is compared), tolerances."""

    tutorial: str
    name: str
    inputs: Callable
    call: Callable
    reference: Callable | None
    atol: float = 1e-2
    rtol: float = 1e-2
    check: Callable | None = None   # extra property check (out, inputs) -> None, raises


def _randn(torch, shape, device, dtype, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)


def _layer_norm_fwd_bwd(mod, inp):
    x = inp["x"].clone().requires_grad_(True)
    w = inp["w"].clone().requires_grad_(True)
    b = inp["b"].clone().requires_grad_(True)
    y = mod.LayerNorm.apply(x, (inp["x"].shape[-1],), w, b, 1e-5)
    y.backward(inp["dy"])
    return [y.detach(), x.grad, w.grad, b.grad]


def _layer_norm_ref(torch, inp):
    x = inp["x"].float().clone().requires_grad_(True)
    w = inp["w"].float().clone().requires_grad_(True)
    b = inp["b"].float().clone().requires_grad_(True)
    y = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
    y.backward(inp["dy"].float())
    dt = inp["x"].dtype
    return [y.detach().to(dt), x.grad.to(dt), w.grad.to(dt), b.grad.to(dt)]


def _attention(mod, inp, backward):
    q, k, v = (inp[n].clone().requires_grad_(backward) for n in "qkv")
    o = mod.attention(q, k, v, inp["causal"], inp["sm_scale"], False)
    if not backward:
        return o
    o.backward(inp["do"])
    return [o.detach(), q.grad, k.grad, v.grad]


def _attention_ref(torch, inp, backward):
    q, k, v = (inp[n].float().clone().requires_grad_(backward) for n in "qkv")
    n = q.shape[2]
    p = torch.matmul(q, k.transpose(2, 3)) * inp["sm_scale"]
    if inp["causal"]:
        mask = torch.tril(torch.ones((n, n), device=q.device))
        p[:, :, mask == 0] = float("-inf")
    o = torch.matmul(torch.softmax(p, dim=-1), v)
    dt = inp["q"].dtype
    if not backward:
        return o.to(dt)
    o.backward(inp["do"].float())
    return [o.detach().to(dt), q.grad.to(dt), k.grad.to(dt), v.grad.to(dt)]


def _attn_inputs(torch, device, smoke, causal, backward):
    z, h, n, d = (1, 2, 128, 64) if smoke else (4, 32, 4096, 64)
    inp = {c: _randn(torch, (z, h, n, d), device, torch.float16, 10 + i) * 0.5
           for i, c in enumerate("qkv")}
    inp.update(causal=causal, sm_scale=0.5)
    if backward:
        inp["do"] = _randn(torch, (z, h, n, d), device, torch.float16, 20)
    return inp


def _dropout_property(out, inp):
    x, p = inp["x"], inp["p"]
    kept = out != 0
    scaled = x / (1 - p)
    if not bool((out[kept] - scaled[kept]).abs().max() <= 1e-6) if kept.any() else False:
        raise AssertionError("kept elements are not x / (1 - p)")
    share = float(kept.float().mean())
    if not 0.3 < share < 0.7:
        raise AssertionError(f"{share:.2f} of the elements kept with p=0.5")


def _matmul_inputs(torch, device, smoke, m, n, k, dtype_name="float16", b_transposed=False):
    if smoke:
        m, n, k = 64, 64, 64
    a = _randn(torch, (m, k), device, torch.float16, 1)
    b = _randn(torch, (k, n), device, torch.float16, 2)
    dtype = getattr(torch, dtype_name)
    if dtype_name != "float16":
        a = a.to(dtype)
        b = b.T.contiguous().to(dtype).T if b_transposed else b.to(dtype)
    return {"a": a, "b": b}


def _mm_ref(torch, inp):
    return torch.matmul(inp["a"].float(), inp["b"].float()).to(torch.float16)


def cases(smoke: bool) -> list[Case]:
    """The kernel calls of tutorials 01-09 and 11 (10 needs block-scaled MMA hardware)."""
    out = [
        Case("01", "vector add", lambda t, d, s: {
            "x": _randn(t, (4096 if s else 98432 * 64,), d, t.float32, 1),
            "y": _randn(t, (4096 if s else 98432 * 64,), d, t.float32, 2)},
            lambda m, i: m.add(i["x"], i["y"]), lambda t, i: i["x"] + i["y"], 0, 0),
        Case("02", "fused softmax", lambda t, d, s: {
            "x": _randn(t, (64, 100) if s else (4096, 4096), d, t.float32, 3)},
            lambda m, i: m.softmax(i["x"]), lambda t, i: t.softmax(i["x"], dim=1), 1e-6, 1e-5),
        Case("03", "matmul fp16", lambda t, d, s: _matmul_inputs(t, d, s, 4096, 4096, 4096),
             lambda m, i: m.matmul(i["a"], i["b"]), _mm_ref, 1e-1 if not smoke else 1e-2, 1e-2),
        Case("03", "matmul fp8 e5m2",
             lambda t, d, s: _matmul_inputs(t, d, s, 4096, 4096, 4096, "float8_e5m2", True),
             lambda m, i: m.matmul(i["a"], i["b"]), _mm_ref, 1.0, 0.1),
        Case("04", "seeded dropout", lambda t, d, s: {
            "x": _randn(t, (1000 if s else 1 << 24,), d, t.float32, 4), "p": 0.5, "seed": 123},
            lambda m, i: m.seeded_dropout(i["x"], i["p"], i["seed"]), None, 0, 0,
            check=_dropout_property),
        Case("05", "layer norm fwd+bwd", lambda t, d, s: {
            "x": _randn(t, (32, 64) if s else (4096, 8192), d, t.float16, 5),
            "w": _randn(t, (64 if s else 8192,), d, t.float16, 6),
            "b": _randn(t, (64 if s else 8192,), d, t.float16, 7),
            "dy": _randn(t, (32, 64) if s else (4096, 8192), d, t.float16, 8) * 0.1},
            _layer_norm_fwd_bwd, _layer_norm_ref, 5e-2, 1e-2),
    ]
    for causal in (True, False):
        for bwd in (False, True):
            out.append(Case(
                "06", f"attention {'fwd+bwd' if bwd else 'fwd'} {'causal' if causal else 'full'}",
                lambda t, d, s, c=causal, b=bwd: _attn_inputs(t, d, s, c, b),
                lambda m, i, b=bwd: _attention(m, i, b),
                lambda t, i, b=bwd: _attention_ref(t, i, b), 2e-2 if not bwd else 5e-2, 1e-2))
    # Hopper, non-causal, warp_specialize=True: the forward makes its descriptors in the kernel
    out.append(Case("06", "attention fwd full (warp_specialize)",
                    lambda t, d, s: _attn_inputs(t, d, s, False, False),
                    lambda m, i: m.attention(i["q"], i["k"], i["v"], False, i["sm_scale"], True),
                    lambda t, i: _attention_ref(t, i, False), 2e-2, 1e-2))
    out += [
        Case("07", "asin (libdevice)", lambda t, d, s: {
            "x": t.rand((4096 if s else 98432,), generator=t.Generator().manual_seed(9)).to(d)},
            _asin, lambda t, i: t.asin(i["x"]), 1e-6, 1e-5),
        Case("08", "grouped gemm", lambda t, d, s: _group_inputs(t, d, s),
             lambda m, i: m.group_gemm_fn(i["A"], i["B"]),
             lambda t, i: [t.matmul(a.float(), b.float()).half() for a, b in zip(i["A"], i["B"])],
             1e-1, 1e-2),
        # in-kernel tl.make_tensor_descriptor from pointers loaded from memory (set_allocator)
        Case("08", "grouped gemm TMA", lambda t, d, s: _group_inputs(t, d, s, transposed_b=True),
             _group_gemm_tma,
             lambda t, i: [t.matmul(a.float(), b.float()).half() for a, b in zip(i["A"], i["B"])],
             1e-1, 1e-2),
    ]
    for fn in ("matmul", "matmul_persistent"):
        out.append(Case("09", fn, lambda t, d, s: _matmul_inputs(t, d, s, 8192, 8192, 512),
                        lambda m, i, f=fn: getattr(m, f)(i["a"], i["b"]), _mm_ref, 1e-1, 1e-2))
    for fn in ("matmul_tma", "matmul_tma_persistent", "matmul_descriptor_persistent"):
        out.append(Case("09", fn, lambda t, d, s: _matmul_inputs(t, d, s, 8192, 8192, 512),
                        lambda m, i, f=fn: getattr(m, f)(i["a"], i["b"].T.contiguous(), False),
                        _mm_ref, 1e-1, 1e-2))
    out.append(Case("11", "vector add (PDL)", lambda t, d, s: {
        "x": _randn(t, (4096 if s else 1 << 24,), d, t.float32, 11),
        "y": _randn(t, (4096 if s else 1 << 24,), d, t.float32, 12)},
        lambda m, i: m.add(i["x"], i["y"]), lambda t, i: i["x"] + i["y"], 0, 0))
    return out


def _asin(mod, inp):
    x = inp["x"]
    out = x.new_empty(x.shape)
    n = x.numel()
    mod.asin_kernel[(mod.triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
    return out


def _group_inputs(torch, device, smoke, transposed_b=False):
    sizes = [64] * 4 if smoke else [1024] * 4
    inp = {"A": [_randn(torch, (s, s), device, torch.float16, 30 + i) for i, s in
                 enumerate(sizes)],
           "B": [_randn(torch, (s, s), device, torch.float16, 40 + i) for i, s in
                 enumerate(sizes)]}
    if transposed_b:   # the TMA kernel reads B as [N, K]: transposed once, outside the timing
        inp["BT"] = [b.T.contiguous() for b in inp["B"]]
    return inp


def _group_gemm_tma(mod, inp):
    """Tutorial 08's TMA kernel on device arrays of pointers, sizes and strides built once per
    implementation (``group_gemm_tma_fn`` builds new ones per call, and the autotuner's key
    holds those tensors: Triton then re-tunes every call, 893 ms "per call" in RESULTS.md), so
    both sides time the kernel launch only."""
    torch = mod.torch
    state = inp.setdefault("_tma_state", {}).get(id(mod))
    if state is None:
        a_list, b_list = inp["A"], inp["BT"]
        dev = a_list[0].device
        c_list = [torch.empty((a.shape[0], b.shape[0]), device=dev, dtype=a.dtype)
                  for a, b in zip(a_list, b_list)]
        ptrs = [torch.tensor([t.data_ptr() for t in ts], device=dev)
                for ts in (a_list, b_list, c_list)]
        sizes = torch.tensor([v for a, b in zip(a_list, b_list)
                              for v in (a.shape[0], b.shape[0], a.shape[1])],
                             dtype=torch.int32, device=dev)
        lds = torch.tensor([v for a, b, c in zip(a_list, b_list, c_list)
                            for v in (a.stride(0), b.stride(0), c.stride(0))],
                           dtype=torch.int32, device=dev)
        state = inp["_tma_state"][id(mod)] = (ptrs, sizes, lds, c_list)
    ptrs, sizes, lds, c_list = state
    mod.triton.set_allocator(
        lambda size, align, stream: torch.empty(size, device=ptrs[0].device, dtype=torch.int8))
    mod.grouped_matmul_tma_kernel[lambda meta: (meta["NUM_SM"],)](
        *ptrs, sizes, lds, len(c_list), FP8=False, NUM_SM=mod.num_sms())
    return c_list


# -- checking and timing -------------------------------------------------------------------------
def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def max_error(torch, got, want, atol, rtol) -> tuple[bool, float]:
    """(all close, largest |got - want| / (atol + rtol * |want|))."""
    worst = 0.0
    ok = True
    for g, w in zip(_as_list(got), _as_list(want), strict=True):
        g, w = g.detach().float().cpu(), w.detach().float().cpu()
        if g.shape != w.shape:
            raise AssertionError(f"shape {tuple(g.shape)} != {tuple(w.shape)}")
        if torch.isnan(g).any() and not torch.isnan(w).any():
            return False, math.inf
        err = (g - w).abs() / (atol + rtol * w.abs() + 1e-30)
        err = torch.nan_to_num(err, nan=0.0)
        worst = max(worst, float(err.max()) if err.numel() else 0.0)
        ok = ok and bool(torch.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True))
    return ok, worst


class Clock:
    """Times a callable: CUDA events around each call with a 256 MB L2 flush before it (GPU),
    else the host clock. The same clock serves naiad and Triton."""

    def __init__(self, torch, device, reps: int):
        self.torch, self.reps = torch, reps
        self.cuda = str(device).startswith("cuda")
        self.flush = torch.empty(64 << 20, dtype=torch.int32, device=device) if self.cuda \
            else None

    def back_to_back(self, fn, calls: int | None = None) -> float | None:
        """Device ms per call with ``calls`` calls queued back to back (no flush, one event
        pair): the kernels' own time once host work overlaps them. Beside the per-call clock
        it tells host time the GPU waits for from time the kernels take. None off the GPU."""
        if not self.cuda:
            return None
        torch, calls = self.torch, calls or self.reps
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / calls

    def __call__(self, fn) -> float:
        torch = self.torch
        fn()
        if self.cuda:
            torch.cuda.synchronize()
            times = []
            for _ in range(self.reps):
                self.flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            return statistics.median(times)
        times = []
        for _ in range(self.reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def compiled_resources(module) -> list[str]:
    """``kernel[config]: regs/spills`` for every kernel the module compiled (naiad or Triton)."""
    rows = []
    for name, obj in sorted(vars(module).items()):
        base = obj
        while hasattr(base, "fn") and not hasattr(base, "arg_names") and base is not base.fn:
            base = base.fn
        while hasattr(base, "fn") and type(base).__name__ in ("Autotuner", "Heuristics"):
            base = base.fn
        for label, regs, spills in _naiad_kernels(base) + _triton_kernels(base):
            rows.append(f"{name}[{label}] {regs}r/{spills}s")
    return rows


def _safe_resources(module) -> list[str]:
    try:
        return compiled_resources(module)
    except Exception:  # noqa: BLE001 -- the row then lists every kernel
        return []


def _naiad_kernels(fn):
    rt = getattr(fn, "__dict__", {}).get("_naiad_runtime")
    if rt is None:
        return []
    out = []
    for cache in rt.caches.values():
        for entry in cache.values():
            k = entry.kernel
            cfg = ",".join(f"{n}={v}" for n, v in k.constexprs.items()
                           if n.isupper() or n.startswith("BLOCK"))
            cfg += f",w{k.metadata.get('num_warps', '?')}"
            out.append((cfg, k.n_regs, k.n_spills))
    return out


def _triton_kernels(fn):
    caches = getattr(fn, "device_caches", None)
    if not caches:
        return []
    out = []
    try:
        for entry in caches.values():
            kernel_cache = entry[0]
            for k in kernel_cache.values():
                meta = getattr(k, "metadata", None)
                cfg = f"w{getattr(meta, 'num_warps', '?')},s{getattr(meta, 'num_stages', '?')}"
                consts = getattr(k, "src", None)
                consts = getattr(consts, "constants", {}) if consts is not None else {}
                blocks = ",".join(f"{n[-1] if isinstance(n, tuple) else n}={v}"
                                  for n, v in consts.items() if "BLOCK" in str(n))
                out.append((f"{blocks},{cfg}" if blocks else cfg, getattr(k, "n_regs", "?"),
                            getattr(k, "n_spills", "?")))
    except Exception:  # noqa: BLE001 -- Triton internals differ between versions
        return out
    return out


def _tuners(module) -> dict:
    """The module's autotuners (naiad's or Triton's ``Autotuner``) by name."""
    return {name: obj for name, obj in sorted(vars(module).items())
            if type(obj).__name__ == "Autotuner"}


def _timings(tuner) -> dict:
    """Config -> timing of the tuner's last benchmark (naiad: ``timings``, Triton:
    ``configs_timings``; each run of the benchmark makes a new dict)."""
    got = getattr(tuner, "timings", None)
    if not isinstance(got, dict):
        got = getattr(tuner, "configs_timings", None)
    return got if isinstance(got, dict) else {}


def config_label(config) -> str:
    """``128x256x64 w8 s3`` (the BLOCK sizes in order), else every meta-parameter."""
    kwargs = dict(getattr(config, "kwargs", {}) or {})
    blocks = [str(v) for k, v in kwargs.items() if "BLOCK" in k]
    head = "x".join(blocks) if blocks else ",".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{head} w{getattr(config, 'num_warps', '?')} s{getattr(config, 'num_stages', '?')}"


def _ms_of(timing) -> float:
    return float(timing[0] if isinstance(timing, (list, tuple)) else timing)


def autotune_picks(module, before: dict) -> str:
    """The config each autotuner of ``module`` launched last, with its benchmark time and the
    runner-up's when it benchmarked during this case (``before``: ``id`` of each tuner's
    timings dict before the case), else "(cached)". Why: a tutorial's time is its pick's time,
    and a pick that flips between runs moves the ratio by more than either compiler's change."""
    out = []
    for name, tuner in _tuners(module).items():
        best = getattr(tuner, "best_config", None)
        if best is None:
            continue
        text = f"{name}: {config_label(best)}"
        timings = _timings(tuner)
        if timings and id(timings) != before.get(name) and best in timings:
            ranked = sorted(timings, key=lambda c: _ms_of(timings[c]))
            text += f" ({_ms_of(timings[best]):.4g} ms"
            if len(ranked) > 1:
                runner = ranked[1] if ranked[0] is best else ranked[0]
                text += f"; next {config_label(runner)} {_ms_of(timings[runner]):.4g} ms"
            text += f" of {len(timings)})"
        else:
            text += " (cached)"
        out.append(text)
    return "; ".join(out)


# -- one tutorial ------------------------------------------------------------------------------
@dataclasses.dataclass
class Row:
    tutorial: str
    case: str
    naiad: str = "-"          # "ok", "wrong (…)" or the failure reason
    triton: str = "-"
    naiad_ms: float | None = None
    triton_ms: float | None = None
    naiad_b2b: float | None = None   # Clock.back_to_back
    triton_b2b: float | None = None
    naiad_res: str = ""
    triton_res: str = ""
    naiad_pick: str = ""      # the autotuners' picks (autotune_picks)
    triton_pick: str = ""

    def ratio(self, kind: str = "ms") -> str:
        mine, theirs = getattr(self, f"naiad_{kind}"), getattr(self, f"triton_{kind}")
        if mine and theirs:
            return f"{theirs / mine:.2f}x"
        return "-"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    head = text[0] if text else ""
    for line in text:             # a naiad CompilationError's location line is more useful
        if ".py:" in line and "error" not in line.lower():
            break
    head = head.replace("|", "/")
    return f"{type(exc).__name__}: {head[:140]}"


def run_case(case: Case, mods: dict, torch, device, smoke, clock, naiad_target,
             case_timeout: float = 0) -> Row:
    row = Row(case.tutorial, case.name)
    import naiad

    try:
        inputs = case.inputs(torch, device, smoke)
    except Exception as exc:  # noqa: BLE001
        row.naiad = row.triton = f"inputs: {_reason(exc)}"
        return row
    want = None
    if case.reference is not None:
        try:
            want = case.reference(torch, inputs)
        except Exception as exc:  # noqa: BLE001
            row.naiad = row.triton = f"torch reference: {_reason(exc)}"
            return row
    outputs = {}
    for impl in ("naiad", "triton"):
        mod = mods.get(impl)
        if mod is None:
            setattr(row, impl, "not run" if impl == "triton" else "-")
            continue
        if isinstance(mod, BaseException):
            setattr(row, impl, f"load: {_reason(mod)}")
            continue
        ctx = naiad.target(naiad_target) if impl == "naiad" else _nullcontext()
        before = set(_safe_resources(mod))   # kernels earlier cases compiled: not this row's
        tuned_before = {n: id(_timings(t)) for n, t in _tuners(mod).items()}
        try:
            with ctx, _time_limit(case_timeout):
                got = case.call(mod, inputs)
                outputs[impl] = got
                status = "ok"
                if want is not None:
                    ok, worst = max_error(torch, got, want, case.atol, case.rtol)
                    if not ok:
                        status = f"WRONG vs torch (error {worst:.3g}x tolerance)"
                if case.check is not None:
                    case.check(got, inputs)
                ms = clock(lambda: case.call(mod, inputs))
                b2b = clock.back_to_back(lambda: case.call(mod, inputs))
            setattr(row, impl, status)
            setattr(row, f"{impl}_ms", ms)
            setattr(row, f"{impl}_b2b", b2b)
        except BaseException as exc:  # noqa: BLE001 -- recorded per kernel
            if isinstance(exc, KeyboardInterrupt):
                raise
            setattr(row, impl, _reason(exc))
            if os.environ.get("NAIAD_BENCH_TRACEBACK"):
                traceback.print_exc()
        try:
            new = [r for r in compiled_resources(mod) if r not in before]
            setattr(row, f"{impl}_res", "; ".join(new[:6]) or "(compiled by an earlier case)")
        except Exception as exc:  # noqa: BLE001
            setattr(row, f"{impl}_res", f"({_reason(exc)})")
        try:
            setattr(row, f"{impl}_pick", autotune_picks(mod, tuned_before))
        except Exception as exc:  # noqa: BLE001 -- Triton internals differ between versions
            setattr(row, f"{impl}_pick", f"({_reason(exc)})")
    if "naiad" in outputs and "triton" in outputs and row.naiad == "ok":
        try:
            ok, worst = max_error(torch, outputs["naiad"], outputs["triton"],
                                  case.atol or 1e-6, case.rtol or 1e-6)
            if not ok:
                row.naiad = f"differs from Triton (error {worst:.3g}x tolerance)"
        except Exception as exc:  # noqa: BLE001
            row.naiad = f"compare with Triton: {_reason(exc)}"
    return row


class CaseTimeout(Exception):
    """A case ran past ``--case-timeout`` (compile loops, autotuning, a hung interpreter)."""


class _time_limit:
    """Raises CaseTimeout in the main thread after ``seconds`` (POSIX alarm; no-op elsewhere)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        import signal

        if self.seconds and hasattr(signal, "SIGALRM"):
            def expire(signum, frame):
                raise CaseTimeout(f"ran longer than {self.seconds:g} s")
            self.previous = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        import signal

        if self.seconds and hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


# -- the table ---------------------------------------------------------------------------------
def table(rows: list[Row], header_note: str) -> str:
    lines = [header_note, "",
             "| tutorial | kernel | naiad | Triton | naiad ms | Triton ms | naiad speed "
             "(Triton time / naiad time) | back-to-back speed (no flush: device time) | "
             "naiad regs/spills | Triton regs/spills | naiad autotune pick | Triton autotune pick |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.tutorial} | {r.case} | {r.naiad} | {r.triton} | "
                     f"{_ms(r.naiad_ms)} | {_ms(r.triton_ms)} | {r.ratio()} | {r.ratio('b2b')} | "
                     f"{r.naiad_res or '-'} | {r.triton_res or '-'} | "
                     f"{r.naiad_pick or '-'} | {r.triton_pick or '-'} |")
    return "\n".join(lines)


def _ms(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tutorials", help="folder holding Triton's tutorial files")
    ap.add_argument("--only", default=None, help="comma-separated tutorial numbers: 03,06")
    ap.add_argument("--cases", default=None,
                    help="comma-separated case names to run (e.g. matmul_tma); default all")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (runs on the reference)")
    ap.add_argument("--target", default=None, help="naiad target (default: current)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions per kernel")
    ap.add_argument("--no-triton", action="store_true", help="run naiad only")
    ap.add_argument("--case-timeout", type=float, default=900,
                    help="seconds one implementation of one case may take (0: no limit)")
    ap.add_argument("--out", default=None, help="append the markdown table to this file")
    args = ap.parse_args(argv)

    import torch

    import naiad

    folder = Path(args.tutorials)
    files = {p.name[:2]: p for p in sorted(folder.glob("[0-9][0-9]-*.py"))}
    if not files:
        print(f"no tutorial files in {folder}", file=sys.stderr)
        return 2
    wanted = [w.strip() for w in args.only.split(",")] if args.only else sorted(files)
    target = args.target or str(naiad.get_target())
    with naiad.target(target):
        compiled = naiad.runtime.targets.current_state().spec.compiled
    device = "cuda" if compiled else "cpu"
    with_triton = not args.no_triton and importlib.util.find_spec("triton") is not None
    if with_triton and not compiled:
        os.environ.setdefault("TRITON_INTERPRET", "1")   # Triton on the CPU: its interpreter
    clock = Clock(torch, device, args.reps or (3 if args.smoke else 50))
    rows: list[Row] = []
    all_cases = cases(args.smoke)
    for number in wanted:
        path = files.get(number)
        tutorial_cases = [c for c in all_cases if c.tutorial == number and (
            not args.cases or c.name in args.cases.split(","))]
        if path is None or not tutorial_cases:
            rows.append(Row(number, "-", "no such tutorial" if path is None else
                            "no kernel case (needs block-scaled MMA hardware)"))
            continue
        mods = load_both(path, with_triton)
        for case in tutorial_cases:
            row = run_case(case, mods, torch, device, args.smoke, clock, target,
                           args.case_timeout)
            rows.append(row)
            print(f"{row.tutorial} {row.case}: naiad {row.naiad} ({_ms(row.naiad_ms)} ms, "
                  f"back-to-back {_ms(row.naiad_b2b)}), Triton {row.triton} "
                  f"({_ms(row.triton_ms)} ms, back-to-back {_ms(row.triton_b2b)})", flush=True)
            for impl, pick in (("naiad", row.naiad_pick), ("Triton", row.triton_pick)):
                if pick:
                    print(f"    {impl} autotune: {pick}", flush=True)
        missing = getattr(mods["naiad"], "_naiad_bench_missing", [])
        if missing:
            print(f"{number}: imports skipped under naiad: {'; '.join(missing)}")
    triton_version = "-"
    if with_triton:
        try:
            import triton as real_triton
            triton_version = real_triton.__version__
        except Exception:  # noqa: BLE001
            pass
    note = (f"Tutorials from `{folder}` on naiad target `{target}` vs Triton {triton_version}"
            f"{' (interpreter)' if with_triton and not compiled else ''}, device {device}, "
            f"{'smoke sizes' if args.smoke else 'full sizes'}, median of {clock.reps} "
            f"({'CUDA events, L2 flushed' if clock.cuda else 'host clock'}); command: "
            f"`python bench/triton_tutorials.py {' '.join(argv if argv is not None else sys.argv[1:])}`")
    text = table(rows, note)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
