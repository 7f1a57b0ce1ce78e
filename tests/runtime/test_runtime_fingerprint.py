"""A kernel's fingerprint (its on-disk cache identity) and the in-memory keys: everything the
compiled code depends on is in them, and nothing stale is served.

Each test here failed before the fix it covers (issue 13, "Cache and plugins")."""
from __future__ import annotations

import importlib
import sys
import textwrap
import threading

import numpy as np
import pytest

import naiad
import naiad.language as tl
from naiad.errors import CompilationError, StaleKernelError
from naiad.runtime import cache as disk
from naiad.runtime import fingerprint


def _write(root, files: dict[str, str]):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _import_fresh(root, module: str, packages=("fpkg", "fcfg", "fkern")):
    """Import ``module`` from ``root`` as a new process would: the same module names, read anew."""
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(root))


NESTED = {
    "fpkg/__init__.py": "from . import sub\n",
    "fpkg/sub.py": '''
        import naiad

        @naiad.jit
        def helper(x):
            return x + {inc}
    ''',
    "fcfg.py": "SCALE = {scale}\n",
    "fkern.py": '''
        import naiad
        import fpkg.sub
        import fcfg

        @naiad.jit
        def kern(x_ptr):
            fpkg.sub.helper(fcfg.SCALE)
    ''',
}


def _nested_fingerprint(tmp_path, tag, inc, scale):
    root = tmp_path / tag
    _write(root, {k: v.format(inc=inc, scale=scale) for k, v in NESTED.items()})
    return disk.function_fingerprint(_import_fresh(root, "fkern").kern)


def test_nested_module_helpers_and_module_constants_are_in_the_fingerprint(tmp_path):
    base = _nested_fingerprint(tmp_path, "a", inc=1, scale=2)
    assert _nested_fingerprint(tmp_path, "b", inc=1, scale=2) == base   # same code: same key
    assert _nested_fingerprint(tmp_path, "c", inc=3, scale=2) != base   # pkg.sub.helper edited
    assert _nested_fingerprint(tmp_path, "d", inc=1, scale=5) != base   # cfg.SCALE edited


DEFAULTS = '''
    import naiad
    WIDTH = {width}

    @naiad.jit
    def helper(x, N: "tl.constexpr" = WIDTH):
        return x + N

    @naiad.jit
    def kern(x_ptr):
        helper(1)
'''


def test_callee_default_values_are_in_the_fingerprint(tmp_path):
    prints = []
    for tag, width in (("a", 4), ("b", 8)):
        _write(tmp_path / tag, {"fkern.py": DEFAULTS.format(width=width)})
        prints.append(disk.function_fingerprint(_import_fresh(tmp_path / tag, "fkern").kern))
    assert prints[0] != prints[1]


CHAIN = '''
    import naiad
    import fcfg

    @naiad.jit
    def kern(x_ptr):
        a(b(0))

    @naiad.jit
    def a(x):
        return b(x) + fcfg.SCALE

    @naiad.jit
    def b(x):
        return x + {inc}
'''


def test_concurrent_first_fingerprints_are_complete(tmp_path):
    """Threads fingerprinting one kernel at once (as concurrent first launches do) must all get
    the full fingerprint, never a "cycle" placeholder that ignores the source."""
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as possible
    try:
        for round_ in range(6):
            root = tmp_path / f"r{round_}"
            _write(root, {"fcfg.py": "SCALE = 3\n", "fkern.py": CHAIN.format(inc=round_)})
            expected = disk.function_fingerprint(_import_fresh(root, "fkern").kern)
            mod = _import_fresh(root, "fkern")
            barrier = threading.Barrier(8)
            results = []

            def first_launch(fn):
                barrier.wait()
                results.append(disk.function_fingerprint(fn))  # list.append is atomic

            fns = (mod.kern, mod.a, mod.b, mod.kern) * 2
            threads = [threading.Thread(target=first_launch, args=(f,)) for f in fns]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(results).count(expected) == 4, results      # the kernel, 4 times
            serial = _import_fresh(root, "fkern")
            others = {disk.function_fingerprint(serial.a), disk.function_fingerprint(serial.b)}
            assert set(results) == {expected} | others
    finally:
        sys.setswitchinterval(old_interval)


