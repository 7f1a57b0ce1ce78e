"""``kernel[grid](*args, **meta)``: bind, specialise, look up the caches, compile, launch.

The warm path (an in-memory hit) is the product's hot loop. ``kernel[grid]`` returns a function
generated for the kernel's parameter list (:mod:`naiad.runtime.warm_launch`), bound to ``grid``;
per call it does one context-variable read for the target, one call of the per-type binder for
each runtime argument, one flat-tuple dict lookup, the grid normalisation and the call of the
entry's pre-bound launch (``launcher.bind_launch`` when the backend offers it). Nothing is
hashed, parsed or imported there.

Everything else goes through :meth:`KernelRuntime.launch_slow`: it binds every argument with
naiad's error messages, builds the canonical key ``(argument keys, constexpr values and types,
sorted options)``, and on a miss normalises the options through the backend's ``naiad_options``
hook, looks up the on-disk cache (:mod:`naiad.runtime.cache`), compiles with
:func:`naiad.compiler.compile` when needed, and records the kernel in memory; the launcher loads
the binary on the first launch.
"""
from __future__ import annotations

import dataclasses

from .. import __version__
from ..language.debug import debug_mode as _debug_mode
from ..plugins import manager as _mgr
from . import cache as _cache
from .descriptor_args import has_descriptor, launch_with_descriptors
from .fingerprint import fingerprint_of
from .binders import launch_binder, warmup_binder
from .loaded import _Entry, _grid3, binary_result  # noqa: F401  (binary_result re-exported)
from .specialize import SPEC_DIV16, SPEC_ONE, ArgBinder, ArgumentError, value_key
from .targets import TargetState, current_state, state_for

_MISSING = object()
#: the key of a runtime parameter given None: it is compiled as a constexpr None (as Triton does)
NONE_KEY = ("none", 0)


