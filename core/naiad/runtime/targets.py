"""Which target a kernel compiles and runs for.

Precedence, highest first: a ``with naiad.target(...)`` block (per thread / asyncio task, through a
context variable), ``naiad.set_target(...)``, the ``NAIAD_TARGET`` environment variable (read when
this module is imported), then autodetection: the first backend whose ``detect_arch()`` finds a
device here, else ``reference``.

A target is written ``backend`` or ``backend:arch`` (``reference``, ``nvidia``, ``nvidia:sm_90``,
``amd:gfx942``) or given as a :class:`naiad.plugins.Target`. A bare backend name picks the arch of
the device present here, else the backend's default arch.

Resolved targets are :class:`TargetState` objects, cached until the plugin set changes; they also
carry what the runtime acquires lazily per target (the launcher, the codegen's toolchain hash).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import warnings

from ..errors import DeviceError, TargetError
from ..plugins import manager as _mgr
from ..plugins.contract import Target, TargetSpec

ENV_VAR = "NAIAD_TARGET"
#: the environment's choice, read once at import as documented.
_env_request: str | None = os.environ.get(ENV_VAR, "").strip() or None

_context: contextvars.ContextVar["TargetState | None"] = contextvars.ContextVar(
    "naiad_target", default=None)
_lock = threading.RLock()
_default_request: "str | Target | None" = None   # set_target()
_default_state: "TargetState | None" = None       # resolved default (request, env or autodetect)
_states: dict = {}                                # request -> TargetState (one plugin generation)
_states_generation = -1
_detected: dict[str, str | None] = {}             # backend -> detected arch (one generation)


class TargetState:
    """A resolved target and the per-target runtime objects derived from it."""

    __slots__ = ("target", "spec", "name", "plugin_name", "generation", "_launcher",
                 "_toolchain_hash", "binder", "warmup_binder", "__weakref__")

    def __init__(self, target: Target, spec: TargetSpec, plugin_name: str, generation: int):
        self.target = target
        self.spec = spec
        self.name = str(target)
        self.plugin_name = plugin_name
        self.generation = generation
        self._launcher = None
        self._toolchain_hash = None
        self.binder = None  # naiad.runtime.specialize.ArgBinder, set by the launch code
        self.warmup_binder = None   # its keys-only twin for warmup(), set likewise

    @property
    def launcher(self):
        """The backend's Launcher for this target (asked once). Raises DeviceError when none."""
        launcher = self._launcher
        if launcher is None:
            launcher = _mgr.get_plugin_manager().hook.naiad_launcher(target=self.target)
            if launcher is None:
                raise DeviceError(f"no plugin provides a launcher for target {self.name} "
                                  f"(backend plugin {self.plugin_name!r} implements no "
                                  f"naiad_launcher for it)")
            self._launcher = launcher
        return launcher

    def toolchain_hash(self) -> str:
        """The codegen's toolchain hash ("" for interpreted targets); asked once."""
        if self._toolchain_hash is None:
            value = ""
            if self.spec.compiled:
                codegen = _mgr.get_plugin_manager().hook.naiad_codegen(target=self.target)
                if codegen is not None:
                    value = str(codegen.toolchain_hash())
            self._toolchain_hash = value
        return self._toolchain_hash

    def __repr__(self) -> str:
        return f"TargetState({self.name})"


# -- parsing ------------------------------------------------------------------------------------
def available_target_names() -> list[str]:
    """Every spelling a user can pick, e.g. ``["reference", "nvidia:sm_80", "nvidia:sm_90"]``."""
    names = []
    for entry in _mgr.get_plugin_manager().target_table().values():
        spec = entry.spec
        if len(spec.archs) == 1 and not spec.compiled:
            names.append(spec.backend)
        else:
            names.extend(f"{spec.backend}:{arch}" for arch in spec.archs)
    return names


def _available() -> str:
    names = available_target_names()
    text = f"available targets: {', '.join(names) if names else '(none)'}"
    broken = _mgr.get_plugin_manager().broken
    if broken:
        text += f" (plugins that failed to load: {', '.join(b.name for b in broken)})"
    return text


def _detect(spec: TargetSpec) -> str | None:
    if spec.backend in _detected:
        return _detected[spec.backend]
    try:
        arch = spec.detect_arch()
    except Exception as exc:  # noqa: BLE001 -- the contract says it must not raise; be safe
        warnings.warn(f"naiad: {spec.backend}.detect_arch() raised {type(exc).__name__}: {exc}",
                      _mgr.PluginWarning, stacklevel=3)
        arch = None
    if arch is not None and arch not in spec.warp_sizes:
        warnings.warn(f"naiad: a {spec.backend} device of arch {arch!r} is present but the "
                      f"plugin supports only {', '.join(spec.archs)}", _mgr.PluginWarning,
                      stacklevel=3)
        arch = None
    _detected[spec.backend] = arch
    return arch


