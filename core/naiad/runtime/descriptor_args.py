"""``TensorDescriptor`` kernel arguments.

A kernel launched with a host ``TensorDescriptor`` (``naiad.tools.tensor_descriptor``) for a
parameter ``p`` runs as a companion kernel of the same source whose parameter ``p`` is spread
into run-time ``p__base`` (the tensor), ``p__shape_i`` and ``p__stride_i`` (ints) and the
constexprs ``p__block`` and ``p__padding``; the frontend binds ``p`` to the descriptor
``tl.make_tensor_descriptor`` would build from them. Launchers and caches see an ordinary
kernel (the block shape is a constexpr, so it is part of every cache key). Descriptor launches
take this path from the slow launch path; kernels without descriptors are untouched.

A launcher with hardware tensor maps (``launcher.tensor_map(descriptor)``, NVIDIA TMA) is asked
for one per descriptor: the companion then also takes ``p__tensor_map`` (the map's device
address, a pointer argument) and the constexpr ``p__block_gcd`` (per dimension, the gcd of the
extent and the block size, from which a backend proves that a store by whole boxes cannot
cross the view's edge; a change of it between calls compiles another variant) or, where the
launcher declined, the constexpr ``p__portable`` (its reason, which the backend reports as a
performance remark at each access).

Host time: a repeated descriptor launch takes the fast path (``descriptor_fast_path.py``);
:func:`launch_spread` here is the general route it learns from.
"""
from __future__ import annotations

import inspect

from ..errors import NaiadError
from ..language.core import constexpr
from ..language.descriptor import expanded_names
from .descriptor_fast_path import FastPath, block_gcds, is_descriptor
from .fingerprint import fingerprint_of
from .targets import current_state


def has_descriptor(args, kwargs) -> bool:
    return any(map(is_descriptor, args)) or any(map(is_descriptor, kwargs.values()))


def _unspecialized(base, ranks: dict) -> tuple:
    """``base``'s ``do_not_specialize`` in the companion's terms: by name (its positions
    shift), a descriptor parameter standing for its shape and stride integers."""
    out = []
    for item in base.do_not_specialize:
        name = base.arg_names[item] if isinstance(item, int) and \
            0 <= item < len(base.arg_names) else item
        if name in ranks:
            shapes, strides = expanded_names(name, ranks[name])
            out += shapes + strides
        else:
            out.append(name)
    return tuple(out)


def _companion_class():
    from .jit import JITFunction

    class DescriptorKernel(JITFunction):
        """``base`` with each parameter in ``ranks`` spread into its descriptor's fields."""

        def __init__(self, base, ranks: dict[str, int],
                     tensor_maps: dict[str, bool] | None = None):
            super().__init__(base.fn, do_not_specialize=_unspecialized(base, ranks),
                             noinline=base.noinline)
            for attr in ("source", "ast"):       # the base's text (it may have been updated)
                self.__dict__[attr] = getattr(base, attr)
            self.descriptor_params = dict(ranks)
            self.tensor_maps = dict(tensor_maps or {})
            params = []
            P = inspect.Parameter
            for p in base.signature.parameters.values():
                if p.name not in ranks:
                    params.append(p)
                    continue
                shapes, strides = expanded_names(p.name, ranks[p.name])
                params.append(P(f"{p.name}__base", P.POSITIONAL_OR_KEYWORD))
                params += [P(n, P.POSITIONAL_OR_KEYWORD) for n in shapes + strides]
                params += [P(f"{p.name}__block", P.POSITIONAL_OR_KEYWORD, annotation=constexpr),
                           P(f"{p.name}__padding", P.POSITIONAL_OR_KEYWORD,
                             annotation=constexpr)]
                if self.tensor_maps.get(p.name):
                    params += [P(f"{p.name}__tensor_map", P.POSITIONAL_OR_KEYWORD),
                               P(f"{p.name}__block_gcd", P.POSITIONAL_OR_KEYWORD,
                                 annotation=constexpr)]
                elif p.name in self.tensor_maps:
                    params.append(P(f"{p.name}__portable", P.POSITIONAL_OR_KEYWORD,
                                    annotation=constexpr))
            self.signature = inspect.Signature(params)
            self.arg_names = list(self.signature.parameters)

    return DescriptorKernel


_CLASS = None


def _map_source(state):
    """``(tensor_map, current_stream)`` of ``state``'s launcher when it builds hardware tensor
    maps (``current_stream`` may be None: maps are then not per stream); ``(None, None)``."""
    if not getattr(state.spec, "compiled", True):
        return None, None
    try:
        launcher = state.launcher
    except NaiadError:
        return None, None
    build = getattr(launcher, "tensor_map", None)
    if build is None:
        return None, None
    return build, getattr(launcher, "current_stream", None)


