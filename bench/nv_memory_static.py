"""Static comparison with Triton of the memory-bound tutorials' kernels (02, 04, 05, 07), no GPU needed.

    python bench/nv_memory_static.py /path/to/triton-tutorials [02 04 05 07] [--markdown]

Each kernel is taken from the unmodified tutorial file (loaded as ``bench/triton_tutorials.py``
does: once with ``triton`` resolved to naiad, once with the real Triton), compiled for sm_90
with the tutorial's own configuration (block sizes, warps, stages, argument dtypes; pointers
and the multiples of 16 among the integer arguments specialised as both runtimes do), and both
PTX texts are linked by the same nvJitLink to read registers and spills. Printed per kernel:
registers/spills, shared memory, PTX instructions (all / global loads+stores / shared
accesses / cp.async), SASS counts (all / MUFU / CALL / MEMBAR, with Triton's bundled
cuobjdump) and the compile time of each.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import triton_tutorials  # noqa: E402  (the tutorial loader)


@dataclass
class KernelCase:
    tutorial: str
    file: str
    kernel: str
    signature: dict            # parameter -> naiad/Triton type string
    constexprs: dict
    options: dict
    aligned: tuple = ()        # parameters divisible by 16 at run time (pointers included)
    label: str = field(default="")


F16, F32 = "*fp16", "*fp32"
CASES = [
    KernelCase("02", "02-fused-softmax.py", "softmax_kernel",
               {"output_ptr": F32, "input_ptr": F32, "input_row_stride": "i32",
                "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
               {"BLOCK_SIZE": 4096, "num_stages": 4}, {"num_warps": 8, "num_stages": 4},
               ("output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_rows",
                "n_cols")),
    KernelCase("04", "04-low-memory-dropout.py", "_seeded_dropout",
               {"x_ptr": F32, "output_ptr": F32, "n_elements": "i32", "p": "fp32",
                "seed": "i32"},
               {"BLOCK_SIZE": 1024}, {"num_warps": 4}, ("x_ptr", "output_ptr", "n_elements")),
    KernelCase("05", "05-layer-norm.py", "_layer_norm_fwd_fused",
               {"X": F16, "Y": F16, "W": F16, "B": F16, "Mean": F32, "Rstd": F32,
                "stride": "i32", "N": "i32", "eps": "fp32"},
               {"BLOCK_SIZE": 8192}, {"num_warps": 8},
               ("X", "Y", "W", "B", "Mean", "Rstd", "stride", "N")),
    KernelCase("05", "05-layer-norm.py", "_layer_norm_bwd_dx_fused",
               {"DX": F16, "DY": F16, "DW": F16, "DB": F16, "X": F16, "W": F16, "Mean": F32,
                "Rstd": F32, "Lock": "*i32", "stride": "i32", "N": "i32"},
               {"GROUP_SIZE_M": 96, "BLOCK_SIZE_N": 8192}, {"num_warps": 8},
               ("DX", "DY", "DW", "DB", "X", "W", "Mean", "Rstd", "Lock", "stride", "N")),
    KernelCase("05", "05-layer-norm.py", "_layer_norm_bwd_dwdb",
               {"DW": F16, "DB": F16, "FINAL_DW": F16, "FINAL_DB": F16, "M": "i32",
                "N": "i32"},
               {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128}, {"num_warps": 4},
               ("DW", "DB", "FINAL_DW", "FINAL_DB", "M", "N")),
    KernelCase("07", "07-extern-functions.py", "asin_kernel",
               {"x_ptr": F32, "y_ptr": F32, "n_elements": "i32"},
               {"BLOCK_SIZE": 1024}, {"num_warps": 4}, ("x_ptr", "y_ptr")),
]

_INSTR = re.compile(r"^\s+(?:@!?%p\d+\s+)?([a-z][a-z0-9_.]*)", re.M)


def ptx_counts(ptx: str) -> dict:
    ops = _INSTR.findall(ptx)
    return {"instructions": len(ops),
            "global": sum(o.startswith(("ld.global", "st.global")) for o in ops),
            "smem_ops": sum(o.startswith(("ld.shared", "st.shared")) for o in ops),
            "cp.async": sum(o.startswith("cp.async.c") and "group" not in o for o in ops)}


def link_report(ptx: str, name: str) -> dict:
    """Registers and spills of ``ptx`` through naiad's nvJitLink step (the same for both), and
    SASS counts of the linked cubin (:func:`sass_counts`)."""
    from naiad_nvidia.toolchain import parse_resource_report, ptx_to_cubin

    arch = re.search(r"^\.target\s+(\S+)", ptx, re.M).group(1).rstrip(",")
    cubin, log = ptx_to_cubin(ptx, arch)
    return {**parse_resource_report(log, name), "sass": sass_counts(cubin)}


def sass_counts(cubin: bytes) -> str:
    """"SASS instructions / MUFU / CALL / MEMBAR" of a cubin, read with the ``cuobjdump`` that
    Triton's wheel ships (analysis only; "-" without it). CALLs are the slow paths of f32
    divisions rounded to nearest (``div.rn``: FCHK + CALL each); MEMBARs are fences."""
    import shutil
    import subprocess
    import tempfile

    tool = shutil.which("cuobjdump")
    try:
        import triton
        bundled = Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump"
        tool = str(bundled) if bundled.exists() else tool
    except ImportError:
        pass
    if tool is None:
        return "-"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True).stdout
    parts = [len(re.findall(p, sass, re.M))
             for p in (r"^\s+/\*[0-9a-f]{4}\*/", r"MUFU", r"\bCALL", r"MEMBAR")]
    return "/".join(map(str, parts))


def naiad_side(mod, case: KernelCase) -> dict:
    import naiad

    fn = getattr(mod, case.kernel)
    t0 = time.perf_counter()
    k = naiad.compile(fn, case.signature, case.constexprs, target="nvidia:sm_90",
                      options=case.options,
                      specialization={a: {"divisibility": 16} for a in case.aligned})
    seconds = time.perf_counter() - t0
    rep = link_report(k.asm["ptx"], case.kernel)
    return {"regs": k.n_regs, "spills": k.n_spills, "shared": k.metadata["shared"],
            "seconds": seconds, "linked_regs": rep["registers"], "sass": rep["sass"],
            **ptx_counts(k.asm["ptx"])}


def triton_side(mod, case: KernelCase) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = getattr(mod, case.kernel)
    names = list(fn.arg_names)
    sig = {n: case.signature.get(n, "constexpr") for n in names}
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in case.aligned}
    t0 = time.perf_counter()
    k = triton.compile(ASTSource(fn, sig, dict(case.constexprs), attrs),
                       target=GPUTarget("cuda", 90, 32), options=dict(case.options))
    seconds = time.perf_counter() - t0
    rep = link_report(k.asm["ptx"], case.kernel)
    return {"regs": rep["registers"], "spills": rep["spill_bytes"], "sass": rep["sass"],
            "shared": k.metadata.shared, "seconds": seconds, **ptx_counts(k.asm["ptx"])}


def _cell(side: dict | str, key: str) -> str:
    return "-" if isinstance(side, str) else str(side[key])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tutorials", type=Path)
    ap.add_argument("only", nargs="*", help="tutorial numbers (default 02 04 05 07)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    import os

    import tempfile

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    # cold compiles on both sides: Triton's cache would make its second run free
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")
    os.environ["NAIAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="naiad-cache-")
    wanted = set(args.only or ("02", "04", "05", "07"))
    rows = []
    modules: dict = {}
    for case in CASES:
        if case.tutorial not in wanted:
            continue
        if case.file not in modules:
            both = triton_tutorials.load_both(args.tutorials / case.file, with_triton=True,
                                              preset={"DEVICE": "cpu"})
            modules[case.file] = both
        both = modules[case.file]
        sides = {}
        for who, compile_side in (("naiad", naiad_side), ("triton", triton_side)):
            mod = both[who]
            try:
                if isinstance(mod, BaseException):
                    raise mod
                sides[who] = compile_side(mod, case)
            except Exception as exc:  # noqa: BLE001 -- the table still prints
                sides[who] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
        rows.append((case, sides))
    header = ["tutorial", "kernel", "naiad regs/spills", "Triton regs/spills", "naiad shared B",
              "Triton shared B", "naiad PTX instr (global/shared/cp.async)",
              "Triton PTX instr (global/shared/cp.async)", "naiad SASS (all/MUFU/CALL/MEMBAR)",
              "Triton SASS (all/MUFU/CALL/MEMBAR)", "naiad compile s", "Triton compile s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for case, s in rows:
        n, t = s["naiad"], s["triton"]

        def instr(x):
            return x if isinstance(x, str) else \
                f"{x['instructions']} ({x['global']}/{x['smem_ops']}/{x['cp.async']})"

        def regs(x):
            return x if isinstance(x, str) else f"{x['regs']}/{x['spills']}"

        def secs(x):
            return "-" if isinstance(x, str) else f"{x['seconds']:.2f}"

        lines.append("| " + " | ".join([case.tutorial, case.kernel, regs(n), regs(t),
                                        _cell(n, "shared"), _cell(t, "shared"), instr(n),
                                        instr(t), _cell(n, "sass"), _cell(t, "sass"), secs(n),
                                        secs(t)]) + " |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
