"""The ``naiad`` command: ``targets``, ``compile``, ``conformance``, ``demo``, ``run`` (a Triton
program with ``triton`` resolved to naiad) and ``compat-test`` (Triton's own tests on naiad).

Every naiad error is printed as one ``naiad: error: ...`` line with exit status 1 (2 for usage
mistakes, as argparse does); tracebacks are for bugs only.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

from .errors import NaiadError


# -- naiad targets ------------------------------------------------------------------------------
def cmd_targets(args) -> int:
    from .plugins import manager
    from .runtime import targets

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", manager.PluginWarning)
        pm = manager.get_plugin_manager()
        table = pm.target_table()
    print("plugins:")
    for name, plugin in pm.list_name_plugin():
        origin = pm.origins.get(name, "registered in-process")
        print(f"  {name:<16} {origin}")
    if pm.broken:
        print("broken plugins (left out):")
        for broken in pm.broken:
            print(f"  {broken}")
    try:
        current = str(targets.get_target())
    except NaiadError as exc:
        current = f"none ({exc})"
    print(f"current target: {current}")
    print("targets:")
    rows = [("target", "warp", "kind", "device here", "plugin")]
    for backend, entry in table.items():
        spec = entry.spec
        arch_here = targets._detect(spec)
        for arch in spec.archs:
            name = backend if (len(spec.archs) == 1 and not spec.compiled) else f"{backend}:{arch}"
            if not spec.compiled:
                present = "yes (host)"
            else:
                present = "yes" if arch_here == arch else "no"
            kind = "compiled" if spec.compiled else "interpreted"
            if spec.unavailable:
                kind = f"unavailable: {spec.unavailable}"
            rows.append((name, str(spec.warp_sizes[arch]), kind, present, entry.plugin_name))
    _print_table(rows, indent="  ")
    return 0


def _print_table(rows, indent: str = "") -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if i == 0:
            print(indent + "  ".join("-" * w for w in widths))


# -- naiad compile --------------------------------------------------------------------------------
def _load_kernel(spec: str):
    """``path/to/file.py:kernel`` -> the JITFunction (the bottom of an autotune stack)."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise NaiadError(f"expected FILE:KERNEL, got {spec!r}")
    file = Path(path)
    if not file.is_file():
        raise NaiadError(f"no such file: {path}")
    module_name = f"_naiad_cli_{abs(hash(str(file.resolve())))}"
    sys.path.insert(0, str(file.resolve().parent))
    mspec = importlib.util.spec_from_file_location(module_name, file)
    module = importlib.util.module_from_spec(mspec)
    sys.modules[module_name] = module
    mspec.loader.exec_module(module)
    kernel = getattr(module, name, None)
    if kernel is None:
        raise NaiadError(f"{path} defines no {name!r}")
    while not hasattr(kernel, "constexpr_params") and hasattr(kernel, "fn"):
        kernel = kernel.fn
    if not hasattr(kernel, "constexpr_params"):
        raise NaiadError(f"{path}:{name} is not a @naiad.jit function")
    return kernel


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_assignments(items, what: str) -> dict:
    out = {}
    for item in items or ():
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip():
                raise NaiadError(f"{what} entries are NAME=VALUE, got {part!r}")
            out[name.strip()] = value.strip()
    return out


def _parse_signature(text: str):
    """``"x_ptr=*fp32,n=i32"`` -> dict; ``"*fp32,i32"`` (positional) stays a string."""
    if "=" not in text:
        return text
    return _parse_assignments([text], "--signature")


