"""The same random-number kernel for Triton and for naiad: one source text, written to a module
file per language (both JITs read a kernel's source from its file)."""
import importlib.util
import os
import tempfile


def kernel_source() -> str:
    return '''
@jit
def random_streams(out_ptr, seed, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b, c, d = tl.randint4x(seed, offs * 7 + 3)
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + N + offs, b)
    tl.store(out_ptr + 2 * N + offs, c)
    tl.store(out_ptr + 3 * N + offs, d)
    tl.store(out_ptr + 4 * N + offs, tl.rand(seed, offs).to(tl.uint32, bitcast=True))
    tl.store(out_ptr + 5 * N + offs, tl.randn(seed, offs).to(tl.uint32, bitcast=True))
    tl.store(out_ptr + 6 * N + offs, tl.randint(seed, offs.to(tl.int64) * 0x100000001))
    f1, f2, f3, f4 = tl.randn4x(seed, offs)
    tl.store(out_ptr + 7 * N + offs, f4.to(tl.uint32, bitcast=True))


@jit
def philox64_streams(out_ptr, seed, N: tl.constexpr):
    offs = tl.arange(0, N).to(tl.uint64) * 0x9E3779B97F4A7C15
    a, b, c, d = tl.philox(seed, offs, offs + 1, offs * 3, offs ^ 5)
    tl.store(out_ptr + offs * 0 + tl.arange(0, N), a)
    tl.store(out_ptr + N + tl.arange(0, N), d)
'''


def build(package: str, name: str = "random_streams"):
    """Kernel ``name`` of :func:`kernel_source` compiled by ``package`` ("triton"/"naiad")."""
    folder = tempfile.mkdtemp(prefix=f"random_streams_{package}_")
    path = os.path.join(folder, f"random_streams_{package}.py")
    with open(path, "w") as fh:
        fh.write(f"import {package}.language as tl\nfrom {package} import jit\n")
        fh.write(kernel_source())
    spec = importlib.util.spec_from_file_location(f"random_streams_{package}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
