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

Host time: tutorial code builds new descriptors on every call, and a spread launch has about
four times the arguments of a pointer launch. :class:`FastPath` (one per kernel and target)
keeps, per distinct descriptor (its base's key and address, shape, strides, block, padding,
launch stream), a :class:`Record` of what the spread gives the companion -- argument keys,
shape and stride values, the tensor map -- and, per call shape, the companion's compiled entry
found by the general route. A warm descriptor launch then binds the base tensors and plain
arguments with the launch binder's own per-type functions, looks up one key and calls the
entry's launch: the same entry and argument values as the general route
(``tests/runtime/test_descriptor_launch.py`` compares them), at a fraction of its cost.
"""
from __future__ import annotations

import inspect
import itertools
import weakref

from ..errors import NaiadError
from ..language.core import constexpr
from ..language.descriptor import expanded_names
from .binders import launch_binder
from .fingerprint import fingerprint_of
from .loaded import _grid3
from .specialize import K_I32, VALUE_KEYED_TYPES, int_key, value_key
from .targets import current_state

KI0, KI1, KI16 = K_I32


#: the descriptor classes seen (naiad's, Triton's): the fast path tests types against them
DESCRIPTOR_TYPES: set = set()


def is_descriptor(value) -> bool:
    t = type(value)
    if t in DESCRIPTOR_TYPES:
        return True
    if t.__name__ == "TensorDescriptor" and hasattr(value, "block_shape"):
        DESCRIPTOR_TYPES.add(t)
        return True
    return False


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
                if p.name in self.tensor_maps:
                    params.append(P(f"{p.name}__tensor_map", P.POSITIONAL_OR_KEYWORD)
                                  if self.tensor_maps[p.name] else
                                  P(f"{p.name}__portable", P.POSITIONAL_OR_KEYWORD,
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
    (base, shapes, strides, block, padding, then map or reason) and launch the companion
    through its own warm launch (on ``stream``; new maps are copied on ``map_stream``, the
    stream that launch resolves to); returns its CompiledKernel and the companion."""
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
    if stream is not None:
        options["stream"] = stream
    from .launch import warm_launch_of

    # the companion's own launch, not ``kernel[grid]``: a launch observer (naiad.profiler)
    # already sees this call as ``fn``'s, once, whichever route it takes
    return warm_launch_of(kernel)(grid, *positional, **values, **options), kernel


class Record:
    """What one descriptor (at one launch stream) gives the companion: ``token`` (its share of
    the fast key: one small tuple per distinct rank, argument keys, map key or reason, block
    and padding, never reused) and ``tail`` (the launch values after the base's: shapes, strides, the map's
    address). ``keep`` holds the map's device memory while the record may launch with it."""

    __slots__ = ("token", "tail", "keep")

    def __init__(self, token, tail, keep):
        self.token, self.tail, self.keep = token, tail, keep


_NO_MAP = ("no tensor map",)
_numbers = itertools.count()
#: records per target (distinct descriptors x streams) and call shapes per kernel and target
RECORD_LIMIT = 4096
RECIPE_LIMIT = 256