def cmd_compile(args) -> int:
    from .compiler import compile as naiad_compile

    kernel = _load_kernel(args.kernel)
    constexprs = {k: _parse_value(v) for k, v in _parse_assignments(args.constexpr,
                                                                    "--constexpr").items()}
    options = {k: _parse_value(v) for k, v in _parse_assignments(args.option,
                                                                "--option").items()}
    compiled = naiad_compile(kernel, signature=_parse_signature(args.signature),
                             constexprs=constexprs, target=args.target, options=options)
    stages = list(compiled.asm)
    wanted = stages if not args.emit else [s.strip() for s in args.emit.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in compiled.asm]
    if unknown:
        raise NaiadError(f"stage(s) {', '.join(unknown)} not produced for target "
                         f"{compiled.target}; available: {', '.join(stages)}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for stage in wanted:
            artifact = compiled.asm[stage]
            path = out / f"{compiled.name}.{stage}"
            if isinstance(artifact, str):
                path.write_text(artifact)
            else:
                path.write_bytes(bytes(artifact))
            unit = "chars" if isinstance(artifact, str) else "bytes"
            print(f"wrote {path} ({len(artifact)} {unit})")
        return 0
    for stage in wanted:
        artifact = compiled.asm[stage]
        print(f"// ----- {stage} ({compiled.name}, {compiled.target}) -----")
        if isinstance(artifact, str):
            print(artifact.rstrip("\n"))
        else:
            print(f"<{len(artifact)} bytes of binary; use --out DIR to write it>")
    if compiled.metadata:
        meta = ", ".join(f"{k}={v}" for k, v in sorted(compiled.metadata.items()))
        print(f"// metadata: {meta}")
    return 0


# -- naiad conformance -----------------------------------------------------------------------------
def conformance_path() -> Path | None:
    """Where the conformance suite lives: the installed ``naiad_conformance`` package, else the
    ``conformance/`` folder of a source checkout. (If the suite moves, change it here only.)"""
    spec = importlib.util.find_spec("naiad_conformance")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    checkout = Path(__file__).resolve().parents[2] / "conformance"
    if (checkout / "conftest.py").is_file():
        return checkout
    return None


def cmd_conformance(args, extra) -> int:
    path = conformance_path()
    if path is None:
        raise NaiadError("the conformance suite is not installed (no naiad_conformance package "
                         "and no conformance/ folder next to the naiad sources)")
    cmd = [sys.executable, "-m", "pytest", str(path), f"--backend={args.backend}",
           "-p", "no:cacheprovider"]
    if args.skip_list:
        cmd.append(f"--skip-list={args.skip_list}")
    cmd += extra
    print("running:", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=str(path.parent))


# -- naiad demo ------------------------------------------------------------------------------------
def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(target=args.target, quick=args.quick)


# -- naiad run -------------------------------------------------------------------------------------
def cmd_run(args) -> int:
    from .compat.run_script import run_script

    return run_script(args.script, list(args.script_args), target=args.target)


# -- naiad compat-test ------------------------------------------------------------------------------
def cmd_compat_test(args, extra) -> int:
    from .compat.harness import run_compat, show

    if args.show:
        return show(args.show, args.against)
    if args.path is None:
        raise NaiadError("compat-test needs the folder of Triton's tests (or --show REPORT)")
    return run_compat(args.path, backend=args.backend, keyword=args.k, extra=extra,
                      peer=args.peer, junit=args.junit, maxfail=args.maxfail,
                      timeout=args.timeout, report=args.report, against=args.against,
                      sample=args.sample, shard=args.shard, workers=args.workers,
                      deadline=args.deadline)


# -- entry point -----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="naiad", description="naiad: a Triton-style kernel "
                                     "language with pluggable backends")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("targets", help="list plugins, targets and the devices present")

    comp = sub.add_parser("compile", help="compile a kernel ahead of time and print/write stages")
    comp.add_argument("kernel", metavar="FILE:KERNEL")
    comp.add_argument("--signature", "-s", required=True,
                      help='types of the runtime parameters: "x_ptr=*fp32,n=i32" or "*fp32,i32"')
    comp.add_argument("--constexpr", "-c", action="append", metavar="NAME=VALUE",
                      help="constexpr value (repeatable, or comma separated)")
    comp.add_argument("--option", "-o", action="append", metavar="NAME=VALUE",
                      help="compile option such as num_warps=8 (repeatable)")
    comp.add_argument("--target", "-t", default=None, help="e.g. nvidia:sm_90 (default: current)")
    comp.add_argument("--emit", "-e", default=None,
                      help="comma-separated stages (tile,gpu,llir,ptx,cubin,...); default all")
    comp.add_argument("--out", default=None, metavar="DIR", help="write <kernel>.<stage> files")

    conf = sub.add_parser("conformance", help="run the conformance suite against a backend "
                          "(extra arguments go to pytest)")
    conf.add_argument("--backend", default="reference")
    conf.add_argument("--skip-list", default=None, metavar="FILE")

    run = sub.add_parser("run", help="run an unmodified Triton program with `triton` resolved "
                         "to naiad: naiad run [--target T] script.py [args...]")
    run.add_argument("--target", "-t", default=None, help="e.g. reference, nvidia:sm_90")
    run.add_argument("script")
    run.add_argument("script_args", nargs=argparse.REMAINDER)

    compat = sub.add_parser("compat-test", help="run Triton's test_core.py/test_standard.py "
                            "with naiad standing in for triton (extra arguments go to pytest)")
    compat.add_argument("path", nargs="?", default=None,
                        help="folder (or file) holding Triton's test files")
    compat.add_argument("--show", default=None, metavar="REPORT",
                        help="print the summary of a saved --report instead of running")
    compat.add_argument("--backend", default="reference")
    compat.add_argument("-k", default=None, help="pytest -k expression selecting tests")
    compat.add_argument("--peer", choices=("naiad", "triton-interpreter", "triton"),
                        default="naiad",
                        help="who runs the tests: naiad (default), Triton's own interpreter "
                        "(TRITON_INTERPRET=1, the CPU baseline) or compiled Triton (device=cuda, "
                        "the GPU baseline)")
    compat.add_argument("--sample", default=None, metavar="1/N",
                        help="run every N-th test (sorted ids): a deterministic sample")
    compat.add_argument("--shard", default=None, metavar="I/N",
                        help="run the I-th of every N tests (sorted ids)")
    compat.add_argument("-n", dest="workers", type=int, default=None, metavar="N",
                        help="run in N parallel processes (needs pytest-xdist)")
    compat.add_argument("--junit", default=None, metavar="FILE", help="also write JUnit XML")
    compat.add_argument("--maxfail", type=int, default=None)
    compat.add_argument("--report", default=None, metavar="FILE",
                        help="keep the JSON report (every test's outcome and root cause)")
    compat.add_argument("--against", default=None, metavar="FILE",
                        help="a report of the other peer: print how many of its passes this "
                        "run passes")
    compat.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                        help="interrupt the run after SECONDS; the report keeps what ran")
    compat.add_argument("--timeout", type=float, default=None,
                        help="seconds per test before it counts as failed (needs a POSIX alarm)")

    demo = sub.add_parser("demo", help="run the tutorial kernels, check them against numpy")
    demo.add_argument("--target", "-t", default=None)
    demo.add_argument("--quick", action="store_true", help="smaller problems, fewer repeats")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":   # everything after the script belongs to the script
        args = parser.parse_args(argv)
        extra = []
    else:
        args, extra = parser.parse_known_args(argv)
    if extra and args.command not in ("conformance", "compat-test"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "targets":
            return cmd_targets(args)
        if args.command == "compile":
            return cmd_compile(args)
        if args.command == "conformance":
            return cmd_conformance(args, extra)
        if args.command == "demo":
            return cmd_demo(args)
        if args.command == "run":
            return cmd_run(args)
        if args.command == "compat-test":
            return cmd_compat_test(args, extra)
    except NaiadError as exc:
        print(f"naiad: error: {exc}", file=sys.stderr)
        return 1
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
