"""naiad.remarks: performance remarks recorded on a module, listed once each, printed on
request."""
from naiad import remarks
from naiad.frontend.source import SourceLoc
from naiad.ir.core import Module


def test_remarks_name_file_and_line_once_in_order():
    module = Module()
    loc = SourceLoc("/home/me/kernels/matmul.py", 42, 8)
    first = remarks.remark(module, loc, "dot", "uses mma.sync instead of wgmma: because")
    remarks.remark(module, SourceLoc("/x/y.py", 7, 0), "load", "is not vectorised: because")
    remarks.remark(module, loc, "dot", "uses mma.sync instead of wgmma: because")  # again
    assert first == "dot at matmul.py:42 uses mma.sync instead of wgmma: because"
    assert remarks.collect(module) == [first, "load at y.py:7 is not vectorised: because"]
    assert remarks.where(None) == "<unknown>"
    assert remarks.collect(Module()) == []


def test_report_prints_only_when_asked(monkeypatch, capsys):
    for value, shown in (("1", True), ("true", True), ("0", False), ("", False)):
        monkeypatch.setenv("NAIAD_REMARKS", value)
        remarks.report("kern", ["dot at a.py:1 uses FMA instead of tensor cores: why"])
        err = capsys.readouterr().err
        assert ("naiad remark (kern): dot at a.py:1 uses FMA" in err) == shown
