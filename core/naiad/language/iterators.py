"""Loop ranges for ``for`` statements: ``range``/``tl.range`` become ``for`` ops, and
``tl.static_range`` is unrolled by the frontend. These are descriptions, read by the frontend;
they do nothing at run time."""
from __future__ import annotations

from ..errors import CompilationError
from .core import unwrap


class range:
    """``for i in tl.range(start, end, step, num_stages=..)``: a dynamic loop (a ``for`` op).

    The pipelining options are recorded as attributes of the loop.
    """

    static = False

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        self.attrs = {}
        options = (("num_stages", num_stages, None),
                   ("loop_unroll_factor", loop_unroll_factor, None),
                   ("disallow_acc_multi_buffer", disallow_acc_multi_buffer, False),
                   ("flatten", flatten, False), ("warp_specialize", warp_specialize, False))
        for name, value, default in options:
            value = unwrap(value)
            if value != default:
                if not isinstance(value, (int, bool)):
                    raise CompilationError(f"tl.range's {name} must be a compile-time integer or "
                                           f"bool, got {value!r}")
                self.attrs[name] = value

    def __iter__(self):
        raise CompilationError("tl.range can only be used as the iterable of a for loop in a "
                               "kernel")


class static_range:
    """``for i in tl.static_range(start, end, step)``: unrolled at compile time; ``i`` is a
    constexpr in each copy of the body."""

    static = True

    def __init__(self, arg1, arg2=None, step=None):
        if arg2 is None:
            start, end = 0, arg1
        else:
            start, end = arg1, arg2
        step = 1 if step is None else step
        values = []
        for what, v in (("start", start), ("end", end), ("step", step)):
            v = unwrap(v)
            if isinstance(v, bool) or not isinstance(v, int):
                raise CompilationError(f"tl.static_range's {what} must be a compile-time "
                                       f"integer (tl.constexpr), got {v!r}")
            values.append(v)
        self.start, self.end, self.step = values
        if self.step == 0:
            raise CompilationError("tl.static_range's step must not be zero")
        self.attrs = {}

    def values(self):
        import builtins

        return builtins.range(self.start, self.end, self.step)
