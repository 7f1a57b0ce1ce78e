"""``compiled[grid](*args)``: launching one CompiledKernel directly, as Triton's compiled kernels
allow (``k = kernel.warmup(...); k[(n,)](...)``).

The binary is fixed, so the arguments must match the signature it was compiled for: each runtime
argument is bound with the target's binder and its type is checked against the signature (a
mismatch is an error, never a silent reinterpretation). Arguments are either the runtime ones
alone or every parameter in order; in the second form the constexpr values are skipped.
"""
from __future__ import annotations

import functools

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
    ignored here, as Triton does."""
    plan = _plan_of(kernel)
    if callable(grid):
        grid = grid(dict(zip(kernel.arg_names, args)))
    grid3 = _grid3(grid)
    vals = plan.bind(plan.runtime_args(args))
    if grid3 is None:
        return kernel
    entry_of(kernel).go(grid3, vals, stream)
    return kernel


def launcher(kernel, grid):
    return functools.partial(launch, kernel, grid)
