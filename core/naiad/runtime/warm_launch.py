"""The warm launch: one generated function per kernel that runs ``kernel[grid](*args, **kw)``
when the kernel is already compiled and loaded for these argument types.

Why generated: the warm path is naiad's hot loop, and in CPython every call, loop iteration,
list append and nested tuple costs tens of nanoseconds. Generating the function for the kernel's
own parameter list unrolls the per-argument work into straight-line code: for each runtime
parameter one dict lookup by ``type(arg)`` and one call of the binder that
:class:`~naiad.runtime.specialize.ArgBinder` keeps for that type; the cache key is one flat tuple
of the per-argument keys (plus constexpr values and their types, plus keyword names, values and
types when keywords are given); one dict lookup finds the entry; the launch goes through the
entry's pre-bound ``go(grid3, args, stream)``.

The fast key depends on the *shape* of the call (how many positional arguments, which keywords
in which order), so one compiled kernel may be reached by several fast keys. Anything this
function does not handle -- a first launch, a new call shape, an argument type not seen yet, an
error, a runtime argument given by keyword -- goes to ``KernelRuntime.launch_slow``, which binds
and checks everything, finds (or compiles) the kernel under its canonical key and records the fast
key for next time. A fast key is recorded only after the slow path accepted the call, and every
part of the call it does not look at (defaults, option normalisation) is fixed per kernel, so a
fast hit launches exactly what the slow path would.

Generated source for ``tiny(x_ptr, n)`` (``NAIAD_DEBUG_WARM_LAUNCH=1`` prints it)::

    def launch(grid, *args, **kwargs):
        check_globals()         # only when the kernel reads globals: raises once one changed
        state = context_get() or targets._default_state
        if state is None or state.generation != manager.generation:
            state = current_state()
        plan = plans_get(state)
        if plan is None or len(args) < 2:
            return slow(grid, args, kwargs, None, None)
        by_type, fast, _ = plan
        a0 = args[0]
        a1 = args[1]
        try:
            t = type(a0)
            if t is int and -0x80000000 <= a0 <= 0x7FFFFFFF:
                k0 = (KI1 if a0 == 1 else KI0) if a0 & 15 else KI16
            else:
                k0, a0 = by_type[t](a0)
            ... (the same for a1)
        except Exception:
            return slow(grid, args, kwargs, None, None)
        if kwargs or len(args) != 2:
            ... key: the argument keys, the number of positional arguments, each extra
            ... positional value and its type, each keyword's name, value and type
        else:
            stream = None
            key = (k0, k1)
        try:
            entry = fast[key]
        except KeyError:
            return slow(grid, args, kwargs, stream, key)
        ...
        go(grid, [a0, a1], stream)
"""
from __future__ import annotations

import os

from ..plugins import manager
from . import targets
from .fingerprint import fingerprint_of
from .specialize import K_I32, VALUE_KEYED_TYPES, value_key, without_fact
from .targets import current_state

#: the TargetState in force, found as :func:`~naiad.runtime.targets.current_state`'s fast path
#: finds it (a ``with naiad.target()`` block's, else the default one, of the current plugin set)
#: but inline: one Python call less per launch; any other case asks ``current_state()``
_STATE_LINES = [
    "    state = context_get() or targets._default_state",
    "    if state is None or state.generation != manager.generation:",
    "        state = current_state()",
    "    plan = plans_get(state)",
]


def _value_part(i: int) -> str:
    """Key expression of constexpr argument ``a<i>``: the value itself, or for floats (and
    tuples, which may hold floats) its :func:`value_key`, so -0.0/0.0 differ and NaN hits."""
    return f"(a{i} if type(a{i}) not in KEYED else value_key(a{i}))"


def _bind_and_key_lines(rt, npos: int, slow_call: str, stream_line: str) -> list[str]:
    """The lines binding positional arguments ``a0..a<npos-1>`` and building ``key``: shared by
    the warm launch and the warm warmup, so both key a call the same way. ``slow_call`` is the
    fallback's call text with ``{key}`` for the key to record; ``stream_line`` takes ``stream``
    out of the keywords (warm launch) or is empty."""
    rt_pos = set(rt.rt_pos)
    nospec = {p for p, ns in zip(rt.rt_pos, rt.nospec) if ns}
    lines = [f"    a{i} = args[{i}]" for i in range(npos)]
    key_parts = []
    if rt_pos:
        lines.append("    try:")
        for i in range(npos):
            if i in rt_pos:   # Python ints that fit i32 inline, anything else by its type
                lines += [f"        t = type(a{i})",
                          f"        if t is int and -0x80000000 <= a{i} <= 0x7FFFFFFF:",
                          f"            k{i} = (KI1 if a{i} == 1 else KI0) if a{i} & 15 else KI16",
                          "        else:",
                          f"            k{i}, a{i} = by_type[t](a{i})"]
                if i in nospec:
                    lines.append(f"        k{i} = without_fact(k{i})")
                key_parts.append(f"k{i}")
            else:   # a constexpr before the last runtime parameter: its value and type
                key_parts += [_value_part(i), f"type(a{i})"]
        lines += ["    except Exception:",
                  f"        return {slow_call.format(key='None')}"]
    else:
        for i in range(npos):
            key_parts += [_value_part(i), f"type(a{i})"]
    head = ", ".join(key_parts)
    lines += [
        f"    if kwargs or len(args) != {npos}:",
        *([stream_line] if stream_line else []),
        f"        key = [{head}{', ' if head else ''}len(args)]",
        f"        if len(args) != {npos}:",
        f"            for v in args[{npos}:]:",
        "                t = type(v)",
        "                key += (v if t not in KEYED else value_key(v), t)",
        "        for n, v in kwargs.items():",
        "            t = type(v)",
        "            key += (n, v if t not in KEYED else value_key(v), t)",
        "        key = tuple(key)",
        "    else:",
        *(["        stream = None"] if stream_line else []),
        f"        key = ({head}{',' if len(key_parts) == 1 else ''})",
    ]
    return lines


