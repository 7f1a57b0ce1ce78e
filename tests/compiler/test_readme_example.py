"""The README's example must run as written (on the reference target here)."""
import pathlib
import runpy

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(tmp_path, monkeypatch):
    text = README.read_text()
    start = text.index("```python") + len("```python")
    code = text[start:text.index("```", start)]
    script = tmp_path / "readme_example.py"
    script.write_text(code)
    monkeypatch.setenv("NAIAD_TARGET", "reference")
    import naiad

    with naiad.target("reference"):
        runpy.run_path(str(script), run_name="__main__")  # raises on a failed assert


def test_ci_runs_the_readme_setup_commands():
    """.ci/run is the README's two commands on a fresh virtualenv: same install (with the vendor
    extras, so the test command's compile tiers have their toolchains), same test backends."""
    readme = README.read_text()
    block = readme.split("## Setup: two commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    install, test = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert "[test,all]" in install
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    assert install in ci
    pytest_line = next(line for line in ci if line.startswith("pytest"))
    assert pytest_line.split()[-1] == test.split()[-1] == "--backend=reference,nvidia,amd"
