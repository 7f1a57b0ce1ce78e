"""The multi-dot TMA ring's mbarrier protocol, checked without a GPU by an executable model
(:mod:`mbarrier_model`) run on the compiled GPU IR for tutorial 06's real launch: 4 x 32 heads
of 4096 rows, every program's iteration counts.

Why: on the H200 tutorial 06's causal forward never finished with the multi-dot TMA ring
(issue 9). Its causal forward runs two ring loops in one program (the off-band loop, then the
diagonal's), and both loops' ``nvidia.tma_init`` landed before the first loop: the second loop
expected, copied and waited on mbarriers the first loop's ``nvidia.tma_release`` had
invalidated. The tests here compile kernels of that shape (:func:`attn_fwd_desc_split`) with
host tensor maps and with maps built in the kernel, and the model must find no step that
hangs or reads stale data; the model's own tests break the protocol on purpose and expect it
to say where.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import naiad
from naiad_nvidia.runtime.tensor_map import tensor_map_args

import mbarrier_model as model
from test_nv_multi_dot_ring import ROOT, TUTORIALS, _torch_stand_in, needs_tutorials
from nv_attention_kernels import (attn_fwd_desc, attn_fwd_desc_split, attn_fwd_made_desc_split,
                                  reference)
from test_nv_attention_tma import (BULK_COPY, DESCS, MADE_SIG, compile_fwd,
                                   run_descriptor_forward)

#: tutorial 06's benchmark: Z=4, H=32 heads of N_CTX=4096 rows
HEADS, LENGTH = 4 * 32, 4096


def host_map(block, d, rows=HEADS * LENGTH) -> model.MapInfo:
    """The map the launcher builds for a host descriptor of ``rows x d`` fp16 with
    ``block`` (the block shape set before the launch, as the tutorial's pre_hook sets it)."""
    args = tensor_map_args("fp16", 0, [rows, d], [d, 1], list(block))
    return model.MapInfo(args.box_dims, 2)


def launch_args(d, bm, bn, host_maps=True, length=LENGTH, heads=HEADS) -> dict:
    """The scalar arguments (and maps) a launch of the descriptor kernels passes."""
    args = {"L": length, "sm_scale": 0.5}
    for x in DESCS:
        args.update({f"{x}__shape_0": heads * length, f"{x}__shape_1": d,
                     f"{x}__stride_0": d, f"{x}__stride_1": 1})
        if host_maps:
            args[f"{x}__tensor_map"] = host_map((bm, d) if x == "desc_q" else (bn, d), d,
                                                heads * length)
    return args


def programs(bm, length=LENGTH):
    """Program ids along the query blocks: the first ones (no off-band block, then one), one
    in the middle and the last (the most iterations)."""
    n = -(-length // bm)
    return [(x, 0, 0) for x in sorted({0, 1, 2, n // 2 + 1, n - 1})]


def run_model(kernel, args, bm, length=LENGTH, heads=HEADS, which=None):
    return model.run_programs(model.kernel_function(kernel), args, (-(-length // bm), heads),
                              programs(bm, length) if which is None else which,
                              kernel.metadata["shared"])


def ring_loops(fn):
    """(top-level ops before the loop since the previous ring loop, the loop) per ring loop."""
    out, since = [], []
    for op in fn.body.block.ops:
        if op.name == "for" and any(o.name == "nvidia.tma_wait" for o in op.walk()):
            out.append((since, op))
            since = []
        else:
            since.append(op)
    return out


@pytest.mark.parametrize("host", [True, False], ids=["host_maps", "in_kernel"])
def test_each_ring_loop_initialises_its_own_mbarriers(host):
    """Tutorial 06's causal STAGE 3: two ring loops; each gets one init after the previous
    loop's release and before its own prologue copies."""
    k = compile_fwd(64, True, fn=attn_fwd_desc_split) if host else naiad.compile(
        attn_fwd_made_desc_split, MADE_SIG, dict(D=64, BM=128, BN=64, CAUSAL=True),
        target="nvidia:sm_90", options={"num_warps": 4, "num_stages": 3},
        specialization={n: {"divisibility": 16} for n in MADE_SIG if n != "sm_scale"})
    fn = model.kernel_function(k)
    loops = ring_loops(fn)
    assert len(loops) == 2
    for before, loop in loops:
        names = [o.name for o in before]
        assert names.count("nvidia.tma_init") == 1, names
        init = names.index("nvidia.tma_init")
        assert names.index("nvidia.tma_expect") > init
        if "nvidia.tma_release" in names:      # the previous loop's, before this init
            assert names.index("nvidia.tma_release") < init
    last = fn.body.block.ops.index(loops[-1][1])
    after = [o.name for o in fn.body.block.ops[last:]]
    assert after.count("nvidia.tma_release") == 1


CONFIGS = [  # (head dim, warps, stages, BLOCK_M, BLOCK_N): tutorial 06's sm_90 configs
    (64, 4, 2, 128, 64), (64, 4, 3, 128, 64), (64, 4, 4, 128, 32), (64, 4, 3, 64, 64),
    (128, 8, 3, 128, 128), (128, 8, 2, 128, 64),
]


@pytest.mark.parametrize("d,warps,stages,bm,bn", CONFIGS)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("split", [True, False], ids=["two_loops", "one_loop"])
def test_ring_protocol_completes_at_tutorial_iteration_counts(split, causal, d, warps, stages,
                                                              bm, bn):
    k = compile_fwd(d, causal, warps, stages, bm=bm, bn=bn,
                    fn=attn_fwd_desc_split if split else attn_fwd_desc)
    assert "nvidia.tma_copy" in k.asm["gpu"], k.metadata["remarks"]
    trace = run_model(k, launch_args(d, bm, bn), bm)
    # every K and V block of every modelled program was copied, waited for and completed
    blocks = sum(min((x + 1) * bm, LENGTH) if causal else LENGTH
                 for x, _, _ in programs(bm)) // bn
    assert trace.copies == trace.waits == trace.phases == 2 * blocks


def test_ring_protocol_of_in_kernel_maps_every_program():
    """The warp_specialize form (maps built in the kernel), causal, every program."""
    k = naiad.compile(attn_fwd_made_desc_split, MADE_SIG, dict(D=64, BM=128, BN=64, CAUSAL=True),
                      target="nvidia:sm_90", options={"num_warps": 4, "num_stages": 3},
                      specialization={n: {"divisibility": 16} for n in MADE_SIG
                                      if n != "sm_scale"})
    n = LENGTH // 128
    trace = run_model(k, {"L": LENGTH, "sm_scale": 0.5}, 128,
                      which=[(x, 0, 0) for x in range(n)])
    assert trace.phases == 2 * sum((x + 1) * 128 for x in range(n)) // 64
    assert trace.inits == 2 * n


@needs_tutorials
@pytest.mark.parametrize("host_maps", [True, False], ids=["host_maps", "in_kernel"])
@pytest.mark.parametrize("hd,causal,cfg", [(64, True, (128, 64, 3, 4)), (64, True, (64, 32, 2, 4)),
                                           (64, False, (128, 32, 4, 4)),
                                           (128, True, (128, 128, 3, 8)),
                                           (128, False, (128, 64, 2, 4))])
def test_tutorial_forward_ring_protocol(hd, causal, cfg, host_maps):
    """Tutorial 06's own ``_attn_fwd`` (the file at ../shared), as the launch path compiles it,
    through the model at its benchmark's iteration counts (``bench/nv_attention_ring_check.py``
    runs every config)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import nv_attention_ring_check as check
    import nv_attention_static
    from naiad.compat import triton_alias
    from triton_tutorials import load_tutorial

    with triton_alias.aliased():
        mod = load_tutorial(TUTORIALS / "06-fused-attention.py", "naiad", _torch_stand_in())
    bm, bn, _, _ = cfg
    k = nv_attention_static.naiad_fwd(mod, hd, causal, *cfg, host_maps=host_maps)
    assert k.asm["gpu"].count("nvidia.tma_init") == (2 if causal else 1)
    n = check.N_CTX // bm
    trace = model.run_programs(model.kernel_function(k), check.launch_args(hd, bm, bn, host_maps),
                               (n, check.Z * check.H), [(x, 0, 0) for x in (0, 1, n - 1)],
                               k.metadata["shared"])
    blocks = sum((x + 1) * bm if causal else check.N_CTX for x in (0, 1, n - 1)) // bn
    assert trace.phases == trace.copies == 2 * blocks


# -- the model finds broken protocols --------------------------------------------------------


def _split_causal():
    k = compile_fwd(64, True, fn=attn_fwd_desc_split)
    return model.kernel_function(k)


def test_model_reports_a_loop_on_invalidated_mbarriers():
    """The bug of issue 9, rebuilt: the second loop's init where the pass put it, next to
    the first loop's (before the first loop's prologue)."""
    fn = _split_causal()
    (before_first, _), (before, _) = ring_loops(fn)
    init = next(o for o in before if o.name == "nvidia.tma_init")
    ops = fn.body.block.ops
    ops.remove(init)
    ops.insert(ops.index(next(o for o in before_first if o.name == "nvidia.tma_init")) + 1, init)
    with pytest.raises(model.ProtocolError, match="invalidated by an earlier nvidia.tma_release"):
        model.run_programs(fn, launch_args(64, 128, 64), (32, HEADS), [(1, 0, 0)])


def test_model_reports_a_box_other_than_the_block():
    """A map built from another block shape (had the pre_hook set it after the map was built):
    its boxes deliver other than the expected bytes, and the phase never completes."""
    fn = _split_causal()
    args = launch_args(64, 128, 64)
    args["desc_v__tensor_map"] = host_map((32, 64), 64)
    with pytest.raises(model.ProtocolError, match="expects 8192 bytes but the copies deliver "
                                                  "4096"):
        model.run_programs(fn, args, (32, HEADS), [(0, 0, 0)])


def test_model_reports_mbarriers_past_the_shared_memory_or_on_a_resident_tile():
    k = compile_fwd(64, False)
    fn = model.kernel_function(k)
    (init,) = [o for o in fn.walk() if o.name == "nvidia.tma_init"]
    args, first = launch_args(64, 128, 64), [(0, 0, 0)]
    with pytest.raises(model.ProtocolError, match="past the kernel's"):
        model.run_programs(fn, args, (32, HEADS), first, int(init.attrs["bar_offset"]) + 8)
    (q,) = [o for o in fn.walk() if o.name == "nvidia.wgmma_resident"]   # Q's tile
    q.attrs["smem_offset"] = int(init.attrs["bar_offset"]) - 1024
    with pytest.raises(model.ProtocolError, match="overlaps nvidia.wgmma_resident"):
        model.run_programs(fn, args, (32, HEADS), first, k.metadata["shared"])


def test_model_reports_a_phase_started_at_the_wrong_parity():
    fn = _split_causal()
    (_, loop), _ = ring_loops(fn)
    phase0 = loop.operands[-1].defining_op
    assert phase0.name == "constant" and phase0.attrs["value"] == 0
    phase0.attrs["value"] = 1
    with pytest.raises(model.ProtocolError, match="stale data"):
        model.run_programs(fn, launch_args(64, 128, 64), (32, HEADS), [(2, 0, 0)])


def test_model_reports_a_wait_no_copy_completes():
    fn = _split_causal()
    (_, loop), _ = ring_loops(fn)
    body = loop.regions[0].block
    body.ops.remove(next(o for o in body.ops if o.name == "nvidia.tma_expect"))
    with pytest.raises(model.ProtocolError, match="no expect in its phase|no copy will complete"):
        model.run_programs(fn, launch_args(64, 128, 64), (32, HEADS), [(5, 0, 0)])


def _loop_body():
    """The causal split kernel's function and its first ring loop's body ops."""
    fn = _split_causal()
    (_, loop), _ = ring_loops(fn)
    return fn, loop.regions[0].block.ops


def test_model_reports_a_wgmma_reading_a_slot_before_its_wait():
    fn, ops = _loop_body()
    ops.remove([o for o in ops if o.name == "nvidia.tma_wait"][1])    # V's
    with pytest.raises(model.ProtocolError, match="before the copy into .* completed"):
        model.run_programs(fn, launch_args(64, 128, 64), (32, HEADS), [(3, 0, 0)])


def test_model_reports_a_copy_over_a_slot_an_in_flight_wgmma_reads():
    """V's copy moved before the wait retiring the previous iteration's p @ v (in flight)."""
    fn, ops = _loop_body()
    v_copy = [o for o in ops if o.name == "nvidia.tma_copy"][1]
    v_expect = ops[ops.index(v_copy) - 1]
    first_wait = next(o for o in ops if o.name == "nvidia.wgmma_wait")
    for o in (v_expect, v_copy):
        ops.remove(o)
        ops.insert(ops.index(first_wait), o)
    with pytest.raises(model.ProtocolError, match="that a wgmma reads .* still in flight"):
        model.run_programs(fn, launch_args(64, 128, 64), (32, HEADS), [(3, 0, 0)])


def test_model_reports_a_copy_without_a_cta_barrier_after_the_readers_retired():
    fn, ops = _loop_body()
    v_wait = [o for o in ops if o.name == "nvidia.tma_wait"][1]
    barrier = ops[ops.index(v_wait) + 1]
    assert barrier.name == "barrier"
    ops.remove(barrier)
    with pytest.raises(model.ProtocolError, match="retired, but no CTA barrier since"):
        model.run_programs(fn, launch_args(64, 128, 64), (32, HEADS), [(3, 0, 0)])


# -- on the H200 ----------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("d,warps,stages,length", [(64, 4, 3, 328), (64, 4, 2, 1000),
                                                   (128, 8, 3, 456)])
def test_two_loop_descriptor_attention_forward_on_gpu(causal, d, warps, stages, length):
    """Passed on the H200 from the seventh session on (bench/RESULTS.md); skips without a GPU."""
    kern = run_descriptor_forward(attn_fwd_desc_split, causal, d, warps, stages, length,
                                  seed=length + d + stages + 7)
    assert BULK_COPY in kern.asm["ptx"], kern.metadata["remarks"]


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [True, False])
def test_two_loop_in_kernel_descriptor_attention_forward_on_gpu(device_allocator, causal):
    """Passed on the H200 from the seventh session on, as above."""
    heads, scale, length, d = 3, 0.3, 600, 64
    rng = np.random.default_rng(length + 11)
    q, k, v, do = (rng.standard_normal((heads, length, d)).astype(np.float16) * 0.5
                   for _ in range(4))
    o = naiad.to_device(np.full((heads, length, d), np.nan, np.float16))
    lse = naiad.to_device(np.full((heads, length), np.nan, np.float32))
    kern = attn_fwd_made_desc_split[(-(-length // 128), heads)](
        *(naiad.to_device(x) for x in (q, k, v)), o, lse, length, scale, D=d, BM=128, BN=64,
        CAUSAL=causal, num_warps=4, num_stages=3)
    assert BULK_COPY in kern.asm["ptx"], kern.metadata["remarks"]
    want_o, want_m, *_ = reference(q, k, v, do, scale, causal)
    np.testing.assert_allclose(o.numpy().astype(np.float64), want_o, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(lse.numpy(), want_m, rtol=1e-3, atol=1e-3)
