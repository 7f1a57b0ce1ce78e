"""``@naiad.autotune`` and ``@naiad.heuristics``: Triton's meta-parameter decorators.

Both wrap a kernel (a JITFunction or another wrapper, so they stack) and are launched the same
way, ``kernel[grid](*args, **meta)``. The autotuner benchmarks every :class:`Config` once per
value of its ``key`` arguments (plus the dtypes of the array arguments) and the target, keeps the
fastest in memory and on disk (``<cache>/autotune/<hash>.json``), so a second process launches
the tuned config without benchmarking again.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import NaiadError, OptionError
from . import cache as _cache
from .targets import current_state


#: dtype object -> its text: ``str`` of a numpy dtype costs ~10 us, paid per array argument on
#: every autotuned launch (the key); the dtype objects themselves are hashable
_DTYPE_TEXT: dict[Any, str] = {}


#: argument types that never carry an array dtype (skipped by the key without two hasattr)
_PLAIN_TYPES = frozenset({int, float, bool, str, type(None), tuple, list})


def _dtype_text(dtype) -> str:
    text = _DTYPE_TEXT.get(dtype)
    if text is None:
        text = _DTYPE_TEXT[dtype] = str(dtype)
    return text


class Config:
    """One point of the search space: meta-parameters (constexprs) and launch options."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3,
                 pre_hook: Callable | None = None, **options):
        if not isinstance(kwargs, dict):
            raise OptionError(f"Config takes a dict of meta-parameters, got {kwargs!r}")
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.pre_hook = pre_hook
        self.options = dict(options)   # backend-specific (e.g. waves_per_eu)

    def all_kwargs(self) -> dict[str, Any]:
        """Meta-parameters and options as launch keywords."""
        out = dict(self.kwargs)
        out.update(self.options)
        if self.num_warps is not None:
            out["num_warps"] = self.num_warps
        if self.num_stages is not None:
            out["num_stages"] = self.num_stages
        return out

    def describe(self) -> dict[str, str]:
        """Stable text of every field (the on-disk record and the cache key use it)."""
        return {k: _cache.stable_repr(v) or repr(v) for k, v in sorted(self.all_kwargs().items())}

    def __eq__(self, other):
        return isinstance(other, Config) and self.describe() == other.describe()

    def __hash__(self):
        return hash(tuple(self.describe().items()))

    def __repr__(self) -> str:
        body = ", ".join(f"{k}: {v!r}" for k, v in self.all_kwargs().items())
        return f"Config({body})"


