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


BACKENDS = CORE.parents[1] / "backends"
#: what a backend may import from naiad: the SDK, the plugin contract, errors, the public API.
ALLOWED = {"naiad", "naiad.backend", "naiad.plugins", "naiad.errors", "naiad.ir",
           "naiad.language"}
IMPORT = re.compile(r"^\s*(?:from\s+(naiad[\w.]*)\s+import|import\s+(naiad[\w.]*))")


def test_backends_import_only_the_sdk_and_public_modules():
    """A vendor can copy an in-tree backend as a template: it must not reach into core internals
    (anything it needs belongs in naiad.backend)."""
    offenders = []
    for path in sorted(BACKENDS.rglob("*.py")):
        if "tests" in path.relative_to(BACKENDS).parts:
            continue    # a backend's own tests may poke at the core directly
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = IMPORT.match(line)
            module = m and (m.group(1) or m.group(2))
            if module and module.split(".")[0] == "naiad" and module not in ALLOWED:
                offenders.append(f"{path.relative_to(BACKENDS)}:{lineno}: {line.strip()}")
    assert not offenders, ("backends may import only " + ", ".join(sorted(ALLOWED)) +
                           " (add what is missing to naiad.backend):\n" + "\n".join(offenders))


def test_the_sdk_exports_exist_and_nothing_else():
    import naiad.backend as sdk

    for name in sdk.__all__:
        assert getattr(sdk, name) is not None, name
    try:
        sdk.NotInTheSdk
    except AttributeError as exc:
        assert "a backend may use only the SDK's names" in str(exc)
    else:
        raise AssertionError("naiad.backend must not invent names")