class FastPath:
    """The warm descriptor launch of one kernel on one target (see the module docstring)."""

    #: TargetState -> {quick descriptor key: Record} (shared by the target's kernels)
    _records_by_state = weakref.WeakKeyDictionary()
    _tokens: dict = {}              # a record's key part -> its token (shared: parts are plain)

    def __init__(self, fn, state):
        self.fn, self.state = fn, state
        self.fingerprint = fingerprint_of(fn)
        self.binder = launch_binder(state)
        self.by_type = self.binder.by_type
        self.nparams = len(fn.arg_names)
        ce = set(fn.constexpr_params)
        self.is_constexpr = tuple(n in ce for n in fn.arg_names)
        #: the call needs every runtime parameter positionally (defaults would be launch values)
        self.min_args = max((i + 1 for i, c in enumerate(self.is_constexpr) if not c), default=0)
        self.names = frozenset(fn.arg_names)
        self.runtime_names = frozenset(n for n, c in zip(fn.arg_names, self.is_constexpr)
                                       if not c)
        self.tensor_map, self.current_stream = _map_source(state)
        self.records = self._records_by_state.setdefault(state, {})
        self.recipes: dict = {}     # fast key -> (entry, companion's KernelRuntime)
        self.keyers: dict = {}      # number of positional arguments -> generated keyer

    @classmethod
    def make(cls, fn, state) -> "FastPath":
        path = cls(fn, state)
        fn.__dict__.setdefault("_naiad_descriptor_fast", {})[state] = path
        return path

    # (a path is replaced once the kernel's fingerprint or the target's launch binder is)

    # -- the launch ------------------------------------------------------------------------
    def launch(self, grid, args, kwargs, stream):
        """Launch through a recipe when this call's key has one, else :meth:`learn`.
        ``stream`` is the caller's (None: the launcher's current one, which a new map's copy
        is queued on and records are kept per)."""
        on = stream if stream is not None or self.current_stream is None else \
            self.current_stream()
        try:
            key, vals = self.key_and_values(args, kwargs, on)
            entry, rt = self.recipes[key]
        except Exception:     # a call the general route handles (or refuses, naming the error)
            return self.learn(grid, args, kwargs, stream, on)
        if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and grid[0] > 0:
            grid = (grid[0], 1, 1)
        else:
            grid = _grid3(grid)
            if grid is None:            # an empty grid launches nothing
                return entry.kernel
        entry.go(grid, vals, stream)
        rt.warm_launches += 1
        return entry.kernel

    def key_and_values(self, args, kwargs, stream):
        """The fast key of this call and the companion's launch values; raises for a call
        the fast path leaves to the general route."""
        keyer = self.keyers.get(len(args))
        if keyer is None:
            keyer = self.keyers[len(args)] = self.make_keyer(args)
        return keyer(args, kwargs, stream)

    def make_keyer(self, args):
        """``keyer(args, kwargs, stream) -> (key, values)`` for calls of ``len(args)``
        positional arguments, generated like the warm launch (:mod:`.warm_launch`): per
        argument, straight-line code instead of a loop (a third of the host time). A runtime
        argument is an i32 int (keyed inline), a descriptor (its record) or a value the launch
        binder's function for its type keys; a constexpr is keyed by value and type. Keyword
        arguments are keyed by name, value and type (runtime ones are left to the general
        route); the first call's kinds only order the tests."""
        n = len(args)
        if n < self.min_args or n > self.nparams:
            raise LookupError(n)
        lines = ["def keyer(args, kwargs, stream):",
                 f"    {''.join(f'a{i}, ' for i in range(n))}= args",
                 "    vals = []"]
        parts = []
        for i in range(n):
            a = f"a{i}"
            if self.is_constexpr[i]:
                lines += [f"    t = type({a})",
                          "    if t in DESCRIPTORS:",
                          "        raise LookupError(t)",
                          f"    c{i} = value_key({a}) if t in KEYED else {a}",
                          f"    t{i} = t"]
                parts += [f"c{i}", f"t{i}"]
                continue
            as_int = [f"if t is int and -0x80000000 <= {a} <= 0x7FFFFFFF:",
                      f"    k{i} = (KI1 if {a} == 1 else KI0) if {a} & 15 else KI16",
                      f"    vals.append({a})"]
            as_descriptor = [
                "if t in DESCRIPTORS:",
                f"    base = {a}.base",
                "    k, v = by_type[type(base)](base)",
                f"    quick = (k, v if type(v) is int else None, tuple({a}.shape),",
                f"             tuple({a}.strides), tuple({a}.block_shape),",
                f"             getattr({a}, 'padding', 'zero'),",
                f"             getattr({a}, 'round_f32_to_tf32', False), stream)",
                "    record = records_get(quick)",
                "    if record is None:",
                f"        record = new_record(quick, k, {a}, stream)",
                f"    k{i} = record.token",
                "    vals.append(v)",
                "    vals += record.tail"]
            first, second = (as_descriptor, as_int) if is_descriptor(args[i]) else \
                (as_int, as_descriptor)
            lines.append(f"    t = type({a})")
            lines += ["    " + line for line in first]
            lines += ["    el" + second[0]] + ["    " + line for line in second[1:]]
            lines += ["    else:",
                      f"        k{i}, v = by_type[t]({a})",
                      "        vals.append(v)"]
            parts.append(f"k{i}")
        lines += [f"    key = ({n}, {', '.join(parts)}{',' if not parts else ''})",
                  "    if kwargs:",
                  "        extra = []",
                  "        for name, v in kwargs.items():",
                  "            if name in runtime_names or name not in names and "
                  "is_descriptor(v):",
                  "                raise LookupError(name)",
                  "            t = type(v)",
                  "            extra += (name, value_key(v) if t in KEYED else v, t)",
                  "        key += tuple(extra)",
                  "    return key, vals"]
        namespace = {"DESCRIPTORS": DESCRIPTOR_TYPES, "KEYED": VALUE_KEYED_TYPES,
                     "value_key": value_key, "KI0": KI0, "KI1": KI1, "KI16": KI16,
                     "by_type": self.by_type, "records_get": self.records.get,
                     "new_record": self.new_record, "runtime_names": self.runtime_names,
                     "names": self.names, "is_descriptor": is_descriptor}
        exec(compile("\n".join(lines) + "\n",
                     f"<naiad descriptor keys of {self.fn.__qualname__}/{n}>", "exec"), namespace)
        return namespace["keyer"]

    def new_record(self, quick, base_key, desc, stream) -> Record:
        """The record of a descriptor not seen in this form (asks the launcher for its map)."""
        if not is_descriptor(desc):
            raise LookupError(type(desc))
        if quick[1] is None and self.tensor_map is not None:
            raise LookupError("no device address")
        shapes = tuple(map(int, desc.shape))
        strides = tuple(map(int, desc.strides))
        block = tuple(map(int, desc.block_shape))
        tail = list(shapes + strides)
        device_map = None
        if self.tensor_map is None:
            mapped = _NO_MAP
        else:
            device_map, reason = (self.tensor_map(desc) if self.current_stream is None else
                                  self.tensor_map(desc, stream))
            if device_map is None:
                mapped = reason
            else:
                mapped, map_value = self.binder.bind(device_map)
                tail.append(map_value)
        part = (len(block), base_key, tuple(map(int_key, shapes)), tuple(map(int_key, strides)),
                mapped, block, str(getattr(desc, "padding", "zero")))
        token = self._tokens.get(part)
        if token is None:       # numbered once and never again: no two parts share a token
            if len(self._tokens) >= RECORD_LIMIT:
                self._tokens.clear()
            token = self._tokens.setdefault(part, ("descriptor", next(_numbers)))
        record = Record(token, tail, device_map)
        if len(self.records) >= RECORD_LIMIT:
            self.records.clear()
        self.records[quick] = record
        return record

    def learn(self, grid, args, kwargs, stream, on):
        """Launch by the general route; remember the companion's entry under this call's key
        (when the fast path keys such calls)."""
        from .launch import runtime_of

        compiled, kernel = launch_spread(self.fn, grid, args, kwargs, stream, on)
        try:
            key, _ = self.key_and_values(args, kwargs, on)
            hash(key)
        except Exception:
            return compiled
        rt = runtime_of(kernel)
        cache = rt.caches.get(self.state) or {}
        entry = next((e for e in cache.values() if e.kernel is compiled), None)
        if entry is not None and entry.go is not None:
            if len(self.recipes) >= RECIPE_LIMIT:
                self.recipes.clear()
            self.recipes[key] = (entry, rt)
        return compiled