@dataclasses.dataclass
class CacheStats:
    """Counters of one kernel's caches (``kernel.cache_info()``)."""

    hits: int = 0          # in-memory hits (warm launches and warmups)
    disk_hits: int = 0     # misses served by the on-disk cache
    compiles: int = 0      # misses that ran the compiler
    disk_writes: int = 0   # entries written to the on-disk cache
    launches: int = 0      # kernels handed to a launcher

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class KernelRuntime:
    """Launch machinery of one JITFunction: parameter layout, caches and statistics."""

    def __init__(self, fn):
        self.fn = fn
        names = list(fn.arg_names)
        constexprs = set(fn.constexpr_params)
        self.names = tuple(names)
        self.nparams = len(names)
        self.index = {n: i for i, n in enumerate(names)}
        self.rt_pos = tuple(i for i, n in enumerate(names) if n not in constexprs)
        self.ce_pos = tuple(i for i, n in enumerate(names) if n in constexprs)
        self.rt_names = tuple(names[i] for i in self.rt_pos)
        self.ce_names = tuple(names[i] for i in self.ce_pos)
        nospec = set()
        for item in fn.do_not_specialize:
            if isinstance(item, int):
                if not 0 <= item < len(names):
                    raise ArgumentError(f"do_not_specialize index {item} is out of range for "
                                        f"{fn.__name__}({', '.join(names)})")
                nospec.add(names[item])
            elif item in self.index:
                nospec.add(item)
            else:
                raise ArgumentError(f"do_not_specialize names {item!r}, which is not a "
                                    f"parameter of {fn.__name__}")
        self.nospec = tuple(n in nospec for n in self.rt_names)
        self.any_nospec = any(self.nospec)
        params = fn.signature.parameters.values()
        self.defaults = tuple(_MISSING if p.default is p.empty else p.default for p in params)
        self.caches: dict[TargetState, dict] = {}          # canonical key -> _Entry
        # per target: (binders by type, warm launch keys -> entry, warm warmup keys -> entry)
        self.plans: dict[TargetState, tuple[dict, dict, dict]] = {}
        self.stats = CacheStats()
        self.warm_launches = 0      # launches by the generated warm path (hits and launches)
        self.defaults_by_name = {n: d for n, d in zip(names, self.defaults) if d is not _MISSING}

    def cache_info(self) -> dict[str, int]:
        info = self.stats.as_dict()
        info["hits"] += self.warm_launches
        info["launches"] += self.warm_launches
        return info

    def meta(self, args: tuple, kwargs: dict) -> dict:
        """What a callable grid receives: every parameter's value (defaults included) and the
        options, by name."""
        meta = dict(zip(self.names, args))
        if len(args) < self.nparams and self.defaults_by_name:
            meta = {**self.defaults_by_name, **meta}
        meta.update(kwargs)
        return meta

    # -- argument binding -------------------------------------------------------------------------
    def bind(self, args: tuple, kwargs: dict) -> tuple[list | tuple, dict | None]:
        """Parameter values in order, and the remaining keywords (options)."""
        n = len(args)
        if not kwargs and n == self.nparams:
            return args, None
        if n > self.nparams:
            raise ArgumentError(f"{self.fn.__name__} takes {self.nparams} arguments "
                                f"({', '.join(self.names)}) but {n} were given")
        values = list(args)
        values.extend([_MISSING] * (self.nparams - n))
        options = None
        for name, value in kwargs.items():
            i = self.index.get(name)
            if i is None:
                if options is None:
                    options = {}
                options[name] = value
            elif i < n:
                raise ArgumentError(f"{self.fn.__name__} got multiple values for argument "
                                    f"{name!r}")
            else:
                values[i] = value
        for i in range(n, self.nparams):
            if values[i] is _MISSING:
                values[i] = self.defaults[i]
                if values[i] is _MISSING:
                    missing = [self.names[j] for j in range(n, self.nparams)
                               if values[j] is _MISSING]
                    raise ArgumentError(f"{self.fn.__name__} is missing argument(s) "
                                        f"{', '.join(missing)}")
        return values, options

    def _classify(self, binder: ArgBinder, values) -> tuple[tuple, list]:
        keys = []
        vals = []
        bind = binder.bind
        try:
            for i in self.rt_pos:
                v = values[i]
                if v is None:    # Triton: None makes the parameter a constexpr (None)
                    keys.append(NONE_KEY)
                    vals.append(None)
                    continue
                k, v = bind(v)
                keys.append(k)
                vals.append(v)
        except ArgumentError as exc:
            name = self.names[i]
            raise ArgumentError(f"{self.fn.__name__}: argument {name!r}: {exc}") from None
        if self.any_nospec:
            keys = [(k[0], 0) if ns else k for k, ns in zip(keys, self.nospec)]
        return tuple(keys), vals

    # -- the launch --------------------------------------------------------------------------------
    def launch(self, grid, *args, **kwargs):
        """``kernel[grid](*args, **kwargs)`` through the general path (``kernel[grid]`` itself
        uses the generated warm launch, which falls back to :meth:`launch_slow`)."""
        return self.launch_slow(grid, args, kwargs, None, None)

    def launch_slow(self, grid, args: tuple, kwargs: dict, stream, fast_key):
        """Bind and check everything, find or compile the kernel, launch it; record ``fast_key``
        (the warm path's key for this call shape, None if it has none) for the entry.

        ``stream`` is the one the warm path already took out of ``kwargs`` (a ``stream`` still
        in ``kwargs`` wins)."""
        fingerprint_of(self.fn).watch.check()   # a folded-in global rebound: StaleKernelError
        if has_descriptor(args, kwargs):
            return launch_with_descriptors(self.fn, grid, args, kwargs, stream)
        state = current_state()
        if kwargs and "stream" in kwargs:
            stream = kwargs.pop("stream")
        values, options = self.bind(args, kwargs)
        binder = state.binder or launch_binder(state)
        keys, vals = self._classify(binder, values)
        if self.ce_pos:   # values and their types: FLAG=True, FLAG=1 and FLAG=1.0 differ
            ce = tuple([values[i] for i in self.ce_pos])
            ce = (tuple(map(value_key, ce)), tuple(map(type, ce)))
        else:
            ce = ()
        key = (keys, ce, tuple(sorted(options.items())) if options else ())
        cache = self.caches.get(state)
        if cache is None:
            cache = self._new_cache(state)
        try:
            entry = cache.get(key)
        except TypeError:  # an unhashable constexpr or option value
            key = _hashable(key)
            entry = cache.get(key)
        if entry is None:
            entry = self._miss(state, cache, key, keys, values, options)
        else:
            self.stats.hits += 1
        if callable(grid):
            meta = dict(zip(self.names, values))
            if options:
                meta.update(options)
            grid = grid(meta)
        grid3 = _grid3(grid)
        if grid3 is None:
            return entry.kernel          # an empty grid launches nothing
        if entry.go is None:
            entry.load(state)
        if NONE_KEY in keys:    # parameters given None were compiled in as constexprs
            vals = [v for k, v in zip(keys, vals) if k is not NONE_KEY]
        entry.go(grid3, vals, stream)
        self.stats.launches += 1
        plan = self._plan(state, binder)  # the call was accepted: next time, the warm path
        if fast_key is not None:
            plan[1][fast_key] = entry
        return entry.kernel

    def _plan(self, state: TargetState, binder: ArgBinder) -> tuple[dict, dict, dict]:
        """The warm paths' plan for ``state`` (made anew when the launch binder changed)."""
        plan = self.plans.get(state)
        if plan is None or plan[0] is not binder.by_type:
            plan = self.plans[state] = (binder.by_type, {}, {})
        return plan

    def warmup(self, grid, args, kwargs, target=None):
        """Compile (and cache) the kernel for these arguments without launching it."""
        if target is not None:
            kwargs = {**kwargs, "target": target}
        return self.warmup_slow(args, kwargs, None)

    def warmup_slow(self, args, kwargs, fast_key):
        """``warmup`` through the general path (``kwargs`` may hold ``target`` and ``stream``);
        records ``fast_key`` (the warm warmup's key of this call shape, or None) for the entry
        when the launch binders key these arguments as the warmup binder does, so the warm
        warmup returns exactly what this path would."""
        fingerprint_of(self.fn).watch.check()
        kwargs = dict(kwargs)
        target = kwargs.pop("target", None)
        kwargs.pop("stream", None)
        state = state_for(target)
        values, options = self.bind(args, kwargs)
        keys, _ = self._classify(state.warmup_binder or warmup_binder(state), values)
        ce = tuple(values[i] for i in self.ce_pos)
        ce = (tuple(map(value_key, ce)), tuple(map(type, ce))) if ce else ()
        key = _hashable((keys, ce, tuple(sorted(options.items())) if options else ()))
        cache = self.caches.get(state)
        if cache is None:
            cache = self._new_cache(state)
        entry = cache.get(key)
        if entry is None:
            entry = self._miss(state, cache, key, keys, values, options)
        else:
            self.stats.hits += 1
        if target is None:
            self._record_warmup(state, values, keys, fast_key, entry)
        return entry.kernel

    def _record_warmup(self, state, values, keys, fast_key, entry) -> None:
        """Make the warm paths' plan (the warm warmup keys its next call with it) and remember
        ``fast_key`` -> ``entry`` in it, if the launch binders classify ``values`` as ``keys``;
        nothing when the target has no launcher here (compiling ahead of time for a device
        this machine lacks) or cannot launch these arguments."""
        try:
            binder = state.binder or launch_binder(state)
            launch_keys, _ = self._classify(binder, values)
        except Exception:   # noqa: BLE001 -- no launcher, or arguments it cannot launch
            return
        plan = self._plan(state, binder)
        if fast_key is not None and launch_keys == keys:
            plan[2][fast_key] = entry

    def _new_cache(self, state: TargetState) -> dict:
        # forget caches of targets resolved under an older plugin set (their launchers are gone)
        for old in [s for s in self.caches if s.generation != state.generation]:
            del self.caches[old]
        for old in [s for s in self.plans if s.generation != state.generation]:
            del self.plans[old]
        cache = self.caches[state] = {}
        return cache

    # -- the miss ----------------------------------------------------------------------------------
    def _miss(self, state, cache, key, keys, values, options) -> _Entry:
        signature = {n: k[0] for n, k in zip(self.rt_names, keys) if k is not NONE_KEY}
        specialization = {}
        for name, k in zip(self.rt_names, keys):
            if k is NONE_KEY:
                continue
            if k[1] == SPEC_DIV16:
                specialization[name] = {"divisibility": 16}
            elif k[1] == SPEC_ONE:
                specialization[name] = {"equal_to": 1}
        constexprs = {self.names[i]: values[i] for i in self.ce_pos}
        constexprs.update({n: None for n, k in zip(self.rt_names, keys) if k is NONE_KEY})
        kernel = self.compile(state, signature, constexprs, dict(options or {}), specialization)
        entry = _Entry(kernel, tuple(signature.values()))
        cache[key] = entry
        return entry

    def compile(self, state: TargetState, signature: dict, constexprs: dict, options: dict,
                specialization: dict):
        """The CompiledKernel for one specialisation: from the on-disk cache, else compiled."""
        from .. import compiler as _compiler

        normalized = _compiler.validated_options(_mgr.get_plugin_manager(), state.target,
                                                 options)
        components = self.disk_key_components(state, signature, constexprs, options,
                                              normalized, specialization)
        disk_key = _cache.digest_of(components) if components is not None else None
        if disk_key is not None:
            found = _cache.load_kernel(disk_key)
            if found is not None:
                self.stats.disk_hits += 1
                return _compiler.CompiledKernel(
                    found["name"], state.target, dict(signature), dict(constexprs),
                    normalized, asm=found["asm"], binary_stage=found["binary_stage"],
                    metadata=found["metadata"], arg_names=tuple(self.names))
        kernel = _compiler.compile(self.fn, signature, constexprs, target=state.target,
                                   options=normalized, specialization=specialization)
        self.stats.compiles += 1
        if disk_key is not None and _cache.store_kernel(
                disk_key, kernel.name, kernel.asm, kernel.binary_stage, kernel.metadata,
                described=components):
            self.stats.disk_writes += 1
        return kernel

    def disk_key_components(self, state, signature, constexprs, options, normalized,
                            specialization) -> dict | None:
        """Everything that decides the compiled binary, as plain data; None when a value has no
        process-independent identity (such a kernel stays in the in-memory cache only)."""
        ce = {name: _cache.stable_repr(v) for name, v in constexprs.items()}
        opts = _options_repr(normalized, options)
        if opts is None or None in ce.values():
            return None
        return {
            "naiad": __version__,
            "naiad_source": _cache.naiad_source_hash(),
            "kernel": f"{self.fn.__module__}.{self.fn.__qualname__}",
            "source": _cache.function_fingerprint(self.fn),
            # A compiled kernel quotes its source locations (runtime errors, remarks, device
            # asserts), so a copy of the code in another file, or moved lines, compile anew
            # rather than name a place the code no longer is.
            "locations": [list(loc) for loc in _cache.fingerprint_of(self.fn).locations],
            "signature": signature,
            "constexprs": ce,
            "specialization": specialization,
            "options": opts,
            "target": state.name,
            "plugin": _mgr.plugin_fingerprint(state.plugin_name),
            "toolchain": state.toolchain_hash(),
            "debug": _debug_mode(self.fn),   # device asserts are compiled in only then
        }


