"""Finding the GPU with each hip-python module shape, and the arch table's family fallback.

The fake installs below are real package trees on ``sys.path`` that mimic the two shapes the
hip-python wheels have (read from the wheels themselves, ``pip download --no-deps``):

* 6.x (e.g. 6.4.4): ``hip/__init__.py`` runs ``from . import hip`` inside ``try/except
  ImportError``; ``hip/hip.*.so`` is a *submodule*;
* 10.x (10.0.0): ``hip/__init__.py`` runs ``from rocm.bindings import hip, hiprtc``; the
  bindings live in the namespace packages ``rocm/bindings/`` (no ``__init__.py``), so ``hip.hip``
  is an *attribute* and ``importlib.import_module("hip.hip")`` fails.

Both load ``libamdhip64.so`` lazily at the first call and raise ``RuntimeError("failed to dlopen
...")`` when it is missing; that is what the "runtime missing" bindings do here.
"""
from __future__ import annotations

import importlib
import sys
import textwrap
import warnings

import numpy as np
import pytest

import naiad_amd.runtime.driver as driver
from amd_testkit import amd_target
from naiad.errors import DeviceError
from naiad_amd.archs import ARCHS, resolve_arch
from naiad_amd.runtime.launcher import AmdLauncher

# The bindings module's body: either the HIP library is missing, or it has devices.
_MISSING_RUNTIME = '''
def _missing(*args):
    raise RuntimeError("failed to dlopen 'b'libamdhip64.so'': libamdhip64.so: cannot open shared "
                       "object file: No such file or directory")
hipGetDeviceCount = hipMalloc = hipGetDeviceProperties = hipSetDevice = _missing
class hipDeviceProp_t:
    gcnArchName = b""
'''

_WITH_DEVICES = '''
import enum
class hipError_t(enum.IntEnum):
    hipSuccess = 0
    hipErrorNoDevice = 100
DEVICES = {devices!r}
def hipGetDeviceCount():
    return (hipError_t.hipErrorNoDevice, 0) if not DEVICES else (hipError_t.hipSuccess, len(DEVICES))
class hipDeviceProp_t:
    gcnArchName = b""
def hipGetDeviceProperties(props, dev):
    props.gcnArchName = DEVICES[dev].encode()
    return (hipError_t.hipSuccess,)
def hipSetDevice(dev):
    return (hipError_t.hipSuccess,)
def hipGetErrorString(err):
    return (hipError_t.hipSuccess, b"no ROCm-capable device is detected")
'''


def _write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _is_hip_module(name: str) -> bool:
    return name == "hip" or name.startswith(("hip.", "rocm"))


@pytest.fixture(autouse=True)
def forget_fake_hip():
    """Drop the fake trees' modules after each test (monkeypatch restores only what it deleted)."""
    yield
    for name in [m for m in sys.modules if _is_hip_module(m)]:
        del sys.modules[name]


def _install_tree(tmp_path, monkeypatch, shape: str, bindings: str):
    """Write a hip-python install of ``shape`` ("6" or "10") under tmp_path and put it first on sys.path."""
    if shape == "6":
        _write(tmp_path, "hip/__init__.py", '''
            ROCM_VERSION_NAME = "6.4.4"
            try:
                from . import hip
            except ImportError:
                pass  # may have been excluded from build
            ''')
        _write(tmp_path, "hip/hip.py", bindings)
    else:
        _write(tmp_path, "hip/__init__.py", '''
            from rocm.bindings import hip, hiprtc
            ''')
        _write(tmp_path, "rocm/bindings/hip.py", bindings)  # rocm/, rocm/bindings/: namespace packages
        _write(tmp_path, "rocm/bindings/hiprtc.py", "")
    for name in [m for m in sys.modules if _is_hip_module(m)]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.setattr(driver, "_drivers", {})


@pytest.mark.parametrize("shape", ["6", "10"])
def test_shape_is_real(tmp_path, monkeypatch, shape):
    """The fake trees have the property that matters: only 6.x has an importable ``hip.hip``."""
    _install_tree(tmp_path, monkeypatch, shape, _WITH_DEVICES.format(devices=["gfx942"]))
    if shape == "6":
        assert importlib.import_module("hip.hip").DEVICES == ["gfx942"]
    else:
        with pytest.raises(ImportError):
            importlib.import_module("hip.hip")
    assert driver.import_hip().DEVICES == ["gfx942"]


