"""A stub backend plugin and a stand-in compiler for testing the runtime in isolation.

The runtime's job (binding, specialisation, caches, launch plumbing) does not depend on what the
compiler produces, so these tests replace :func:`naiad.compiler.compile` with a recorder whose
"tile IR" spells out exactly what it was asked to compile. End-to-end tests on the reference
executor live in ``test_runtime_reference.py``.

Importable from subprocesses too (``PYTHONPATH`` += this directory): :func:`install` sets the
whole stub up in a fresh process.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time

import naiad
from naiad.plugins import Codegen, Launcher, Options, TargetSpec, hookimpl


@dataclasses.dataclass(frozen=True)
class StubOptions(Options):
    num_warps: int = 4
    num_stages: int = 3
    flavor: str = "plain"


class RecordingLauncher(Launcher):
    """Records loads and launches; ``sleep_ms`` metadata makes a launch take that long."""

    def __init__(self, device_pointers: bool = False):
        self.loads: list[dict] = []
        self.launches: list[dict] = []
        self.syncs = 0
        self.device_pointers = device_pointers
        self._sleep: dict = {}

    def load(self, result, kernel_name):
        handle = ("handle", kernel_name, len(self.loads))
        self.loads.append({"name": kernel_name, "binary_stage": result.binary_stage,
                           "binary": result.stages[result.binary_stage],
                           "metadata": dict(result.metadata)})
        self._sleep[handle] = float(result.metadata.get("sleep_ms", 0.0))
        return handle

    def launch(self, handle, grid, num_warps, shared_bytes, args, arg_types, stream=None):
        self.launches.append({"handle": handle, "grid": grid, "num_warps": num_warps,
                              "shared": shared_bytes, "args": list(args),
                              "arg_types": tuple(arg_types), "stream": stream,
                              "snapshots": [a.copy() if hasattr(a, "copy") and hasattr(a, "dtype")
                                            else a for a in args]})
        delay = self._sleep.get(handle, 0.0)
        if delay:
            time.sleep(delay / 1e3)

    def synchronize(self):
        self.syncs += 1

    def data_pointer(self, obj):
        if self.device_pointers and isinstance(obj, FakeDeviceArray):
            return obj.ptr
        return None


class FakeDeviceArray:
    """What a GPU backend's device array looks like to the runtime: a dtype and an address."""

    def __init__(self, ptr: int, dtype):
        import numpy as np

        self.ptr = ptr
        self.dtype = np.dtype(dtype)
        self.shape = (16,)


class StubBackend:
    """A backend plugin: targets, options, launcher (and a codegen when ``compiled``)."""

    def __init__(self, backend: str = "stub", compiled: bool = False, archs=("v1", "v2"),
                 warp_sizes=None, detect=None):
        self.backend = backend
        self.compiled = compiled
        self.archs = tuple(archs)
        self.warp_sizes = warp_sizes or {a: 32 * (i + 1) for i, a in enumerate(self.archs)}
        self.detect = detect or (lambda: None)
        self.launcher = RecordingLauncher(device_pointers=compiled)

    @hookimpl
    def naiad_targets(self):
        return [TargetSpec(self.backend, self.archs, self.warp_sizes, self.archs[0],
                           detect_arch=self.detect, compiled=self.compiled,
                           description=f"stub backend {self.backend}")]

    @hookimpl
    def naiad_options(self, target, options):
        if target.backend != self.backend:
            return None
        known = {f.name for f in dataclasses.fields(StubOptions)}
        bad = set(options) - known
        if bad:
            raise naiad.OptionError(f"unknown option(s) for {target}: {', '.join(sorted(bad))}")
        warps = options.get("num_warps", 4)
        if warps < 1 or warps & (warps - 1):
            raise naiad.OptionError(f"num_warps must be a power of two, got {warps}")
        return StubOptions(**options)

    @hookimpl
    def naiad_launcher(self, target):
        return self.launcher if target.backend == self.backend else None

    @hookimpl
    def naiad_codegen(self, target):
        if target.backend != self.backend or not self.compiled:
            return None
        return _StubCodegen()


class _StubCodegen(Codegen):
    target_info = None

    def toolchain_hash(self):
        return "stub-toolchain-1"

    def compile_llvm(self, llvm_ir, kernel_name, options):
        raise NotImplementedError("the stub backend's kernels come from FakeCompiler")


class FakeCompiler:
    """Stands in for naiad.compiler.compile; its tile text spells out every input."""

    def __init__(self, delay_s: float = 0.0, sleep_ms=None):
        self.calls: list[dict] = []
        self.delay_s = delay_s
        self.sleep_ms = sleep_ms or {}   # BLOCK value -> launch duration in ms

    def __call__(self, fn, signature, constexprs=None, target=None, options=None,
                 specialization=None):
        from naiad.compiler import CompiledKernel, _normalize_signature
        from naiad.runtime.targets import resolve_target

        constexprs = dict(constexprs or {})
        signature = _normalize_signature(fn, signature, constexprs)
        options = _explicit(options)
        specialization = dict(specialization or {})
        tgt, spec = resolve_target(target)
        self.calls.append({"fn": fn.__name__, "signature": dict(signature),
                           "constexprs": constexprs, "options": options,
                           "specialization": specialization, "target": str(tgt)})
        if self.delay_s:
            time.sleep(self.delay_s)
        text = json.dumps({"kernel": fn.__name__, "signature": signature,
                           "constexprs": {k: repr(v) for k, v in constexprs.items()},
                           "specialization": specialization, "options": options},
                          sort_keys=True)
        metadata = {"num_warps": options.get("num_warps", 4), "shared": 0}
        block = constexprs.get("BLOCK")
        if block in self.sleep_ms:
            metadata["sleep_ms"] = self.sleep_ms[block]
        ck = CompiledKernel(fn.__name__, tgt, dict(signature), constexprs, options,
                            asm={"tile": text}, binary_stage="tile", metadata=metadata)
        if spec.compiled:
            ck.asm["stubbin"] = b"\x7fSTUB" + text.encode()
            ck.binary_stage = "stubbin"
        return ck


def _explicit(options) -> dict:
    """The options that differ from their defaults: what the user asked for (the compiler now
    receives the validated options object)."""
    if isinstance(options, Options):
        defaults = type(options)()
        return {k: v for k, v in options.as_dict().items() if getattr(defaults, k) != v}
    return dict(options or {})


def install(backend: str = "stub", compiled: bool = False, delay_s: float = 0.0,
            sleep_ms=None):
    """Register a StubBackend in the process-wide manager and patch in a FakeCompiler
    (for subprocess tests; in-process tests use the fixtures of conftest.py)."""
    import naiad.compiler
    from naiad.plugins import manager

    plugin = StubBackend(backend, compiled=compiled)
    manager.register(plugin, name=f"{backend}-plugin")
    fake = FakeCompiler(delay_s=delay_s, sleep_ms=sleep_ms)
    naiad.compiler.compile = fake
    return plugin, fake


_HERE = os.path.dirname(os.path.abspath(__file__))


def stub_env(cache_dir) -> dict:
    """Environment for a subprocess that imports naiad_stub_backend and uses ``cache_dir``."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(_HERE))
    paths = [_HERE] + [os.path.join(root, p) for p in
                      ("core", "backends/reference", "backends/nvidia", "backends/amd")]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    env["NAIAD_CACHE_DIR"] = str(cache_dir)
    env.pop("NAIAD_TARGET", None)
    return env