def test_concurrent_first_launches_store_under_the_full_key(tmp_path, stub, fake_compiler,
                                                            cache_dir):
    """Threads launching fresh kernels at once: every disk entry's key holds the source
    fingerprint a lone launch computes (before: "cycle:kern" in some rounds)."""
    import json

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for round_ in range(4):
            root = tmp_path / f"l{round_}"
            _write(root, {"fcfg.py": "SCALE = 3\n", "fkern.py": CHAIN.format(inc=round_)})
            expected = disk.function_fingerprint(_import_fresh(root, "fkern").kern)
            mod = _import_fresh(root, "fkern")
            barrier = threading.Barrier(6)
            errors = []

            def first_launch():
                barrier.wait()
                try:
                    mod.kern[(1,)](np.ones(8, np.float32))
                except BaseException as exc:   # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=first_launch) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors
            sources = {json.loads(p.read_text())["key_components"]["source"]
                       for p in (cache_dir / "kernels").glob("*/*/meta.json")}
            assert expected in sources and not any(s.startswith("cycle") for s in sources)
    finally:
        sys.setswitchinterval(old_interval)


def test_mutual_recursion_fingerprints_include_every_source(tmp_path):
    """Within a cycle each function's fingerprint still covers the other's source, whichever
    function is fingerprinted first."""
    text = '''
        import naiad

        @naiad.jit
        def ping(x):
            return pong(x) + {inc}

        @naiad.jit
        def pong(x):
            return ping(x)
    '''
    prints = []
    for tag, inc in (("a", 1), ("b", 2)):
        _write(tmp_path / tag, {"fkern.py": text.format(inc=inc)})
        mod = _import_fresh(tmp_path / tag, "fkern")
        disk.function_fingerprint(mod.ping)       # fingerprint ping's cycle first
        prints.append(disk.function_fingerprint(mod.pong))
    assert prints[0] != prints[1]


# -- globals changed inside the process -----------------------------------------------------------
GLOBAL_KERNEL = '''
    import naiad
    import fcfg
    SCALE = 2

    @naiad.jit
    def kern(x_ptr, n, FACTOR: "tl.constexpr"):
        x_ptr + SCALE + fcfg.SCALE
'''


def test_changed_global_is_detected_at_launch(tmp_path, stub, fake_compiler):
    _write(tmp_path, {"fcfg.py": "SCALE = 1\n", "fkern.py": GLOBAL_KERNEL})
    mod = _import_fresh(tmp_path, "fkern")
    x = np.ones(8, np.float32)
    mod.kern[(1,)](x, 8, FACTOR=1)
    mod.kern[(1,)](x, 8, FACTOR=1)            # warm path: nothing changed
    assert len(stub.launcher.launches) == 2
    mod.SCALE = 3
    with pytest.raises(StaleKernelError, match="Global variable SCALE has changed"):
        mod.kern[(1,)](x, 8, FACTOR=1)        # warm path
    with pytest.raises(StaleKernelError, match="from 2 to 3"):
        mod.kern[(1,)](x, 8, FACTOR=7)        # a new specialisation: the slow path
    with pytest.raises(StaleKernelError):
        mod.kern.warmup(x, 8, FACTOR=1)
    assert len(stub.launcher.launches) == 2 and len(fake_compiler.calls) == 1
    mod.kern.cache_clear()                     # the documented way on
    mod.kern[(1,)](x, 8, FACTOR=1)
    assert len(fake_compiler.calls) == 2
    sys.modules["fcfg"].SCALE = 9              # a module attribute read as fcfg.SCALE
    with pytest.raises(StaleKernelError, match="fcfg.SCALE"):
        mod.kern[(1,)](x, 8, FACTOR=1)


def test_rebinding_a_global_to_an_equal_value_is_not_a_change(tmp_path, stub, fake_compiler):
    _write(tmp_path, {"fcfg.py": "SCALE = 1\n", "fkern.py": GLOBAL_KERNEL})
    mod = _import_fresh(tmp_path, "fkern")
    x = np.ones(8, np.float32)
    mod.kern[(1,)](x, 8, FACTOR=1)
    mod.SCALE = int("2")
    mod.kern[(1,)](x, 8, FACTOR=1)
    assert len(stub.launcher.launches) == 2


