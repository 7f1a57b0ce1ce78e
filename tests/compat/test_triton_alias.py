"""`naiad run`: unmodified Triton programs with `triton` resolved to naiad; the compat harness's
root-cause folding and comparison."""
import subprocess
import sys
import textwrap

import pytest

from naiad.compat import harness, triton_alias
from naiad.compat.harness import root_cause

TRITON_PROGRAM = textwrap.dedent('''
    import sys
    import numpy as np
    import triton
    import triton.language as tl
    from triton.runtime import driver
    from triton.tools.tensor_descriptor import TensorDescriptor
    import triton.testing

    @triton.jit
    def scale(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

    assert triton.__name__ == "naiad.compat.triton_root"
    assert driver.active.get_current_target().backend == "reference"
    n = int(sys.argv[1])
    x = np.random.default_rng(5).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    scale[(triton.cdiv(n, 64),)](x, out, n, 3.0, BLOCK=64, num_ctas=1, launch_pdl=False)
    triton.testing.assert_close(out, x * 3.0, atol=0, rtol=0)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:        # torch CPU tensors as pointer arguments
        tx = torch.randn(n)
        tout = torch.full((n,), float("nan"))
        scale[(triton.cdiv(n, 64),)](tx, tout, n, 2.0, BLOCK=64)
        assert torch.equal(tout, tx * 2.0)
    print("ok", n)
''')


def _naiad(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "naiad", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_naiad_run_executes_an_unmodified_triton_program(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(TRITON_PROGRAM)
    done = _naiad("run", "--target", "reference", str(script), "200")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok 200")


def test_naiad_run_passes_the_scripts_exit_status(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nimport triton\nsys.exit(3)\n")
    assert _naiad("run", str(script)).returncode == 3


def test_missing_triton_module_is_an_import_error_naming_both():
    with triton_alias.aliased():
        with pytest.raises(ModuleNotFoundError, match="triton.knobs.*naiad.knobs"):
            import triton.knobs  # noqa: F401
        import triton
        import naiad.language
        import triton.language as tl
        assert tl is naiad.language
        with pytest.raises(AttributeError, match="naiad does not provide triton.knobs"):
            triton.knobs
    assert "triton" not in sys.modules or not sys.modules["triton"].__name__.startswith("naiad")


def test_root_causes_fold_locations_numbers_and_names():
    a = root_cause("CompilationError", "k.py:12:5: bad shape '[1, 2]' for 128 elements\n x")
    b = root_cause("CompilationError", "k.py:99:1: bad shape '(4,)' for 64 elements")
    assert a == b == "CompilationError: bad shape '…' for N elements"
    assert root_cause("CompilationError", "x.py:1:2: naiad.language has no attribute 'flip'") \
        == "CompilationError: naiad.language has no attribute 'flip'"
    assert root_cause("FixtureLookupError", "('fx', <FixtureRequest for <Function t[1-a]>>)") \
        == "FixtureLookupError: ('fx', <FixtureRequest for <…>>)"


def test_compare_counts_the_baselines_passes():
    ours = {"outcomes": {"a": "passed", "b": "failed", "c": "passed", "d": "skipped"}}
    base = {"outcomes": {"a": "passed", "b": "passed", "c": "failed", "d": "passed"}}
    text = harness.compare(ours, base)
    assert "of the 3 tests the baseline passes, this run passes 1 (33.3%)" in text
    assert "also passes 1" in text


TRITON_STYLE_TESTS = textwrap.dedent('''
    import numpy as np
    import pytest
    import torch
    import triton
    import triton.language as tl
    from triton._internal_testing import is_interpreter, numpy_random, to_triton, to_numpy


    @triton.jit
    def double(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


    @pytest.mark.interpreter
    @pytest.mark.parametrize("dtype", ["int32", "float32"])
    def test_double(dtype, device):
        assert is_interpreter() and device == "cpu"
        x = numpy_random(64, dtype)
        out = to_triton(np.full(64, -7, dtype), device=device)
        double[(1,)](to_triton(x, device=device), out, 64, num_ctas=1)
        np.testing.assert_array_equal(to_numpy(out), x * 2)


    @pytest.mark.interpreter
    def test_wrong_on_purpose(device):
        raise ValueError("expected 3 but got 4")


    @pytest.mark.interpreter
    def test_skipped(device):
        pytest.skip("not here")


    def test_not_marked(device):
        raise AssertionError("only tests marked interpreter run")
''')


def test_compat_harness_counts_outcomes_and_root_causes(tmp_path):
    pytest.importorskip("torch", reason="Triton-style tests build torch tensors")
    (tmp_path / "test_core.py").write_text(TRITON_STYLE_TESTS)
    report = tmp_path / "r.json"
    done = _naiad("compat-test", str(tmp_path), "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert "naiad reference: 4 tests: 2 passed, 1 failed, 1 skipped" in done.stdout
    assert "1  ValueError: expected N but got N" in done.stdout
    import json

    outcomes = json.loads(report.read_text())["outcomes"]
    assert outcomes["test_core.py::test_double[int32]"] == "passed"
    assert "test_core.py::test_not_marked" not in outcomes


def test_show_prints_a_saved_report_against_a_baseline(tmp_path):
    import json

    ours = {"mode": "naiad", "target": "reference", "seconds": 3,
            "outcomes": {"a": "passed", "b": "failed"}, "causes": {"b": "ValueError: x"}}
    base = {"mode": "triton-interpreter", "outcomes": {"a": "passed", "b": "passed"},
            "causes": {}}
    (tmp_path / "ours.json").write_text(json.dumps(ours))
    (tmp_path / "base.json").write_text(json.dumps(base))
    done = _naiad("compat-test", "--show", str(tmp_path / "ours.json"), "--against",
                  str(tmp_path / "base.json"))
    assert done.returncode == 0, done.stderr
    assert "naiad reference: 2 tests: 1 passed, 1 failed, 0 skipped" in done.stdout
    assert "1  ValueError: x" in done.stdout
    assert "of the 2 tests the baseline passes, this run passes 1 (50.0%)" in done.stdout
    assert _naiad("compat-test").returncode == 1      # neither a folder nor --show
