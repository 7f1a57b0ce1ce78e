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