def test_changed_global_on_the_reference_runs_no_stale_code(tmp_path):
    """End to end: the reference executor never runs a kernel built from the old value."""
    _write(tmp_path, {"fkern.py": '''
        import naiad
        import naiad.language as tl
        OFFSET = 1.0

        @naiad.jit
        def add_offset(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + OFFSET)
    '''})
    mod = _import_fresh(tmp_path, "fkern")
    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    expected = x + 1.0
    with naiad.target("reference"):
        mod.add_offset[(1,)](x, BLOCK=16)
        np.testing.assert_allclose(x, expected)
        mod.OFFSET = 5.0
        with pytest.raises(StaleKernelError):
            mod.add_offset[(1,)](x, BLOCK=16)
        np.testing.assert_allclose(x, expected)     # nothing ran
        mod.add_offset.cache_clear()
        mod.add_offset[(1,)](x, BLOCK=16)
        np.testing.assert_allclose(x, expected + 5.0)


# -- constexpr values as in-memory keys -------------------------------------------------------------
@naiad.jit
def ce_kernel(x_ptr, n, VALUE: "tl.constexpr"):
    pass


@naiad.jit
def ce_first(VALUE: "tl.constexpr", x_ptr):
    pass


@pytest.mark.parametrize("shape", ["keyword", "positional_last", "positional_first"])
def test_negative_zero_and_nan_constexprs(stub, fake_compiler, shape):
    kern = ce_first if shape == "positional_first" else ce_kernel
    kern.cache_clear()
    x = np.ones(8, np.float32)

    def launch(value):
        if shape == "keyword":
            kern[(1,)](x, 8, VALUE=value)
        elif shape == "positional_last":
            kern[(1,)](x, 8, value)
        else:
            kern[(1,)](value, x)

    for _ in range(2):           # twice: the slow path, then the warm path
        launch(0.0)
        launch(-0.0)
    compiled = [c["constexprs"]["VALUE"] for c in fake_compiler.calls]
    assert len(compiled) == 2 and str(compiled[0]) == "0.0" and str(compiled[1]) == "-0.0"
    launched = [stub.launcher.loads[h[2]]["binary"] for h in
                (ln["handle"] for ln in stub.launcher.launches)]
    assert launched[0] == launched[2] != launched[1] == launched[3]
    for _ in range(3):           # a fresh NaN object each time: one compile, then hits
        launch(float("nan"))
        launch(np.float32("nan"))
    assert len(fake_compiler.calls) == 4
    assert kern.cache_info()["hits"] >= 2 + 4


# -- kernels without a source file --------------------------------------------------------------------
def test_kernel_without_source_file_is_a_compilation_error(stub):
    namespace = {"naiad": naiad, "tl": tl}
    exec("@naiad.jit\ndef nosrc(x_ptr):\n    pass\n", namespace)
    with pytest.raises(CompilationError, match="nosrc.*defined in a file"):
        namespace["nosrc"][(1,)](np.ones(4, np.float32))
    with pytest.raises(CompilationError, match="nosrc.*defined in a file"):
        naiad.compile(namespace["nosrc"], signature={"x_ptr": "*fp32"}, target="stub")


def test_kernel_whose_source_is_in_linecache_works(stub, fake_compiler):
    """What IPython does for its cells: the text is registered in linecache."""
    import linecache

    text = "@naiad.jit\ndef cell_kernel(x_ptr):\n    pass\n"
    name = "<naiad-test-cell-1>"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    try:
        namespace = {"naiad": naiad}
        exec(compile(text, name, "exec"), namespace)
        namespace["cell_kernel"][(1,)](np.ones(4, np.float32))
        assert fake_compiler.calls[-1]["fn"] == "cell_kernel"
    finally:
        del linecache.cache[name]


def test_fingerprint_watch_ignores_naiad_and_locals():
    @naiad.jit
    def uses_tl(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32))

    assert not fingerprint.fingerprint_of(uses_tl).watch


def test_watch_adopts_an_equal_rebinding_and_still_catches_a_change(tmp_path):
    _write(tmp_path, {"fcfg.py": "SCALE = 1\n", "fkern.py": GLOBAL_KERNEL})
    mod = _import_fresh(tmp_path, "fkern")
    watch = fingerprint.fingerprint_of(mod.kern).watch
    assert {w.chain for w in watch.items} >= {("SCALE",), ("fcfg", "SCALE")}
    watch.check()
    mod.SCALE = int("2")
    watch.check()                                   # equal: adopted, no error
    assert [w.value for w in watch.items if w.chain == ("SCALE",)][0] is mod.SCALE
    del mod.SCALE
    with pytest.raises(StaleKernelError, match="from 2 to <deleted>"):
        watch.check()
