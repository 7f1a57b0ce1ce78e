"""NAIAD_DEBUG=1 verifies the GPU IR between passes; tensor-core kernels must pass it too."""
import naiad
import naiad.language as tl


@naiad.jit
def tc_loop_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_debug_verification_accepts_tensor_core_loops(monkeypatch):
    monkeypatch.setenv("NAIAD_DEBUG", "1")
    ck = naiad.compile(tc_loop_kernel, signature="*fp16, *fp16, *fp32, i32",
                       constexprs={"BM": 64, "BN": 64, "BK": 32}, target="nvidia:sm_90")
    assert "wgmma.mma_async" in ck.asm["ptx"]
    ck = naiad.compile(tc_loop_kernel, signature="*fp16, *fp16, *fp32, i32",
                       constexprs={"BM": 64, "BN": 64, "BK": 32}, target="nvidia:sm_90",
                       options={"wgmma": False})
    assert "mma.sync" in ck.asm["ptx"]
