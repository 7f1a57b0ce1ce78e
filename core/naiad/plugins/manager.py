"""The process-wide plugin manager: discovery through entry points, isolation of broken plugins.

``get_plugin_manager()`` builds (once, lazily) a :class:`pluggy.PluginManager` for the project
``naiad`` with every hook of :mod:`naiad.plugins.hookspecs`, then loads each entry point of the
group ``naiad.backends``. A plugin that fails to import, to register, or whose ``naiad_targets``
raises or returns garbage is *reported* (a :class:`PluginWarning` naming it, and an entry in
``manager.broken``) and left out; the other plugins load normally.

Every hook is called through ``pm.hook.<name>(...)`` (so a user's ``hookwrapper`` sees every
call); each plugin's hook functions are wrapped at registration by :class:`_Guard`, which keeps
one plugin from taking the others down (the policy per hook is in :data:`hookspecs.PHASES`):

* an observer (``naiad_stage_done``) that raises becomes a :class:`PluginWarning` naming it;
* a per-target hook (``naiad_options``, ``naiad_codegen``, ...) that raises for a target its
  plugin does not own is ignored with a warning; for its own target a naiad error (OptionError,
  DeviceError) passes through and any other exception becomes a ``PluginError`` naming it;
* a merged hook (``naiad_layouts``, ``naiad_llvm_attributes``) that raises is a ``PluginError``
  naming the plugin;
* a hook function whose name no hookspec declares (a misspelling) is refused at registration.

Tests and notebooks add plugins with :func:`register` / :func:`unregister`; both bump
:data:`generation`, which the runtime checks to drop what it derived from the old plugin set
(the targets table, launchers, loaded kernels).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import pluggy

from ..errors import NaiadError, PluginError
from . import hookspecs
from .contract import Codegen, Launcher, LLVMAttributes, Options, TargetSpec

#: what each hook must return (None aside); checked per plugin so the error names it.
_RESULT_TYPES = {"naiad_options": Options, "naiad_codegen": Codegen,
                 "naiad_launcher": Launcher, "naiad_llvm_attributes": LLVMAttributes}

ENTRY_POINT_GROUP = "naiad.backends"
#: comma-separated entry-point names that must not be loaded (e.g. a vendor plugin that misbehaves)
DISABLE_ENV = "NAIAD_DISABLE_PLUGINS"

#: bumped whenever the set of plugins changes; runtime caches compare it (cheap int compare).
generation = 0

_lock = threading.RLock()
_manager: "NaiadPluginManager | None" = None


class PluginWarning(UserWarning):
    """A plugin could not be loaded or misbehaved; naiad carries on without it."""


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that was left out, and why."""

    name: str
    where: str          # "import", "register", "naiad_targets"
    error: str          # "ModuleNotFoundError: No module named 'x'"
    source: str = ""    # entry point value ("pkg.module") or "registered"

    def __str__(self) -> str:
        src = f" ({self.source})" if self.source else ""
        return f"{self.name}{src}: {self.where} failed: {self.error}"


@dataclass(frozen=True)
class TargetEntry:
    """One backend in the targets table: its spec and the plugin that declared it."""

    spec: TargetSpec
    plugin_name: str