def _positional_needed(rt) -> int:
    """How many positional arguments the fast paths need (up to the last runtime parameter)."""
    return rt.rt_pos[-1] + 1 if rt.rt_pos else 0


def make_warm_launch(rt):
    """The warm launch function of KernelRuntime ``rt`` (signature ``(grid, *args, **kwargs)``)."""
    rt_pos = set(rt.rt_pos)
    npos = _positional_needed(rt)
    watch = fingerprint_of(rt.fn).watch
    lines = [
        "def launch(grid, *args, **kwargs):",
        *(["    check_globals()"] if watch else []),   # raises once a folded-in global changed
        *_STATE_LINES,
        f"    if plan is None or len(args) < {npos}:",
        "        return slow(grid, args, kwargs, None, None)",
        "    by_type, fast, _ = plan",
    ]
    lines += _bind_and_key_lines(
        rt, npos, "slow(grid, args, kwargs, None, {key})",
        "        stream = kwargs.pop('stream', None) if kwargs else None")
    lines += [
        "    try:",
        "        entry = fast[key]",
        "    except KeyError:",
        "        return slow(grid, args, kwargs, stream, key)",
        "    except TypeError:   # an unhashable constexpr or option value",
        "        return slow(grid, args, kwargs, stream, None)",
        "    go = entry.go",
        "    if go is None:      # compiled by warmup(), not loaded yet",
        "        return slow(grid, args, kwargs, stream, None)",
        "    if type(grid) is not tuple and callable(grid):",
        "        grid = grid(meta(args, kwargs))",
        "    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and grid[0] > 0:",
        "        grid = (grid[0], 1, 1)",
        "    else:",
        "        grid = grid3(grid)",
        "        if grid is None:    # an empty grid launches nothing",
        "            stats.hits += 1",
        "            return entry.kernel",
        f"    go(grid, [{', '.join(f'a{i}' for i in sorted(rt_pos))}], stream)",
        "    rt.warm_launches += 1",
        "    return entry.kernel",
    ]
    return _build(rt, lines, "launch", f"{rt.fn.__qualname__}[grid]")


def make_warm_warmup(rt):
    """The warm ``warmup`` of KernelRuntime ``rt``: ``warmup(args, kwargs) -> CompiledKernel``.

    Tutorial 02 calls ``kernel.warmup(...)`` before every launch, so a hot warmup must cost what
    a warm launch's lookup costs: the same per-argument binders and the same key shape, looked
    up in the plan's third dict (warmup keys, recorded by ``KernelRuntime.warmup_slow`` once it
    found the entry and checked that the launch binders key the arguments as warmup's did).
    ``target=`` or ``stream=`` keywords, unseen types and misses take the slow path."""
    npos = _positional_needed(rt)
    watch = fingerprint_of(rt.fn).watch
    lines = [
        "def warmup(args, kwargs):",
        *(["    check_globals()"] if watch else []),
        "    if kwargs and ('target' in kwargs or 'stream' in kwargs):",
        "        return slow(args, kwargs, None)",
        *_STATE_LINES,
        f"    if plan is None or len(args) < {npos}:",
        "        return slow(args, kwargs, None)",
        "    by_type, _, fast = plan",
    ]
    lines += _bind_and_key_lines(rt, npos, "slow(args, kwargs, {key})", "")
    lines += [
        "    try:",
        "        entry = fast[key]",
        "    except KeyError:",
        "        return slow(args, kwargs, key)",
        "    except TypeError:   # an unhashable constexpr or option value",
        "        return slow(args, kwargs, None)",
        "    stats.hits += 1",
        "    return entry.kernel",
    ]
    return _build(rt, lines, "warmup", f"{rt.fn.__qualname__}.warmup")


def _build(rt, lines: list[str], name: str, qualname: str):
    """Compile the generated function ``name`` (``launch`` or ``warmup``) from ``lines``; its
    ``slow`` is the runtime's matching general path."""
    watch = fingerprint_of(rt.fn).watch
    source = "\n".join(lines) + "\n"
    if os.environ.get("NAIAD_DEBUG_WARM_LAUNCH"):
        print(f"# naiad {name} of {rt.fn.__qualname__}\n{source}")
    from .loaded import _grid3

    namespace = {
        "plans_get": rt.plans.get, "current_state": current_state, "targets": targets,
        "context_get": targets._context.get, "manager": manager,
        "slow": rt.launch_slow if name == "launch" else rt.warmup_slow,
        "without_fact": without_fact, "meta": rt.meta, "KI0": K_I32[0], "KI1": K_I32[1],
        "KI16": K_I32[2], "grid3": _grid3, "stats": rt.stats,
        "rt": rt, "check_globals": watch.check,
        "KEYED": VALUE_KEYED_TYPES, "value_key": value_key,
    }
    code = compile(source, f"<naiad warm {name} of {rt.fn.__qualname__}>", "exec")
    exec(code, namespace)
    made = namespace[name]
    made.__qualname__ = qualname
    made.source = source
    return made
