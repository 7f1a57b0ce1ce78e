"""``compiled[grid](*args)``: launching one CompiledKernel directly, as Triton's compiled kernels
allow (``k = kernel.warmup(...); k[(n,)](...)``).

The binary is fixed, so the arguments must match the signature it was compiled for: each runtime
argument is bound with the target's binder and its type is checked against the signature (a
mismatch is an error, never a silent reinterpretation). Arguments are either the runtime ones
alone or every parameter in order; in the second form the constexpr values are skipped.
"""
from __future__ import annotations

from ..plugins import manager as _mgr
from .call_site import CALL_ERRORS, at_call_site
from .loaded import _Entry, _grid3
from .specialize import ArgumentError
from .binders import launch_binder
from .targets import state_for


def entry_of(kernel) -> _Entry:
    """The loaded launch entry of ``kernel`` (made and loaded on first use, then kept on it)."""
    entry = kernel.__dict__.get("_naiad_entry")
    if entry is None:
        state = state_for(kernel.target)
        entry = _Entry(kernel, tuple(kernel.signature.values()))
        entry.load(state)
        kernel._naiad_entry = entry
    return entry


#: a scalar bound as i32 may fill a wider integer parameter
_WIDENS = {"i64": ("i64", "i32"), "u32": ("u32", "i32"), "u64": ("u64", "i32")}


class _Plan:
    """What every launch of one CompiledKernel repeats, worked out once: where its runtime
    arguments sit among all parameters, the types each may bind to, its target state."""

    __slots__ = ("kernel", "names", "accepted", "picks", "state", "binder")

    def __init__(self, kernel):
        self.kernel = kernel
        self.names = tuple(kernel.signature)
        self.accepted = tuple(_WIDENS.get(sig, (sig,)) for sig in kernel.signature.values())
        names = list(kernel.arg_names)
        self.picks = tuple(i for i, n in enumerate(names) if n in kernel.signature)
        self.state = self.binder = None

    def runtime_args(self, args: tuple) -> tuple:
        kernel = self.kernel
        if len(args) == len(self.names):
            return args
        if kernel.arg_names and len(args) == len(kernel.arg_names):
            return tuple([args[i] for i in self.picks])
        expected = f"{len(self.names)} runtime arguments ({', '.join(self.names)})"
        if kernel.arg_names:
            expected += (f" or all {len(kernel.arg_names)} parameters "
                         f"({', '.join(kernel.arg_names)})")
        raise ArgumentError(f"compiled kernel {kernel.name} takes {expected}, got {len(args)}")

    def bind(self, values) -> list:
        state = state_for(self.kernel.target)
        if state is not self.state:          # first launch, or the plugin set was reloaded
            self.state, self.binder = state, state.binder or launch_binder(state)
        bind = self.binder.bind
        vals = []
        for name, accepted, value in zip(self.names, self.accepted, values):
            try:
                (got, _fact), v = bind(value)
            except ArgumentError as exc:
                raise ArgumentError(f"{self.kernel.name}: argument {name!r}: {exc}") from None
            if got not in accepted:
                raise ArgumentError(
                    f"{self.kernel.name}: argument {name!r} is {got}, but this compiled kernel "
                    f"was specialised for {accepted[0]}; launch the JIT function "
                    f"(kernel[grid](...)) to compile a new specialisation")
            vals.append(v)
        return vals


def _plan_of(kernel) -> _Plan:
    plan = kernel.__dict__.get("_naiad_plan")
    if plan is None:
        plan = kernel._naiad_plan = _Plan(kernel)
    return plan


def launch(kernel, grid, *args, stream=None, **ignored_options):
    """Launch ``kernel`` on ``grid``; keywords such as ``num_warps`` are fixed at compile time and
    ignored here, as Triton does. (The general path: :func:`fast_launch_of`'s generated function
    falls back to it for anything it does not handle, so its errors are the ones users see.)"""
    plan = _plan_of(kernel)
    if callable(grid):
        grid = grid(dict(zip(kernel.arg_names, args)))
    grid3 = _grid3(grid)
    vals = plan.bind(plan.runtime_args(args))
    if grid3 is None:
        return kernel
    entry_of(kernel).go(grid3, vals, stream)
    return kernel