class NaiadPluginManager(pluggy.PluginManager):
    """pluggy's manager plus the bookkeeping naiad needs (broken plugins, entry-point origins)."""

    def __init__(self):
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.broken: list[BrokenPlugin] = []
        #: plugin name -> "entry point value [distribution version]" for those loaded from metadata
        self.origins: dict[str, str] = {}
        self._targets: dict[str, TargetEntry] | None = None
        self._declared: dict[str, list[TargetSpec]] = {}
        self._discovery_failures: list[tuple[str, BaseException]] = []

    # -- discovery ------------------------------------------------------------------------------
    def load_entrypoints(self, group: str = ENTRY_POINT_GROUP) -> int:
        """Load every entry point of ``group``; return how many plugins were registered.

        Like pluggy's ``load_setuptools_entrypoints`` but a failure of one plugin is reported and
        skipped instead of aborting the whole discovery.
        """
        disabled = {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}
        count = 0
        seen: set[str] = set()
        for ep in _entry_points(group):
            if ep.name in seen or self.get_plugin(ep.name) is not None or self.is_blocked(ep.name):
                continue
            seen.add(ep.name)
            if ep.name in disabled:
                continue
            dist = getattr(ep, "dist", None)
            origin = ep.value
            if dist is not None:
                origin += f" [{dist.metadata['Name']} {dist.version}]"
            try:
                plugin = ep.load()
            except BaseException as exc:  # noqa: BLE001 -- a plugin may raise anything on import
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                self._report(BrokenPlugin(ep.name, "import", _describe(exc), ep.value))
                continue
            if self._register_checked(plugin, ep.name, ep.value):
                self.origins[ep.name] = origin
                count += 1
        return count

    def _register_checked(self, plugin, name: str, source: str) -> bool:
        try:
            self.register(plugin, name=name)
        except Exception as exc:  # pluggy.PluginValidationError, ValueError (duplicate), ...
            self._report(BrokenPlugin(name, "register", _describe(exc), source))
            return False
        return True

    def _report(self, broken: BrokenPlugin) -> None:
        self.broken.append(broken)
        warnings.warn(f"naiad plugin {broken}", PluginWarning, stacklevel=3)

    # -- registration ---------------------------------------------------------------------------
    def register(self, plugin, name: str | None = None):
        result = super().register(plugin, name)
        if result is None:      # blocked name
            return result
        registered = self.get_name(plugin)
        try:
            self._check_known_hooks(plugin, registered)
        except Exception:
            pluggy.PluginManager.unregister(self, plugin, registered)
            raise
        for caller in self.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    _Guard.wrap(self, impl, caller.name)
        self._changed()
        return result

    def _check_known_hooks(self, plugin, name: str) -> None:
        """Refuse a hook function no hookspec declares (pluggy's ``check_pending`` for one
        plugin), naming the closest hook: a misspelled hook would otherwise never be called."""
        import difflib

        for caller in self.get_hookcallers(plugin) or ():
            if caller.has_spec():
                continue
            if all(i.optionalhook for i in caller.get_hookimpls() if i.plugin is plugin):
                continue
            close = difflib.get_close_matches(caller.name, hookspecs.HOOK_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PluginError(f"plugin {name!r} implements {caller.name!r}, which is not a naiad "
                              f"hook{hint}; known hooks: {', '.join(hookspecs.HOOK_NAMES)}")

    def unregister(self, plugin=None, name: str | None = None):
        name = name or (self.get_name(plugin) if plugin is not None else None)
        result = super().unregister(plugin, name)
        self.origins.pop(name or "", None)
        self._changed()
        return result

    def _changed(self) -> None:
        global generation
        self._targets = None
        generation += 1

    # -- targets --------------------------------------------------------------------------------
    def target_table(self) -> dict[str, TargetEntry]:
        """``backend name -> TargetEntry``. One ``naiad_targets`` call through ``pm.hook``; the
        guard records each plugin's answer, so a plugin raising (or returning garbage) is
        reported and left out without hiding the others' targets. A plugin registered later
        wins a backend name that two plugins declare (pluggy's LIFO order)."""
        with _lock:
            if self._targets is not None:
                return self._targets
            self._declared, self._discovery_failures = {}, []
            self.hook.naiad_targets()
            for name, exc in self._discovery_failures:
                self._report(BrokenPlugin(name, "naiad_targets", _describe(exc),
                                          self.origins.get(name, "registered")))
                self._set_blocked_quietly(name)
            table: dict[str, TargetEntry] = {}
            for impl in self.hook.naiad_targets.get_hookimpls():  # registration order
                for spec in self._declared.get(impl.plugin_name, ()):
                    if spec.backend in table:
                        warnings.warn(
                            f"naiad: backend {spec.backend!r} is declared by plugins "
                            f"{table[spec.backend].plugin_name!r} and {impl.plugin_name!r}; "
                            f"using {impl.plugin_name!r}", PluginWarning, stacklevel=2)
                    table[spec.backend] = TargetEntry(spec, impl.plugin_name)
            self._targets = table
            return table

    def owns(self, plugin_name: str, target) -> bool:
        """Whether ``plugin_name`` declared ``target``'s backend (the target table's owner)."""
        backend = getattr(target, "backend", None)
        entry = self.target_table().get(backend) if backend is not None else None
        return entry is not None and entry.plugin_name == plugin_name

    def _set_blocked_quietly(self, name: str) -> None:
        """Take a plugin whose discovery hook failed out of every hook (it is in ``broken``)."""
        plugin = self.get_plugin(name)
        if plugin is not None:
            pluggy.PluginManager.unregister(self, plugin, name)
            self.origins.pop(name, None)
            global generation
            generation += 1

    def plugin_of_backend(self, backend: str) -> str | None:
        entry = self.target_table().get(backend)
        return entry.plugin_name if entry else None


def _check_specs(specs) -> list[TargetSpec]:
    if specs is None:
        return []
    if isinstance(specs, TargetSpec):
        specs = [specs]
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, TargetSpec):
            raise TypeError(f"naiad_targets returned {type(spec).__name__}, expected TargetSpec")
        missing = [a for a in spec.archs if a not in spec.warp_sizes]
        if missing or spec.default_arch not in spec.archs:
            raise ValueError(f"TargetSpec {spec.backend!r}: archs {list(spec.archs)} must all have "
                             f"a warp size and include default_arch {spec.default_arch!r}")
    return specs


def _entry_points(group: str):
    eps = importlib.metadata.entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=group))
    return list(eps.get(group, []))  # Python < 3.10 style mapping


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# -- the process-wide manager -----------------------------------------------------------------
def create_plugin_manager(load_entrypoints: bool = True) -> NaiadPluginManager:
    """A new manager (not the process-wide one): for tests and tools that want their own."""
    pm = NaiadPluginManager()
    if load_entrypoints:
        pm.load_entrypoints(ENTRY_POINT_GROUP)
    return pm


def get_plugin_manager() -> NaiadPluginManager:
    """The process-wide manager, built on first use."""
    global _manager
    pm = _manager
    if pm is not None:
        return pm
    with _lock:
        if _manager is None:
            _manager = create_plugin_manager()
            global generation
            generation += 1
        return _manager


