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
from .specialize import ArgBinder, ArgumentError
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


def _runtime_args(kernel, args: tuple) -> tuple:
    params = list(kernel.signature)
    if len(args) == len(params):
        return args
    names = list(kernel.arg_names)
    if names and len(args) == len(names):
        return tuple(a for n, a in zip(names, args) if n in kernel.signature)
    expected = f"{len(params)} runtime arguments ({', '.join(params)})"
    if names:
        expected += f" or all {len(names)} parameters ({', '.join(names)})"
    raise ArgumentError(f"compiled kernel {kernel.name} takes {expected}, got {len(args)}")


def launch(kernel, grid, *args, stream=None, **ignored_options):
    """Launch ``kernel`` on ``grid``; keywords such as ``num_warps`` are fixed at compile time and
    ignored here, as Triton does."""
    state = state_for(kernel.target)
    if callable(grid):
        grid = grid(dict(zip(kernel.arg_names, args)))
    grid3 = _grid3(grid)
    values = _runtime_args(kernel, args)
    binder = state.binder or ArgBinder(not state.spec.compiled, state.name,
                                       None if not state.spec.compiled else state.launcher)
    vals = []
    for (name, sig), value in zip(kernel.signature.items(), values):
        try:
            (got, _fact), v = binder.bind(value)
        except ArgumentError as exc:
            raise ArgumentError(f"{kernel.name}: argument {name!r}: {exc}") from None
        if got != sig and not (got == "i32" and sig in ("i64", "u32", "u64")):
            raise ArgumentError(f"{kernel.name}: argument {name!r} is {got}, but this compiled "
                                f"kernel was specialised for {sig}; launch the JIT function "
                                f"(kernel[grid](...)) to compile a new specialisation")
        vals.append(v)
    if grid3 is None:
        return kernel
    entry_of(kernel).go(grid3, vals, stream)
    return kernel


def launcher(kernel, grid):
    return functools.partial(launch, kernel, grid)
