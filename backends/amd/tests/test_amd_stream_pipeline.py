"""AMD passes ``stream_pipeline`` and ``block_ping_pong``: the GPU IR they write (IR text), the
code objects per num_stages, ping-pong's s_setprio, and the LDS limit. Execution is checked on
the SIMT simulator (tests/gpu/test_stream_pipeline_simt.py)."""
from __future__ import annotations

import re

import pytest

import naiad
import naiad.language as tl
from naiad.backend import pipeline_matrix_loops
from naiad.errors import CompilationError
from naiad.ir.parser import parse_module
from naiad.ir.printer import print_module
from naiad.ir.verifier import verify


@naiad.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    rm = (pid // tl.cdiv(N, BN)) * BM + tl.arange(0, BM)
    rn = (pid % tl.cdiv(N, BN)) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def _compile(arch="gfx942", bm=128, bn=128, bk=32, **options):
    return naiad.compile(matmul, signature=SIG, constexprs=dict(BM=bm, BN=bn, BK=bk),
                         target=f"amd:{arch}", options=options)


def test_pass_builds_the_ring_from_ir_text():
    """num_stages 1 GPU IR in, the pass with num_stages 2 and 3 out."""
    text = _compile(num_stages=1).asm["gpu"]
    assert "matrix_mma " in text and "matrix_ring" not in text
    for stages, slots in ((2, 1), (3, 2)):
        module = parse_module(text)
        assert pipeline_matrix_loops(module, num_stages=stages) is True
        verify(module)
        out = print_module(module)
        assert "matrix_mma " not in out
        before_loop, loop = out.split(" = for ", 1)
        assert f"matrix_ring_store %a, %b" in before_loop
        assert f"slots = {slots}" in before_loop
        body = loop.split("yield", 1)[0]
        assert body.count("matrix_mma_ring") == 1
        # the next tile's loads come first in the body, masked by "that iteration exists"
        assert body.index("= load ") < body.index("matrix_mma_ring")
        assert re.search(r'= cmp %\w+, %\w+ \{pred = "lt"\} : i1', body)
        # one more carried tile pair and the slot counter for 2 slots; nothing for 1
        carried = re.search(r"= for ([^:]*):", out).group(1).count(",") - 2
        assert carried == (3 if slots == 1 else 6)
        assert print_module(parse_module(out)) == out
    module = parse_module(text)
    assert pipeline_matrix_loops(module, num_stages=1) is False


def test_code_objects_and_lds_change_with_num_stages():
    ks = {s: _compile(num_stages=s) for s in (1, 2, 3)}
    assert len({k.asm["hsaco"] for k in ks.values()}) == 3
    # as Triton: 8 KiB at one stage (A and B through one buffer), then one ring slot per stage
    assert [ks[s].metadata["shared"] for s in (1, 2, 3)] == [8192, 16384, 32768]
    assert "matrix_mma_ring" not in ks[1].asm["gpu"] and "one_buffer = true" in ks[1].asm["gpu"]
    for s in (2, 3):
        gpu = ks[s].asm["gpu"]
        assert "matrix_mma_ring" in gpu and "ping_pong" not in gpu  # 4 warps: no ping-pong
        assert "s_setprio" not in ks[s].asm["amdgcn"]


def _setprio(amdgcn: str) -> list[str]:
    return re.findall(r"^\s*s_setprio (\d+)", amdgcn, re.M)


def test_one_buffer_staging_only_where_a_fragments_fit():
    """gfx1100 (wave32 WMMA): A's fragments beside the accumulator and B's tile exceed the
    register budget, so A and B keep their own buffers (16 KiB); a loop's own num_stages 1
    gets one buffer even when the option is 2."""
    k = _compile(arch="gfx1100", num_stages=1)
    assert "one_buffer" not in k.asm["gpu"] and k.metadata["shared"] == 16384
    gpu = _compile(num_stages=1).asm["gpu"]
    module = parse_module(gpu.replace("one_buffer = true, ", ""))
    [loop] = [op for fn in module.functions.values() for op in fn.walk() if op.name == "for"]
    loop.attrs["num_stages"] = 1
    from naiad_amd.passes.stream_pipeline import one_buffer_staging_pass

    assert one_buffer_staging_pass(2)(module) is True
    assert "one_buffer = true" in print_module(module)
    loop.attrs["num_stages"] = 2
    module = parse_module(gpu.replace("one_buffer = true, ", ""))
    assert one_buffer_staging_pass(2)(module) is False


def test_ping_pong_on_eight_warps():
    k = _compile(num_warps=8, num_stages=2)
    gpu = k.asm["gpu"]
    assert "ping_pong = true" in gpu and "slots = 2" in gpu
    assert gpu.index("amd.cond_barrier {group = 1}") < gpu.index(" = for ") < \
        gpu.index("amd.cond_barrier {group = 0}")
    assert _setprio(k.asm["amdgcn"]) == ["1", "0"]
    assert "llvm.amdgcn.readfirstlane" in k.asm["llir"]


@pytest.mark.parametrize("arch, warps, stages", [("gfx942", 4, 2), ("gfx90a", 8, 2),
                                                 ("gfx942", 8, 1)])
def test_no_ping_pong_outside_its_conditions(arch, warps, stages):
    k = _compile(arch=arch, num_warps=warps, num_stages=stages)
    assert "amd.cond_barrier" not in k.asm["gpu"] and not _setprio(k.asm["amdgcn"])


def test_256x256x32_ping_pongs_in_64_kib():
    k = _compile(bm=256, bn=256, bk=32, num_warps=8, num_stages=2)
    assert k.metadata["shared"] == 65536
    assert _setprio(k.asm["amdgcn"]) == ["1", "0"]


def test_256x256x64_ping_pongs_a_k_range_at_a_time():
    """One 64 KiB slot fits; reading every fragment of the tile before the MFMAs would not fit
    the registers (121 spilled registers measured), so the memory phases read a quarter of K
    each: four K ranges, five matrix phases (the last range's MFMAs split around the write)."""
    k = _compile(bm=256, bn=256, bk=64, num_warps=8, num_stages=2)
    assert k.metadata["shared"] == 65536
    gpu = k.asm["gpu"]
    assert "ping_pong = true" in gpu and "k_groups = 4" in gpu and "slots = 1" in gpu
    assert _setprio(k.asm["amdgcn"]) == ["1", "0"] * 5
    assert not any("without block ping-pong" in r for r in k.metadata.get("remarks", []))


def test_k_groups_is_the_fewest_that_fits_the_registers():
    from naiad_amd.passes import block_ping_pong as pp

    k = _compile(bm=256, bn=256, bk=64, num_warps=8, num_stages=2)
    module = parse_module(k.asm["gpu"])
    [ring] = [op for fn in module.functions.values() for op in fn.walk()
              if op.name == "matrix_mma_ring"]
    held = [pp.registers_held(ring, g) for g in (1, 2, 4)]
    assert held[0] > held[1] > held[2]  # a K range's fragments, not the whole tile's
    assert pp.fitting_k_groups(ring, held[0]) == 1
    assert pp.fitting_k_groups(ring, held[1]) == 2
    assert pp.fitting_k_groups(ring, held[2]) == 4
    assert pp.fitting_k_groups(ring, held[2] - 1) in (None, 8)
    assert pp.max_k_groups(ring) == 4  # 64 / 8 K steps, capped


def test_ping_pong_over_the_register_budget_is_left_off_with_a_remark(monkeypatch):
    from naiad_amd.passes import block_ping_pong as pp

    monkeypatch.setattr(pp, "fitting_k_groups", lambda ring, budget: None)
    k = _compile(bm=128, bn=128, bk=64, num_warps=8, num_stages=2)
    assert "ping_pong" not in k.asm["gpu"] and not _setprio(k.asm["amdgcn"])
    [remark] = [r for r in k.metadata.get("remarks", []) if "without block ping-pong" in r]
    assert "over 192" in remark and "test_amd_stream_pipeline.py:" in remark


def test_ring_over_the_lds_limit_is_a_clear_error():
    with pytest.raises(CompilationError) as err:
        _compile(bm=256, bn=256, bk=64, num_warps=8, num_stages=3)
    msg = str(err.value)
    assert "kernel matmul needs 131072 bytes of shared memory" in msg
    assert "65536 bytes" in msg and "matrix_ring_store" in msg


@naiad.jit
def dot_then_store(a_ptr, b_ptr, c_ptr, n):
    r = tl.arange(0, 32)
    acc = tl.zeros((32, 32), dtype=tl.float32)
    for i in range(n):
        a = tl.load(a_ptr + i * 1024 + r[:, None] * 32 + r[None, :])
        b = tl.load(b_ptr + i * 1024 + r[:, None] * 32 + r[None, :])
        acc = tl.dot(a, b, acc)
        tl.store(c_ptr + i * 1024 + r[:, None] * 32 + r[None, :], acc)


def test_a_loop_left_alone_says_why():
    k = naiad.compile(dot_then_store, signature={"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                 "c_ptr": "*fp32", "n": "i32"},
                      target="amd:gfx942", options={"num_stages": 3})
    assert "matrix_mma_ring" not in k.asm["gpu"]
    [remark] = [r for r in k.metadata.get("remarks", []) if "software-pipelined" in r]
    assert "num_stages 3" in remark and "the loop writes memory" in remark
    assert "test_amd_stream_pipeline.py:" in remark


def test_gfx1100_prefetch_is_bounded_by_the_register_budget():
    """wave32 WMMA: the accumulator (128 registers) and three 32-register tiles in flight
    (num_stages 4) exceed gfx1100's budget (160): one tile is prefetched, with a remark."""
    from naiad_amd.target_info import AmdTargetInfo

    assert AmdTargetInfo("gfx1100").register_budget(4) == 160
    k = _compile(arch="gfx1100", num_stages=4)
    gpu = k.asm["gpu"]
    assert "matrix_mma_ring" in gpu and "slots = 1" in gpu
    assert k.metadata["shared"] == 16384
    [remark] = [r for r in k.metadata.get("remarks", []) if "prefetches" in r]
    assert "prefetches 1 tile (num_stages 4 asks 3)" in remark
    assert "about 224 registers per lane" in remark and "budget of 160" in remark
    # gfx942 (wave64, 4 warps: budget 448) keeps all three
    k = _compile(arch="gfx942", num_stages=4)
    assert "slots = 3" in k.asm["gpu"] and k.metadata["shared"] == 49152
    assert not any("prefetches" in r for r in k.metadata.get("remarks", []))


def test_a_budget_below_one_tile_leaves_the_loop_unpipelined():
    """IR text in, the pass with a target whose budget holds the accumulator only."""
    from types import SimpleNamespace

    from naiad.gpu.matrix.stream_pipeline import registers_in_flight, pipelinable_mma

    text = _compile(num_stages=1).asm["gpu"]
    module = parse_module(text)
    [loop] = [op for fn in module.functions.values() for op in fn.walk() if op.name == "for"]
    mma = pipelinable_mma(loop)
    loads = [v.defining_op for v in mma.operands[:2]]
    one = registers_in_flight(mma, loads, 1)
    assert one == 64 + 16  # gfx942 4 warps: 128x128 f32 accumulator, A and B fp16 tiles
    for budget, pipelined in ((one - 1, False), (one, True)):
        module = parse_module(text)
        ctx = SimpleNamespace(num_warps=4, target_info=SimpleNamespace(
            shared_memory_bytes=65536, register_budget=lambda nw, b=budget: b))
        assert pipeline_matrix_loops(module, ctx, num_stages=2) is pipelined
        assert ("matrix_mma_ring" in print_module(module)) is pipelined