def fast_launch_of(kernel):
    """``launch(grid, *args, stream=None, **ignored)`` of one CompiledKernel, generated for its
    signature (kept on the kernel): tutorial 02 launches ``compiled[grid](...)`` every call.

    Per runtime argument it does what :meth:`_Plan.bind` does, unrolled: a Python int that fits
    i32 is accepted inline where the parameter takes i32, anything else goes through the
    target binder's per-type function and its type must be one the parameter accepts. A first
    launch, a reloaded plugin set, an unseen argument type, a mismatch, a callable or odd grid
    go to :func:`launch`, which binds and checks everything and raises its errors."""
    made = kernel.__dict__.get("_naiad_fast_launch")
    if made is not None:
        return made
    plan = _plan_of(kernel)
    n_rt = len(plan.names)
    names = [f"a{i}" for i in range(n_rt)]
    lines = ["def launch(grid, *args, stream=None, **ignored):",
             "    n = len(args)",
             f"    if n == {n_rt}:",
             f"        {', '.join(names)}{',' if n_rt == 1 else ''} = args" if n_rt else
             "        pass"]
    if plan.picks and len(kernel.arg_names) != n_rt:
        lines += [f"    elif n == {len(kernel.arg_names)}:",
                  *[f"        a{i} = args[{p}]" for i, p in enumerate(plan.picks)]]
    lines += ["    else:",
              "        return slow(kernel, grid, *args, stream=stream)",
              "    state = cache.state",
              "    if state is None or state.generation != mgr.generation or cache.go is None:",
              "        return first(grid, args, stream)"]
    if n_rt:
        lines += ["    by_type = cache.by_type", "    try:"]
        for i, accepted in enumerate(plan.accepted):
            inline_int = "i32" in accepted
            if inline_int:
                lines += [f"        t = type(a{i})",
                          f"        if t is not int or not -0x80000000 <= a{i} <= 0x7FFFFFFF:",
                          f"            k, a{i} = by_type[t](a{i})",
                          f"            if k[0] not in ACCEPTED[{i}]:",
                          "                raise TypeError"]
            else:
                lines += [f"        k, a{i} = by_type[type(a{i})](a{i})",
                          f"        if k[0] not in ACCEPTED[{i}]:",
                          "            raise TypeError"]
        lines += ["    except Exception:",
                  "        return slow(kernel, grid, *args, stream=stream)"]
    lines += [
        "    if type(grid) is not tuple:",
        "        return slow(kernel, grid, *args, stream=stream)",
        "    if len(grid) == 3:",
        "        gx, gy, gz = grid",
        "        if not (type(gx) is int and type(gy) is int and type(gz) is int and gx > 0 "
        "and gy > 0 and gz > 0):",
        "            return slow(kernel, grid, *args, stream=stream)",
        "    elif len(grid) == 1 and type(grid[0]) is int and grid[0] > 0:",
        "        grid = (grid[0], 1, 1)",
        "    else:",
        "        return slow(kernel, grid, *args, stream=stream)",
        f"    cache.go(grid, [{', '.join(names)}], stream)",
        "    return kernel",
    ]
    source = "\n".join(lines) + "\n"
    cache = _FastCache()

    def first(grid, args, stream):
        """The general launch, then what the generated path needs for the next call."""
        out = slow(kernel, grid, *args, stream=stream)
        cache.state = plan.state
        cache.by_type = plan.binder.by_type
        cache.go = entry_of(kernel).go
        return out

    def slow(kernel, grid, *args, stream=None):
        """:func:`launch`, its errors naming the user's call line."""
        try:
            return launch(kernel, grid, *args, stream=stream)
        except CALL_ERRORS as exc:
            raise at_call_site(exc, f"{kernel.name}[grid](...)") from None

    namespace = {"slow": slow, "first": first, "kernel": kernel, "cache": cache, "mgr": _mgr,
                 "ACCEPTED": plan.accepted}
    exec(compile(source, f"<naiad compiled launch of {kernel.name}>", "exec"), namespace)
    made = namespace["launch"]
    made.source = source
    kernel._naiad_fast_launch = made
    return made


class _FastCache:
    """What the generated compiled launch reads per call, filled by its first general launch."""

    __slots__ = ("state", "by_type", "go")

    def __init__(self):
        self.state = self.by_type = self.go = None
