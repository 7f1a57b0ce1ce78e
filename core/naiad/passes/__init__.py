"""Generic (target-independent) passes over the tile IR, and the pass manager that runs them.

``run_generic_pipeline(module, options=None)`` runs, in place, in this order:

1. ``inline``        calls to device functions disappear first, so every later pass sees the
                     whole kernel and callee code meets the caller's constants;
2. ``canonicalize``  folds constants (incl. ``equal_to: 1`` arguments), static ``if``s and
                     zero-trip loops — which also makes loop bounds constant for unrolling;
3. ``unroll``        fully unrolls loops that ask for it (``unroll`` attr) or are below the
                     ``unroll_threshold`` option (default 0);
4. ``cse``           merges duplicates (from inlining, unrolling and the frontend), so LICM
                     hoists each invariant once;
5. ``licm``          hoists loop invariants out of ``for``/``while`` bodies;
6. ``canonicalize``  folds what hoisting and unrolling exposed (constant induction variables,
                     splats meeting splats, combinable ``addptr`` chains);
7. ``cse``           merges hoisted ops with their twins outside the loop;
8. ``dce``           removes everything left unused, including dead loop-carried values.

``options`` (a dict or an options object; unknown keys ignored): ``debug`` (verify between
passes), ``dump`` (a ``NAIAD_DUMP``-style spec), ``timing``, ``unroll_threshold``,
``unroll_max_ops``. The environment variables are documented in :mod:`naiad.passes.manager`.
"""
from __future__ import annotations

from ..ir.core import Module
from .canonicalize import canonicalize
from .cse import cse
from .dce import dce
from .inline import inline
from .licm import licm
from .manager import PassContext, PassManager, PassTiming
from .unroll import unroll

GENERIC_PIPELINE = ("inline", "canonicalize", "unroll", "cse", "licm", "canonicalize", "cse", "dce")

PASSES = {"inline": inline, "canonicalize": canonicalize, "unroll": unroll, "cse": cse,
          "licm": licm, "dce": dce}


def _opt(options, name):
    if options is None:
        return None
    if isinstance(options, dict):
        return options.get(name)
    return getattr(options, name, None)


def generic_pipeline(options=None) -> PassManager:
    """The generic pipeline as a PassManager (named ``generic``)."""
    return PassManager("generic", [(n, PASSES[n]) for n in GENERIC_PIPELINE],
                       debug=_opt(options, "debug"), dump=_opt(options, "dump"),
                       timing=_opt(options, "timing"))


def run_generic_pipeline(module: Module, options=None) -> Module:
    """Run the generic passes over ``module`` in place and return it."""
    return generic_pipeline(options).run(module, options=options)


__all__ = ["run_generic_pipeline", "generic_pipeline", "GENERIC_PIPELINE", "PASSES",
           "PassManager", "PassContext", "PassTiming", "inline", "canonicalize", "unroll", "cse",
           "licm", "dce"]