def _tensor_maps(descriptors: dict, stream=None) -> dict:
    """``name -> (device map or None, reason)`` from the current target's launcher, for a
    launcher that builds hardware tensor maps; empty otherwise. ``stream``: the launch's (the
    launcher orders a new map's copy before work on it)."""
    build, current = _map_source(current_state())
    if build is None:
        return {}
    if current is None:
        return {name: build(desc) for name, desc in descriptors.items()}
    if stream is None:
        stream = current()
    return {name: build(desc, stream) for name, desc in descriptors.items()}


def _companion(fn, ranks: dict, has_map: dict):
    """The companion kernel of ``fn`` for descriptors of ``ranks`` with/without maps (one per
    combination, kept on ``fn`` while its fingerprint stands: ``cache_clear()`` or a new source
    text makes new companions, which copy the text anew)."""
    global _CLASS
    fingerprint = fingerprint_of(fn)
    held = fn.__dict__.get("_naiad_descriptor_state")
    if held is None or held[0] is not fingerprint:
        held = fn.__dict__["_naiad_descriptor_state"] = (fingerprint, {}, {})
        fn.__dict__["_naiad_descriptor_kernels"] = held[2]
    _, seen, companions = held                    # seen: by the call's own order
    quick = (tuple(ranks.items()), tuple(has_map.items()))
    kernel = seen.get(quick)
    if kernel is not None:
        return kernel
    key = (tuple(sorted(ranks.items())), tuple(sorted(has_map.items())))
    kernel = companions.get(key)
    if kernel is None:
        if _CLASS is None:
            _CLASS = _companion_class()
        kernel = companions[key] = _CLASS(fn, ranks, has_map)
    seen[quick] = kernel
    return kernel


def _resolve_grid(fn, grid, args, kwargs):
    """A callable grid gets the kernel's own parameters by name (a descriptor parameter is the
    descriptor, as in Triton), not the companion's spread names."""
    rt = fn.__dict__.get("_naiad_runtime")     # made by the launch that brought us here
    if rt is None:
        from .launch import runtime_of

        rt = runtime_of(fn)
    return grid(rt.meta(args, kwargs))


def launch_with_descriptors(fn, grid, args, kwargs, stream):
    """Launch ``fn`` with its TensorDescriptor arguments spread (see the module docstring):
    through the kernel's :class:`FastPath` when it knows the call, else the general route
    (which teaches the fast path the call)."""
    if kwargs and "stream" in kwargs:
        kwargs = dict(kwargs)
        stream = kwargs.pop("stream")
    if type(grid) is not tuple and callable(grid):
        grid = _resolve_grid(fn, grid, args, kwargs)
    state = current_state()
    held = fn.__dict__
    paths = held.get("_naiad_descriptor_fast")
    path = paths.get(state) if paths is not None else None
    if path is None or held.get("_naiad_fingerprint") is not path.fingerprint or \
            state.binder is not path.binder:
        path = FastPath.make(fn, state)
    return path.launch(grid, args, kwargs, stream)


def launch_spread(fn, grid, args, kwargs, stream, map_stream=None):
    """The general route: spread each descriptor into the companion's positional arguments
    (base, shapes, strides, block, padding, then map and block gcds, or reason) and launch the
    companion through its own warm launch (on ``stream``; new maps are copied on
    ``map_stream``, the stream that launch resolves to); returns its CompiledKernel and the
    companion."""
    names = fn.arg_names
    if len(args) > len(names):
        raise NaiadError(f"{fn.__name__} takes {len(names)} arguments, got {len(args)}")
    values = dict(zip(names, args))
    options = {}
    for k, v in kwargs.items():
        (values if k in names else options)[k] = v
    ranks = {k: len(v.block_shape) for k, v in values.items() if is_descriptor(v)}
    given = 0
    while given < len(names) and names[given] in values:
        given += 1           # parameters after one left to its default go by name
    if any(name in ranks for name in names[given:]):
        raise NaiadError(f"{fn.__name__}: a TensorDescriptor argument follows parameter "
                         f"{names[given]!r}, left to its default; pass the parameters before it")
    maps = _tensor_maps({k: values[k] for k in ranks},
                        stream if map_stream is None else map_stream)
    kernel = _companion(fn, ranks, {k: m[0] is not None for k, m in maps.items()})
    positional = []
    for name in names[:given]:
        value = values.pop(name)
        if name not in ranks:
            positional.append(value)
            continue
        positional.append(value.base)
        positional += map(int, value.shape)
        positional += map(int, value.strides)
        positional.append(tuple(map(int, value.block_shape)))
        positional.append(str(getattr(value, "padding", "zero")))
        if name in maps:
            device_map, reason = maps[name]
            positional.append(device_map if device_map is not None else reason)
            if device_map is not None:
                positional.append(block_gcds(value))
    if stream is not None:
        options["stream"] = stream
    from .launch import warm_launch_of

    # the companion's own launch, not ``kernel[grid]``: a launch observer (naiad.profiler)
    # already sees this call as ``fn``'s, once, whichever route it takes
    return warm_launch_of(kernel)(grid, *positional, **values, **options), kernel
