"""The core (language, frontend, IR, passes, GPU layer, runtime) holds no vendor-specific code:
intrinsics, address spaces, warp sizes and calling conventions come from a backend's TargetInfo."""
import pathlib
import re

CORE = pathlib.Path(__file__).resolve().parents[2] / "core" / "naiad"
# Names only a vendor's backend may use. Docstring examples of target names (``nvidia:sm_90``)
# and stage names are allowed; these patterns are code, not prose.
FORBIDDEN = re.compile(r"llvm\.nvvm\.|llvm\.amdgcn\.|ptx_kernel|amdgpu_kernel|nvptx64|amdgcn-amd|"
                       r"\bshfl\.sync|\bbar\.sync|ds_bpermute|import naiad_(nvidia|amd)|"
                       r"from naiad_(nvidia|amd)")


def test_no_vendor_intrinsics_or_imports_in_core():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if FORBIDDEN.search(code) and '"""' not in code and "``" not in code:
                offenders.append(f"{path.relative_to(CORE)}:{lineno}: {line.strip()}")
    assert not offenders, "vendor-specific code in core:\n" + "\n".join(offenders)


def test_no_hard_coded_warp_size_in_the_gpu_layer():
    offenders = []
    for path in sorted((CORE / "gpu").rglob("*.py")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"warp_size\s*=\s*(32|64)\b|\bWARP_SIZE\s*=", code):
                offenders.append(f"{path.relative_to(CORE)}:{lineno}: {line.strip()}")
    assert not offenders, "the GPU layer must ask TargetInfo.warp_size:\n" + "\n".join(offenders)
