"""Launch/compile options that every backend accepts, honoured or not.

A Triton program passes options meant for one GPU (``num_ctas``, ``launch_pdl``, ``maxnreg``,
``matrix_instr_nonkdim`` ...). None of them changes what a kernel computes, so GPU-ready code must
also run on a backend that cannot honour them (the reference executor, the other vendor). The rule,
kept in this one table so the backends need not each know Triton's full option list:

* an option the target's backend *knows* (a field of the options object its ``naiad_options`` hook
  returns) goes to the backend, which validates its value as usual;
* an option in :data:`IGNORED_WHEN_UNSUPPORTED` that the backend does not know is dropped, with
  one ``OptionWarning`` per (backend, option) per process;
* any other name is an error (Triton's words: "Keyword argument X was specified but
  unrecognised"): it is neither a kernel parameter nor an option.
"""
from __future__ import annotations

import dataclasses
import threading
import warnings

from ..errors import OptionError
from ..plugins import manager as _mgr

#: option -> what it asks of the hardware (the text of the one-time warning).
IGNORED_WHEN_UNSUPPORTED: dict[str, str] = {
    "num_warps": "warps per program",
    "num_stages": "software-pipelining depth",
    "num_ctas": "thread-block clusters (CTAs per program)",
    "maxnreg": "a register cap per thread",
    "launch_pdl": "programmatic dependent launch",
    "launch_cooperative_grid": "a cooperative (grid-synchronising) launch",
    "extern_libs": "extern device libraries (naiad links its own math library)",
    "enable_fp_fusion": "contracting a*b+c into fused multiply-adds",
    "enable_reflect_ftz": "flushing denormals in libdevice calls",
    "debug": "debug-mode checks in the compiled binary",
    "sanitize_overflow": "integer-overflow checks",
    "opt_level": "an LLVM optimisation level",
    "tensor_cores": "tensor-core matrix instructions",
    "waves_per_eu": "AMD occupancy hint (waves per execution unit)",
    "matrix_instr_nonkdim": "AMD MFMA instruction shape",
    "kpack": "AMD MFMA operand packing",
    "schedule_hint": "AMD instruction-scheduling variant",
    "instruction_sched_variant": "AMD instruction-scheduling variant",
    "num_buffers_warp_spec": "warp specialisation buffers",
    "num_consumer_groups": "warp specialisation consumer groups",
    "reg_dec_producer": "warp specialisation register split",
    "reg_inc_consumer": "warp specialisation register split",
    "minRegAutoWS": "warp specialisation register split",
    "maxRegAutoWS": "warp specialisation register split",
    "pingpongAutoWS": "warp specialisation ping-pong",
    "ir_override": "replacing an IR stage by a file",
}

_lock = threading.Lock()
_known_by_target: dict = {}          # target -> frozenset of option names, or None (unknown)
_warned: set[tuple[str, str]] = set()


class OptionWarning(UserWarning):
    """An option the target's backend cannot honour was ignored (it does not change results)."""


def _field_names(defaults) -> frozenset[str] | None:
    if defaults is None:
        return None
    if dataclasses.is_dataclass(defaults) and not isinstance(defaults, type):
        return frozenset(f.name for f in dataclasses.fields(defaults))
    if isinstance(defaults, dict):
        return frozenset(defaults)
    if hasattr(defaults, "__dict__"):
        return frozenset(vars(defaults))
    return None


def known_options(target) -> frozenset[str] | None:
    """Option names the target's backend knows: the fields of its default options (None when
    its ``naiad_options`` hook gives no inspectable object)."""
    key = (str(target), _mgr.generation)
    with _lock:
        if key in _known_by_target:
            return _known_by_target[key]
    try:
        defaults = _mgr.get_plugin_manager().hook.naiad_options(target=target, options={})
    except Exception:  # noqa: BLE001 -- a backend that needs options: drop nothing
        defaults = None
    names = _field_names(defaults)
    with _lock:
        _known_by_target[key] = names
    return names


def portable(target, options: dict | None) -> dict:
    """``options`` without the entries of :data:`IGNORED_WHEN_UNSUPPORTED` that ``target``'s
    backend does not know (each warned about once)."""
    if not options:
        return {}
    if not any(k in IGNORED_WHEN_UNSUPPORTED for k in options):
        return dict(options)   # nothing to drop: the backend's Options names unknown keywords
    known = known_options(target)
    if known is None:
        return dict(options)
    backend = getattr(target, "backend", str(target))
    unknown = [k for k in options if k not in known and k not in IGNORED_WHEN_UNSUPPORTED]
    if unknown:   # Triton's phrase, then naiad's explanation
        name = unknown[0]
        raise OptionError(f"unknown option {name!r}: Keyword argument {name} was specified but "
                          f"unrecognised (neither a parameter of the kernel nor an option of "
                          f"the {backend} backend; its options: {', '.join(sorted(known))})")
    droppable = [k for k in options if k not in known]
    if not droppable:
        return dict(options)
    out = dict(options)
    for name in droppable:
        del out[name]
        if (backend, name) not in _warned:
            _warned.add((backend, name))
            filename, lineno = _caller_outside_naiad()
            warnings.warn_explicit(f"naiad: option {name!r} ({IGNORED_WHEN_UNSUPPORTED[name]}) "
                                   f"is not supported by the {backend} backend and is ignored; "
                                   f"it does not change the kernel's results", OptionWarning,
                                   filename, lineno)
    return out


def _caller_outside_naiad() -> tuple[str, int]:
    """File and line of the innermost frame outside the naiad package (the user's launch)."""
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    def inside(name: str) -> bool:   # naiad's files and its generated launch functions
        return name.startswith("<naiad") or os.path.abspath(name).startswith(here)

    while frame is not None and inside(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "<naiad>", 0
    return frame.f_code.co_filename, frame.f_lineno