@pytest.mark.parametrize("shape", ["6", "10"])
def test_device_found_with_either_shape(tmp_path, monkeypatch, shape):
    _install_tree(tmp_path, monkeypatch, shape, _WITH_DEVICES.format(devices=["gfx90a", "gfx942:sramecc+:xnack-"]))
    assert driver.detect_arch() == "gfx90a"
    assert driver.get_driver("gfx942").device == 1


@pytest.mark.parametrize("shape", ["6", "10"])
def test_runtime_library_missing_is_not_reported_as_missing_hip_python(tmp_path, monkeypatch, shape):
    _install_tree(tmp_path, monkeypatch, shape, _MISSING_RUNTIME)
    with pytest.raises(DeviceError, match="the HIP runtime library is missing") as e:
        AmdLauncher(amd_target("gfx942")).to_device(np.ones(4, np.float32))
    assert "not installed" not in str(e.value)
    with pytest.warns(RuntimeWarning, match="the HIP runtime library is missing"):
        assert driver.detect_arch() is None


@pytest.mark.parametrize("shape", ["6", "10"])
def test_hip_error_no_device_says_no_gpu(tmp_path, monkeypatch, shape):
    _install_tree(tmp_path, monkeypatch, shape, _WITH_DEVICES.format(devices=[]))
    with pytest.raises(DeviceError, match="^no AMD GPU found"):
        AmdLauncher(amd_target("gfx942")).empty(4, np.float32)
    with pytest.warns(RuntimeWarning, match="no AMD GPU found"):
        assert driver.detect_arch() is None


def test_broken_bindings_are_reported_as_such(tmp_path, monkeypatch):
    _install_tree(tmp_path, monkeypatch, "10", "raise ImportError('undefined symbol: hipFooBar')")
    with pytest.raises(DeviceError, match="hip-python is installed but 'from hip import hip' failed"):
        driver.import_hip()


def test_unknown_family_member_falls_back_with_a_warning(tmp_path, monkeypatch):
    _install_tree(tmp_path, monkeypatch, "10", _WITH_DEVICES.format(devices=["gfx941:sramecc+:xnack-"]))
    with pytest.warns(RuntimeWarning, match="gfx941.*compiling for gfx942"):
        assert driver.detect_arch() == "gfx942"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert driver.get_driver("gfx942").device == 0


@pytest.mark.parametrize("name, want", [
    ("gfx942", "gfx942"), ("gfx942:sramecc+:xnack-", "gfx942"), ("gfx1201", "gfx1201"),
    ("gfx940", "gfx942"), ("gfx1104", "gfx1100"), ("gfx1209", "gfx1200"), ("gfx95f", "gfx950"),
    ("gfx906", None), ("gfx1030", None), ("gfx90c", None), ("", None), (None, None),
])
def test_resolve_arch(name, want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert resolve_arch(name) == want


def test_arch_table_facts():
    assert {"gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1102", "gfx1103",
            "gfx1150", "gfx1151", "gfx1200", "gfx1201"} <= set(ARCHS)
    assert "gfx940" not in ARCHS and "gfx941" not in ARCHS  # LLVM 22 dropped them
    for a in ARCHS.values():
        assert a.wave_size == (64 if a.family.startswith("CDNA") else 32)
        assert a.lds_bytes == (160 * 1024 if a.name == "gfx950" else 64 * 1024)
        assert a.kernarg_preload == (a.name in ("gfx90a", "gfx942", "gfx950"))


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_arch_compiles_a_reduction(arch):
    """LLVM 22 accepts every arch in the table: a kernel with a cross-lane reduction reaches hsaco."""
    import naiad
    import naiad.language as tl

    @naiad.jit
    def row_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr, tl.sum(tl.load(x_ptr + offs), axis=0))

    k = naiad.compile(row_sum, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                      constexprs={"BLOCK": 256}, target=f"amd:{arch}")
    asm = k.asm["amdgcn"]
    assert f"amdgcn-amd-amdhsa--{arch}" in asm
    assert f".wavefront_size: {ARCHS[arch].wave_size}" in asm
    assert k.asm["hsaco"][:4] == b"\x7fELF"
