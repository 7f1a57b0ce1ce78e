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
address, a pointer argument) or, where the launcher declined, the constexpr ``p__portable``
(its reason, which the backend reports as a performance remark at each access).
"""
from __future__ import annotations

import inspect

from ..errors import NaiadError
from ..language.core import constexpr
from ..language.descriptor import expanded_names


def is_descriptor(value) -> bool:
    return type(value).__name__ == "TensorDescriptor" and hasattr(value, "block_shape")


def has_descriptor(args, kwargs) -> bool:
    return any(map(is_descriptor, args)) or any(map(is_descriptor, kwargs.values()))


def _companion_class():
    from .jit import JITFunction

    class DescriptorKernel(JITFunction):
        """``base`` with each parameter in ``ranks`` spread into its descriptor's fields."""

        def __init__(self, base, ranks: dict[str, int],
                     tensor_maps: dict[str, bool] | None = None):
            super().__init__(base.fn, do_not_specialize=base.do_not_specialize,
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
                if p.name in self.tensor_maps:
                    params.append(P(f"{p.name}__tensor_map", P.POSITIONAL_OR_KEYWORD)
                                  if self.tensor_maps[p.name] else
                                  P(f"{p.name}__portable", P.POSITIONAL_OR_KEYWORD,
                                    annotation=constexpr))
            self.signature = inspect.Signature(params)
            self.arg_names = list(self.signature.parameters)

    return DescriptorKernel


_CLASS = None


def _tensor_maps(descriptors: dict) -> dict:
    """``name -> (device map or None, reason)`` from the current target's launcher, for a
    launcher that builds hardware tensor maps; empty otherwise."""
    from .targets import current_state

    state = current_state()
    if not getattr(state.spec, "compiled", True):
        return {}
    try:
        build = getattr(state.launcher, "tensor_map", None)
    except NaiadError:
        return {}
    if build is None:
        return {}
    return {name: build(desc) for name, desc in descriptors.items()}


def _companion(fn, ranks: dict, has_map: dict):
    """The companion kernel of ``fn`` for descriptors of ``ranks`` with/without maps (one per
    combination, kept on ``fn``)."""
    global _CLASS
    seen = fn.__dict__.setdefault("_naiad_descriptor_calls", {})   # by the call's own order
    quick = (tuple(ranks.items()), tuple(has_map.items()))
    kernel = seen.get(quick)
    if kernel is not None:
        return kernel
    key = (tuple(sorted(ranks.items())), tuple(sorted(has_map.items())))
    companions = fn.__dict__.setdefault("_naiad_descriptor_kernels", {})
    kernel = companions.get(key)
    if kernel is None:
        if _CLASS is None:
            _CLASS = _companion_class()
        kernel = companions[key] = _CLASS(fn, ranks, has_map)
    seen[quick] = kernel
    return kernel


def launch_with_descriptors(fn, grid, args, kwargs, stream):
    """Launch ``fn`` with its TensorDescriptor arguments spread (see the module docstring).

    The companion gets its arguments positionally, in its parameter order (each descriptor
    becomes base, shapes, strides, block, padding, then map or reason), so its launch takes
    the warm path: a descriptor launch costs little more host time than a pointer launch."""
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
    maps = _tensor_maps({k: values[k] for k in ranks})
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
    if stream is not None:
        options["stream"] = stream
    return kernel[grid](*positional, **values, **options)
