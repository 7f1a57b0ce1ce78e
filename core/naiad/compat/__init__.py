"""Running unmodified Triton programs on naiad.

* :mod:`naiad.compat.triton_alias` — an import hook resolving ``triton`` and ``triton.*`` to
  naiad (``naiad run script.py`` installs it);
* :mod:`naiad.compat.triton_root` — the module ``import triton`` then yields;
* :mod:`naiad.compat.internal_testing` — ``triton._internal_testing``, the helpers Triton's unit
  tests import;
* :mod:`naiad.compat.harness` — ``naiad compat-test``: Triton's own tests against naiad.
"""