def _options_repr(normalized, raw: dict):
    if normalized is None:
        items = raw
    elif dataclasses.is_dataclass(normalized) and not isinstance(normalized, type):
        items = {f.name: getattr(normalized, f.name) for f in dataclasses.fields(normalized)}
    elif isinstance(normalized, dict):
        items = normalized
    elif hasattr(normalized, "__dict__"):
        items = dict(vars(normalized))
    else:
        return _cache.stable_repr(normalized)
    out = {}
    for k, v in items.items():
        r = _cache.stable_repr(v)
        if r is None:
            return None
        out[str(k)] = r
    return out


def _hashable(value):
    """A hashable stand-in for a cache key holding lists, dicts or other unhashable values."""
    try:
        hash(value)
        return value
    except TypeError:
        pass
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    return (type(value).__qualname__, repr(value))


def runtime_of(fn) -> KernelRuntime:
    """The KernelRuntime of a JITFunction (created on first use)."""
    rt = fn.__dict__.get("_naiad_runtime")
    if rt is None:
        rt = KernelRuntime(fn)
        fn._naiad_runtime = rt
    return rt


def warm_launch_of(fn):
    """The generated launch function of a JITFunction (``fn[grid]`` is it bound to grid)."""
    launch = fn.__dict__.get("_naiad_launch")
    if launch is None:
        from .warm_launch import make_warm_launch

        launch = fn._naiad_launch = make_warm_launch(runtime_of(fn))
    return launch


def warm_warmup_of(fn):
    """The generated ``warmup(args, kwargs)`` of a JITFunction (``fn.warmup(...)`` calls it)."""
    warmup = fn.__dict__.get("_naiad_warmup")
    if warmup is None:
        from .warm_launch import make_warm_warmup

        warmup = fn._naiad_warmup = make_warm_warmup(runtime_of(fn))
    return warmup