class KernelInterface:
    """What every launchable kernel offers: ``kernel[grid](...)`` and ``kernel.run(...)``."""

    fn: Any

    def __getitem__(self, grid):
        return functools.partial(self._launch_with_grid, grid)

    def _launch_with_grid(self, grid, *args, **kwargs):
        return self.run(*args, grid=grid, **kwargs)

    def run(self, *args, grid, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def base_fn(self):
        """The JITFunction at the bottom of the decorator stack."""
        fn = self.fn
        while not hasattr(fn, "constexpr_params"):
            fn = fn.fn
        return fn

    @property
    def arg_names(self) -> list[str]:
        return self.base_fn.arg_names

    @property
    def __name__(self):
        return self.base_fn.__name__

    def warmup(self, *args, grid=(1,), **kwargs):
        return self.fn.warmup(*args, grid=grid, **kwargs)

    def named_arguments(self, args, kwargs) -> dict[str, Any]:
        """Parameter name -> value for the positional args, plus every keyword."""
        names = self.arg_names
        if len(args) > len(names):
            raise OptionError(f"{self.__name__} takes {len(names)} arguments, got {len(args)}")
        out = dict(zip(names, args))
        out.update(kwargs)
        return out


class Heuristics(KernelInterface):
    """Computes meta-parameters from the other arguments before each launch."""

    def __init__(self, fn, values: dict[str, Callable[[dict], Any]]):
        self.fn = fn
        self.values = dict(values)

    def run(self, *args, grid, **kwargs):
        named = self.named_arguments(args, kwargs)
        for name, rule in self.values.items():
            kwargs[name] = named[name] = rule(named)
        return self.fn.run(*args, grid=grid, **kwargs)


def heuristics(values: dict[str, Callable[[dict], Any]]):
    """``@naiad.heuristics({"BLOCK": lambda args: naiad.next_power_of_2(args["n"])})``."""
    if not isinstance(values, dict) or not all(callable(v) for v in values.values()):
        raise OptionError("heuristics takes a dict of meta-parameter name -> callable(args)")

    def decorator(fn):
        return Heuristics(fn, values)

    return decorator


class Autotuner(KernelInterface):
    """Benchmarks its configs per key and launches the fastest."""

    def __init__(self, fn, configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Sequence[str] | None = None,
                 restore_value: Sequence[str] | None = None,
                 pre_hook: Callable | None = None, post_hook: Callable | None = None,
                 prune_configs_by: dict | None = None, warmup: float = 25, rep: float = 100,
                 do_bench: Callable | None = None, cache_results: bool = True):
        self.fn = fn
        self.configs = list(configs) or [Config({})]
        if not all(isinstance(c, Config) for c in self.configs):
            raise OptionError("autotune configs must be naiad.Config objects")
        names = set(self.arg_names)
        for label, group in (("reset_to_zero", reset_to_zero or ()),
                             ("restore_value", restore_value or ())):
            unknown = [k for k in group if k not in names]
            if unknown:
                raise OptionError(f"autotune {label} names {', '.join(map(repr, unknown))}, "
                                  f"not parameters of {self.__name__}")
        unknown = [k for k in key if k not in names]
        if unknown:   # Triton ignores them; say so once
            warnings.warn(f"naiad: autotune key names {', '.join(map(repr, unknown))}, not "
                          f"parameters of {self.__name__}; ignored (as Triton does)",
                          stacklevel=3)
        self.keys = [k for k in key if k in names]
        self.reset_to_zero = list(reset_to_zero or ())
        self.restore_value = list(restore_value or ())
        self.pre_hook, self.post_hook = pre_hook, post_hook
        self.prune_configs_by = prune_configs_by or {}
        self.warmup_ms, self.rep_ms = warmup, rep
        self.bench = do_bench
        self.cache_results = cache_results
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.timings: dict[Config, list[float]] = {}
        self.tuned = 0          # how many times benchmarks actually ran (tests read it)

    # -- key --------------------------------------------------------------------------------------
    def _key(self, named: dict[str, Any]) -> tuple:
        parts = []
        for k in self.keys:
            v = named.get(k)
            dt = getattr(v, "dtype", None)
            parts.append(_dtype_text(dt) if dt is not None and hasattr(v, "shape") else v)
        for v in named.values():
            t = type(v)
            if t in _PLAIN_TYPES:
                continue
            if hasattr(v, "dtype") and hasattr(v, "shape"):
                parts.append(_dtype_text(v.dtype))
        return tuple(parts)

    def _disk_path(self, state, key: tuple):
        text_key = [_cache.stable_repr(p) for p in key]
        if None in text_key:
            return None, None
        components = {
            "naiad_source": _cache.naiad_source_hash(),
            "kernel": _cache.function_fingerprint(self.base_fn),
            "target": state.name,
            "key": text_key,
            "configs": [c.describe() for c in self.configs],
        }
        return _cache.autotune_path(_cache.digest_of(components)), components

    # -- launch -----------------------------------------------------------------------------------
    def run(self, *args, grid, **kwargs):
        named = self.named_arguments(args, kwargs)
        state = current_state()
        key = (state.name,) + self._key(named)
        config = self.cache.get(key)
        if config is None:
            config = self._choose(state, key, args, kwargs, named, grid)
            self.cache[key] = config
        self.best_config = config
        return self._launch(config, args, kwargs, named, grid)

    def _launch(self, config: Config, args, kwargs, named, grid):
        if kwargs and not config.kwargs.keys().isdisjoint(kwargs):
            clash = set(config.kwargs) & set(kwargs)
            raise OptionError(f"{self.__name__}: Conflicting meta-parameters: "
                              f"{', '.join(sorted(clash))} are set both by the autotuner's "
                              f"configs and by the caller; don't re-define auto-tuned symbols")
        chosen = config.all_kwargs()
        if config.pre_hook is not None:
            config.pre_hook({**named, **chosen})
        return self.fn.run(*args, grid=grid, **{**kwargs, **chosen})

    def _choose(self, state, key, args, kwargs, named, grid) -> Config:
        configs = self._pruned(named, kwargs)
        if len(configs) == 1:
            return configs[0]
        path, components = self._disk_path(state, key[1:]) if self.cache_results else (None, None)
        if path is not None:
            record = _cache.load_json(path)
            if record is not None:
                for c in configs:
                    if c.describe() == record.get("config"):
                        return c
        best = self._benchmark(configs, args, kwargs, named, grid)
        if path is not None:
            _cache.store_json(path, {
                "config": best.describe(), "key_components": components,
                "timings_ms": {repr(c): t for c, t in self.timings.items()},
            })
        return best

    def _pruned(self, named, kwargs) -> list[Config]:
        """Triton's pruning: ``early_config_prune(configs, nargs, **kwargs)``, then the
        ``top_k`` configs by ``perf_model(**nargs, **kwargs, **config.all_kwargs())``.
        ``nargs`` holds every argument by name (positional and keyword)."""
        configs = self.configs
        prune = self.prune_configs_by.get("early_config_prune")
        if prune is not None:
            configs = list(prune(configs, dict(named), **kwargs))
            if not configs:
                raise OptionError(f"{self.__name__}: No valid autotuner configs after pruning. "
                                  f"`early_config_prune` should return at least one config.")
        perf_model = self.prune_configs_by.get("perf_model")
        top_k = self.prune_configs_by.get("top_k")
        if perf_model is not None and top_k is not None:
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(configs) * top_k)
            top_k = max(1, int(top_k))
            if len(configs) > top_k:
                est = {c: perf_model(**{**named, **c.all_kwargs()}) for c in configs}
                configs = sorted(configs, key=lambda c: est[c])[:top_k]
        return configs

    def prune_configs(self, kwargs, nargs=None) -> list[Config]:
        """Triton's method name: the configs left after pruning for these arguments."""
        return self._pruned(dict(nargs or {}) | dict(kwargs), kwargs)

    def _benchmark(self, configs, args, kwargs, named, grid) -> Config:
        from ..testing import do_bench

        bench = self.bench or functools.partial(do_bench, warmup=self.warmup_ms, rep=self.rep_ms,
                                                quantiles=(0.5, 0.2, 0.8))
        saved = {n: _snapshot(named[n], n) for n in self.restore_value}
        if self.pre_hook is not None:
            self.pre_hook(named)
        timings: dict[Config, list[float]] = {}
        errors: list[NaiadError] = []
        for config in configs:
            def call(config=config):
                for n in self.reset_to_zero:
                    _zero(named[n], n)
                self._launch(config, args, kwargs, named, grid)
            try:
                t = bench(call)
            except NaiadError as exc:   # this config does not compile / fit: skip it
                errors.append(exc)
                t = [float("inf")] * 3
            timings[config] = list(t) if isinstance(t, (list, tuple)) else [float(t)]
            for n, snap in saved.items():
                _restore(named[n], snap)
        if self.post_hook is not None:
            self.post_hook(named, errors[0] if errors else None)
        self.timings = timings
        self.tuned += 1
        best = min(timings, key=lambda c: timings[c][0])
        if timings[best][0] == float("inf"):
            raise errors[0]
        return best


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by=None,
             reset_to_zero=None, restore_value=None, pre_hook=None, post_hook=None,
             warmup: float = 25, rep: float = 100, use_cuda_graph: bool = False, do_bench=None,
             cache_results: bool = True):
    """``@naiad.autotune(configs=[naiad.Config({"BLOCK": 128}, num_warps=4), ...], key=["n"])``.

    Triton's conventions: ``prune_configs_by={"early_config_prune": f(configs, nargs,
    **kwargs), "perf_model": g(**nargs, **kwargs, **config_kwargs), "top_k": k}``;
    ``use_cuda_graph`` is accepted and times without a graph (see
    ``naiad.testing.do_bench_cudagraph``)."""
    warmup = 25 if warmup is None else warmup
    rep = 100 if rep is None else rep
    def decorator(fn):
        return Autotuner(fn, configs, key, reset_to_zero=reset_to_zero,
                         restore_value=restore_value, pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         do_bench=do_bench, cache_results=cache_results)

    return decorator


# -- argument snapshots for reset_to_zero / restore_value --------------------------------------
def _snapshot(obj, name):
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if hasattr(obj, "clone"):            # torch
        return obj.clone()
    if hasattr(obj, "numpy"):            # naiad device arrays
        return obj.numpy()
    raise OptionError(f"restore_value: cannot snapshot argument {name!r} of type "
                      f"{type(obj).__name__}")


def _restore(obj, snap):
    if isinstance(obj, np.ndarray):
        np.copyto(obj, snap)
    elif hasattr(obj, "copy_"):
        obj.copy_(snap)
    elif hasattr(obj, "copy_from_host"):
        obj.copy_from_host(snap)
    else:
        raise OptionError(f"restore_value: cannot restore {type(obj).__name__}")


def _zero(obj, name):
    if isinstance(obj, np.ndarray):
        obj.fill(0)
    elif hasattr(obj, "zero_"):
        obj.zero_()
    elif hasattr(obj, "fill"):
        obj.fill(0)
    else:
        raise OptionError(f"reset_to_zero: cannot zero argument {name!r} of type "
                          f"{type(obj).__name__}")
