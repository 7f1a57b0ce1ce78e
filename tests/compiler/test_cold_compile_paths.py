"""What the cold-compile work changed: the core's parsed LLVM module handed to the toolchain
(parsed and verified once), and plugin discovery that loads no backend's runtime."""
from __future__ import annotations

import subprocess
import sys

import pytest
from llvmlite import ir

from naiad.gpu import llvm as naiad_llvm
from naiad.gpu.lower import check_llvm
from naiad.errors import CodegenError


def _kernel_text(name: str = "k") -> str:
    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), name)
    ir.IRBuilder(fn.append_basic_block()).ret_void()
    return str(mod)


def test_checked_module_is_handed_over_once_for_the_same_text():
    text = _kernel_text()
    check_llvm(text, "k")
    mod = naiad_llvm.take_verified_module(text)
    assert mod is not None and mod.get_function("k").name == "k"
    assert naiad_llvm.take_verified_module(text) is None      # once only: it may be optimised


def test_no_handover_for_other_text_and_the_stash_is_dropped():
    text = _kernel_text("a")
    check_llvm(text, "a")
    assert naiad_llvm.take_verified_module(_kernel_text("b")) is None
    assert naiad_llvm.take_verified_module(text) is None      # a miss drops it too


def test_handover_is_per_thread():
    import threading

    text = _kernel_text()
    check_llvm(text, "k")
    seen = []
    t = threading.Thread(target=lambda: seen.append(naiad_llvm.take_verified_module(text)))
    t.start()
    t.join()
    assert seen == [None]
    assert naiad_llvm.take_verified_module(text) is not None


def test_invalid_ir_is_reported_and_not_stashed():
    bad = "define void @k() {\n  %x = add i32 %y, 1\n  ret void\n}\n"
    with pytest.raises(CodegenError, match="invalid LLVM IR for @k"):
        check_llvm(bad, "k")
    assert naiad_llvm.take_verified_module(bad) is None


def test_nvidia_compile_uses_the_handed_over_module():
    """A compile through the driver: the toolchain takes the core's module (nothing left), and
    the PTX is the same as from a fresh parse of the same LLVM IR."""
    naiad = pytest.importorskip("naiad")
    try:
        from naiad_nvidia import toolchain
        toolchain._nvjitlink()
    except Exception as e:  # pragma: no cover - environment without nvJitLink
        pytest.skip(f"nvJitLink unavailable: {e}")
    import naiad.language as tl

    @naiad.jit
    def scale(x_ptr, n, B: tl.constexpr):
        offs = tl.arange(0, B)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, x * 3.0, mask=offs < n)

    k = naiad.compile(scale, {"x_ptr": "*fp32", "n": "i32"}, {"B": 256}, target="nvidia:sm_90")
    assert naiad_llvm.take_verified_module(k.asm["llir"]) is None   # taken by the toolchain
    assert toolchain.llvm_to_ptx(k.asm["llir"], "sm_90") == k.asm["ptx"]


def test_plugin_discovery_loads_no_backend_runtime():
    """Every compile discovers all plugins; the reference backend's executor (and numpy through
    it) must not be imported by that, only when the reference target runs a kernel."""
    code = ("import sys; from naiad.plugins.manager import get_plugin_manager; "
            "pm = get_plugin_manager(); assert 'reference' in pm.target_table(); "
            "print(sorted(m for m in sys.modules if m.startswith('naiad_reference.runtime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_reference_package_names_still_import():
    import naiad_reference
    from naiad_reference import ReferenceArgumentError, execute

    assert callable(execute) and issubclass(ReferenceArgumentError, Exception)
    assert {"execute", "PreparedKernel", "RunInfo"} <= set(dir(naiad_reference))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        naiad_reference.nonexistent