def reset_plugin_manager() -> None:
    """Forget the process-wide manager; the next use rebuilds it from the entry points."""
    global _manager, generation
    with _lock:
        _manager = None
        generation += 1


def register(plugin, name: str | None = None) -> str:
    """Register ``plugin`` (a module or object with ``@naiad.hookimpl`` functions) in the
    process-wide manager and return its name. Raises PluginError when pluggy rejects it."""
    pm = get_plugin_manager()
    try:
        registered = pm.register(plugin, name=name)
    except Exception as exc:
        raise PluginError(f"cannot register plugin {name or plugin!r}: {_describe(exc)}") from exc
    return registered or pm.get_name(plugin)


def unregister(plugin=None, name: str | None = None) -> None:
    """Remove a plugin (by object or by name) from the process-wide manager."""
    pm = get_plugin_manager()
    if plugin is None and name is None:
        raise PluginError("unregister() needs a plugin or a name")
    if plugin is None and pm.get_plugin(name) is None:
        raise PluginError(f"no plugin named {name!r} is registered")
    pm.unregister(plugin, name)


# -- helpers used by the compiler and the runtime -----------------------------------------------
def all_target_specs() -> list[TargetSpec]:
    """Every backend's TargetSpec, in plugin registration order."""
    return [entry.spec for entry in get_plugin_manager().target_table().values()]


class _Guard:
    """Wraps one plugin's implementation of one hook with naiad's isolation policy (see the
    module docstring). Wrappers (``hookwrapper=True`` / ``wrapper=True``) are left as they are."""

    @staticmethod
    def wrap(pm: "NaiadPluginManager", impl, hookname: str) -> None:
        if getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False):
            return
        phase = hookspecs.PHASES.get(hookname)
        if phase is None:
            return
        fn, plugin = impl.function, impl.plugin_name
        target_at = impl.argnames.index("target") if "target" in impl.argnames else None

        if hookname == "naiad_targets":
            def guarded(*args):
                try:
                    specs = _check_specs(fn(*args))
                except Exception as exc:  # noqa: BLE001 - reported, the plugin is left out
                    pm._discovery_failures.append((plugin, exc))
                    return None
                pm._declared[plugin] = specs
                return specs
        elif phase == "observe":
            def guarded(*args):
                try:
                    return fn(*args)
                except Exception as exc:  # noqa: BLE001 - an observer never breaks a compile
                    warnings.warn(f"naiad plugin {plugin!r} failed in {hookname} (ignored): "
                                  f"{_describe(exc)}", PluginWarning, stacklevel=2)
                    return None
        else:
            merged = hookname in hookspecs.MERGED_HOOKS

            expected = _RESULT_TYPES.get(hookname)

            def guarded(*args):
                try:
                    result = fn(*args)
                except Exception as exc:  # noqa: BLE001
                    target = args[target_at] if target_at is not None else None
                    if not merged and target is not None and not pm.owns(plugin, target):
                        warnings.warn(f"naiad plugin {plugin!r} failed in {hookname} for "
                                      f"target {target}, which it does not provide (ignored): "
                                      f"{_describe(exc)}", PluginWarning, stacklevel=2)
                        return None
                    if isinstance(exc, NaiadError):
                        raise       # a deliberate answer: OptionError, DeviceError, ...
                    raise PluginError(f"plugin {plugin!r} failed in {hookname}: "
                                      f"{_describe(exc)}") from exc
                if result is not None and expected is not None \
                        and not isinstance(result, expected):
                    raise PluginError(f"plugin {plugin!r}: {hookname} returned "
                                      f"{type(result).__name__}, expected "
                                      f"naiad.plugins.{expected.__name__}")
                return result

        guarded.__wrapped__ = fn
        impl.function = guarded


_fingerprints: dict[tuple[int, str], str] = {}


def plugin_fingerprint(name: str) -> str:
    """A hash identifying the code of plugin ``name``: its distribution's name and version when
    it came from an entry point, and the hash of the Python sources of its top-level package.
    Part of the on-disk kernel cache key, so editing a backend invalidates its cached kernels."""
    key = (generation, name)
    cached = _fingerprints.get(key)
    if cached is not None:
        return cached
    pm = get_plugin_manager()
    plugin = pm.get_plugin(name)
    h = hashlib.sha256(name.encode())
    h.update(pm.origins.get(name, "").encode())
    modname = getattr(plugin, "__name__", None) if isinstance(plugin, type(sys)) else None
    if modname is None and plugin is not None:
        modname = getattr(type(plugin), "__module__", None)
    top = sys.modules.get((modname or "").split(".")[0])
    files = _package_sources(top) if top is not None else []
    for path in files:
        h.update(str(path.name).encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            pass
    digest = h.hexdigest()
    _fingerprints[key] = digest
    return digest


def _package_sources(module) -> list[Path]:
    file = getattr(module, "__file__", None)
    if not file:
        return []
    path = Path(file)
    if path.name == "__init__.py":
        return sorted(path.parent.rglob("*.py"))
    return [path]
