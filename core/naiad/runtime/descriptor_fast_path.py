"""The descriptor fast path: a repeated ``TensorDescriptor`` launch at a pointer launch's cost.

Host time: tutorial code builds new descriptors on every call, and a spread launch has about
four times the arguments of a pointer launch. :class:`FastPath` (one per kernel and target)
keeps, per distinct descriptor (its base's key and address, shape, strides, block, padding,
launch stream), a :class:`Record` of what the spread gives the companion -- argument keys,
shape and stride values, the tensor map and its ``block_gcds`` -- and, per call shape, the
companion's compiled entry found by the general route. A warm descriptor launch then binds the
base tensors and plain arguments with the launch binder's own per-type functions, looks up one
key and calls the entry's launch: the same entry and argument values as the general route
(``tests/runtime/test_descriptor_launch.py`` compares them), at a fraction of its cost.
"""
from __future__ import annotations

import itertools
import weakref
from math import gcd

from .binders import launch_binder
from .fingerprint import fingerprint_of
from .loaded import _grid3
from .specialize import K_I32, VALUE_KEYED_TYPES, int_key, value_key

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


def block_gcds(desc) -> tuple[int, ...]:
    """Per dimension, ``gcd(extent, block size)``: the largest part of the block the view's
    extent is a multiple of (the block size itself when blocks tile the view exactly). A host
    map's specialisation fact, the constexpr ``p__block_gcd``: a backend storing whole boxes
    (NVIDIA TMA) proves from it that no box reaches past the view's edge (into a padded
    row's padding)."""
    return tuple(gcd(int(s), int(b)) for s, b in zip(desc.shape, desc.block_shape))


class Record:
    """What one descriptor (at one launch stream) gives the companion: ``token`` (its share of
    the fast key: one small tuple per distinct rank, argument keys, map key or reason, block
    and padding, never reused) and ``tail`` (the launch values after the base's: shapes,
    strides, the map's address). ``keep`` holds the map's device memory while the record may
    launch with it."""

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
        from .descriptor_args import _map_source

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
        arguments are keyed by their names, values and types, three tuples built at C speed
        (runtime ones and descriptors are left to the general route); the first call's kinds
        only order the tests."""
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
                  "        given = tuple(kwargs.values())",
                  "        types = tuple(map(type, given))",
                  "        if not runtime_names.isdisjoint(kwargs) or "
                  "not DESCRIPTORS.isdisjoint(types):",
                  "            raise LookupError(kwargs)",
                  "        if not KEYED.isdisjoint(types):",
                  "            given = tuple(map(value_key, given))",
                  "        key += (tuple(kwargs), given, types)",
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
                mapped, block, str(getattr(desc, "padding", "zero")),
                block_gcds(desc) if device_map is not None else None)
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
        from . import descriptor_args
        from .launch import runtime_of

        compiled, kernel = descriptor_args.launch_spread(self.fn, grid, args, kwargs, stream, on)
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