def _parse(request, origin: str = "") -> TargetState:
    pm = _mgr.get_plugin_manager()
    table = pm.target_table()
    where = f" (from {origin})" if origin else ""
    if isinstance(request, Target):
        backend, arch = request.backend, request.arch
    elif isinstance(request, str):
        text = request.strip()
        backend, _, arch = text.partition(":")
        backend, arch = backend.strip(), (arch.strip() or None)
    else:
        raise TargetError(f"a target is a string such as 'reference' or 'nvidia:sm_90', or a "
                          f"naiad Target, not {type(request).__name__}{where}")
    entry = table.get(backend)
    if entry is None:
        raise TargetError(f"unknown target {str(request)!r}{where}; {_available()}")
    spec = entry.spec
    if arch is None:
        arch = _detect(spec) if spec.compiled else None
        arch = arch or spec.default_arch
    if arch not in spec.warp_sizes:
        raise TargetError(f"unknown architecture {arch!r} for backend {backend!r} in target "
                          f"{str(request)!r}{where}; {_available()}")
    if isinstance(request, Target) and request.warp_size == spec.warp_sizes[arch]:
        target = request
    else:
        target = Target(backend, arch, spec.warp_sizes[arch])
    return TargetState(target, spec, entry.plugin_name, _mgr.generation)


def _fresh_generation() -> None:
    """Drop every cached resolution when the plugin set changed since they were made."""
    global _states_generation, _default_state
    _mgr.get_plugin_manager().target_table()  # may bump the generation (broken plugins)
    if _states_generation != _mgr.generation:
        _states.clear()
        _detected.clear()
        _default_state = None
        _states_generation = _mgr.generation


def state_for(request, origin: str = "") -> TargetState:
    """The TargetState for ``request`` (None: the current target)."""
    if request is None:
        return current_state()
    with _lock:
        _fresh_generation()
        try:
            state = _states.get(request)
        except TypeError:  # unhashable request: let _parse produce the error
            state = None
        if state is None:
            state = _parse(request, origin)
            _states[request] = state
            if isinstance(request, Target):
                _states.setdefault(state.name, state)
        return state


def _autodetect() -> TargetState:
    table = _mgr.get_plugin_manager().target_table()
    for entry in table.values():
        if entry.spec.compiled and not entry.spec.unavailable and _detect(entry.spec) is not None:
            return state_for(entry.spec.backend)
    if "reference" in table:
        return state_for("reference")
    for entry in table.values():
        if not entry.spec.compiled:
            return state_for(entry.spec.backend)
    raise TargetError(f"no naiad target is usable on this machine: no device was detected and "
                      f"no interpreter backend (such as 'reference') is installed; {_available()}")


def current_state() -> TargetState:
    """The TargetState in force here (the warm launch path calls this: keep it cheap)."""
    state = _context.get()
    if state is not None:
        if state.generation == _mgr.generation:
            return state
        return state_for(state.target, "a naiad.target() block")
    state = _default_state
    if state is not None and state.generation == _mgr.generation:
        return state
    return _resolve_default()


def _resolve_default() -> TargetState:
    global _default_state
    with _lock:
        _fresh_generation()
        if _default_request is not None:
            state = state_for(_default_request, "naiad.set_target()")
        elif _env_request is not None:
            state = state_for(_env_request, f"the environment variable {ENV_VAR}")
        else:
            state = _autodetect()
        _default_state = state
        return state


# -- public API ---------------------------------------------------------------------------------
def resolve_target(target=None) -> tuple[Target, TargetSpec]:
    """``(Target, TargetSpec)`` for ``target`` (None: the current target). Raises TargetError for
    an unknown backend or arch, listing the available targets."""
    state = state_for(target)
    return state.target, state.spec


def get_target() -> Target:
    """The current target."""
    return current_state().target


def set_target(target) -> Target | None:
    """Make ``target`` the process-wide default (None: back to NAIAD_TARGET / autodetection).
    Validated now: an unknown target raises TargetError."""
    global _default_request, _default_state
    with _lock:
        if target is None:
            _default_request, _default_state = None, None
            return None
        state = state_for(target, "naiad.set_target()")
        _default_request, _default_state = target, state
        return state.target


@contextlib.contextmanager
def target(target):
    """``with naiad.target("nvidia:sm_90"):`` -- the target for launches and compiles inside the
    block (this thread / task only); the previous choice is restored on exit, even on error."""
    state = state_for(target, "naiad.target()")
    token = _context.set(state)
    try:
        yield state.target
    finally:
        _context.reset(token)
