"""Attention's forward loop with K and V as tensor-descriptor loads: the multi-dot ring fills
its slots by TMA (naiad_nvidia.passes.multi_dot_tma) -- one mbarrier per tile and slot, each
dot waiting for its own tile -- when every tile has a tensor map, and keeps the cp.async ring
with a remark otherwise.

Without a GPU: the loop's ops, the PTX and the remarks of the descriptor companion (built as
the launch path builds it for host ``TensorDescriptor`` s). On the H200 (``gpu`` tests):
numerics against numpy with NaN-poisoned outputs, causal and full, head dims 64/128, ring
depths 2-4, lengths that are not multiples of the blocks (the hardware's zero fill past the
last head, the next head's rows masked); descriptors made in the kernel too (maps built on
the device).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import naiad
from naiad.tools.tensor_descriptor import TensorDescriptor

from nv_attention_kernels import (_fwd_loop, attn_fwd_desc, attn_fwd_made_desc,
                                  reference)
from test_nv_tma import compile_companion

DESCS = ("desc_q", "desc_k", "desc_v")
BULK_COPY = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
NO_MAP = "this test builds no tensor map for it"


def compile_fwd(d, causal, warps=4, stages=3, maps=DESCS, bm=128, bn=64, wide_columns=True,
                fn=attn_fwd_desc):
    """The TMA companion of ``fn`` (:func:`attn_fwd_desc`'s signature), compiled ahead of time
    for sm_90; ``wide_columns``: the descriptors' column count is known divisible by 16 (as a launch with
    head dim 64 or 128 specialises it), so their masked loads move 16-byte vectors."""
    return compile_companion(
        fn, {"desc_q": (bm, d), "desc_k": (bn, d), "desc_v": (bn, d)},
        dict(D=d, BM=bm, BN=bn, CAUSAL=causal), maps=maps,
        options={"num_warps": warps, "num_stages": stages},
        extra_signature={"O": "*fp16", "LSE": "*fp32", "L": "i32", "sm_scale": "fp32"},
        divisible=("L",), wide_columns=wide_columns, no_map_reason=NO_MAP)   # (L % BM == 0)


def _loop_bodies(gpu: str) -> list[str]:
    """Each top-level loop's body, up to its own ``yield`` (reductions in it yield deeper)."""
    out, at = [], 0
    while (start := gpu.find("\n  %", at)) >= 0 and (start := gpu.find(" = for ", start)) >= 0:
        end = gpu.index("\n    yield ", start)
        out.append(gpu[start:end])
        at = end
    return out


def _at(text: str) -> str:
    """``file:line `` of the first line of the key-block loop (``_fwd_loop``) holding ``text``,
    as remarks name it."""
    import inspect

    src, first = inspect.getsourcelines(_fwd_loop.fn)
    return f"nv_attention_kernels.py:{first + next(i for i, s in enumerate(src) if text in s)} "


@pytest.mark.parametrize("d,warps,stages", [(64, 4, 2), (64, 4, 3), (64, 4, 4), (128, 8, 2),
                                            (128, 8, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_k_and_v_move_by_tma_each_on_its_mbarrier(d, warps, stages, causal):
    k = compile_fwd(d, causal, warps, stages)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    (body,) = _loop_bodies(gpu)
    assert "nvidia.cp_async" not in gpu and not re.search(r"^\s*descriptor_access ", gpu, re.M)
    # one wait per tile, before its dot's barrier; K's and V's mbarriers differ
    waits = re.findall(r"nvidia\.tma_wait %slot, %phase \{bar_offset = (\d+)\}", body)
    assert len(waits) == 2 and waits[1] != waits[0]
    rings = [m.start() for m in re.finditer(r"= nvidia\.wgmma_ring ", body)]
    assert body.index("nvidia.tma_wait") < rings[0] < body.rindex("nvidia.tma_wait") < rings[1]
    copies = re.findall(r"nvidia\.tma_copy [^\n]*bar_offset = (\d+)[^\n]*offset = (\d+)", body)
    assert [c[0] for c in copies] == waits            # K's copy on K's mbarrier, V's on V's
    slots = stages   # the prefetch distance num_stages - 1 fits in shared memory here
    (init,) = re.findall(r"nvidia\.tma_init \{bar_offset = (\d+), ring_bytes = (\d+)", gpu)
    assert gpu.count(f"slots = {2 * slots}") == 2      # init and release: 2 tiles x S slots
    assert int(waits[1]) - int(waits[0]) == 8 * slots and int(init[0]) == int(waits[0])
    # ptx: boxes of one 128-byte panel each; the prologue fills S - 1 slots, the loop one
    boxes = d // 64
    assert ptx.count(BULK_COPY) == 2 * boxes * slots
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * slots
    # no remark for K's and V's loads (only q's, outside the loop, and the divisions)
    for text in ("= desc_k.load", "= desc_v.load"):
        assert not [r for r in k.metadata["remarks"] if _at(text) in r], k.metadata["remarks"]
    assert k.metadata["spill_bytes"] == 0


def test_phase_flips_when_the_read_slot_wraps():
    k = compile_fwd(64, False, stages=3)
    (body,) = _loop_bodies(k.asm["gpu"])
    rest = k.asm["gpu"][k.asm["gpu"].index(body) + len(body):]
    yields = rest.strip().splitlines()[0]
    flip = re.search(r"(%\w+) = xor %phase, (%\w+)", body)
    assert flip, body
    sel = re.search(rf"(%\w+) = select (%\w+), {flip.group(1)}, %phase", body)
    assert sel and yields.rstrip().endswith(sel.group(1))
    # the select's condition: the read slot is the last of the 3
    cond = re.search(rf"{sel.group(2)} = cmp %slot, (%\w+) \{{pred = \"eq\"\}}", body)
    assert cond and re.search(rf"{cond.group(1)} = constant \{{value = 2\}}", body)


def test_a_tile_without_a_map_keeps_the_cp_async_ring_with_remarks():
    k = compile_fwd(64, False, maps=("desc_q", "desc_k"))
    gpu = k.asm["gpu"]
    assert "nvidia.tma_copy" not in gpu and gpu.count("nvidia.cp_async ") >= 2
    remarks = k.metadata["remarks"]
    at_k = [r for r in remarks if _at("= desc_k.load") in r]
    at_v = [r for r in remarks if _at("= desc_v.load") in r]
    assert len(at_k) == 1 and "another tile its loop's dots read is not a tensor-descriptor " \
        "load with a tensor map" in at_k[0]
    assert len(at_v) == 1 and NO_MAP in at_v[0]


def test_tma_takes_tiles_cp_async_cannot_copy():
    """Without the column count's divisibility the masked loads move 2-byte elements: the
    cp.async ring cannot copy them (the dots would store B each iteration, with a remark), TMA
    moves the blocks whatever the register layout."""
    k = compile_fwd(64, False, wide_columns=False)
    (body,) = _loop_bodies(k.asm["gpu"])
    assert body.count("nvidia.tma_copy") == 2 and "wgmma_staged" not in k.asm["gpu"]
    portable = compile_fwd(64, False, wide_columns=False, maps=())
    assert "nvidia.wgmma_staged" in portable.asm["gpu"]
    assert any("moves 2-byte vectors, not 16-byte ones" in r
               for r in portable.metadata["remarks"]), portable.metadata["remarks"]


MADE_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "O": "*fp16", "LSE": "*fp32", "L": "i32",
            "sm_scale": "fp32"}


@pytest.mark.parametrize("causal", [False, True])
def test_in_kernel_descriptors_move_by_tma_with_device_maps(causal):
    """Descriptors made in the kernel (tutorial 06 with warp_specialize on Hopper): K's and V's
    maps are built per program (Q's load, outside the loop, stays masked and needs none)."""
    k = naiad.compile(attn_fwd_made_desc, MADE_SIG, dict(D=64, BM=128, BN=64, CAUSAL=causal),
                      target="nvidia:sm_90", options={"num_warps": 4, "num_stages": 3},
                      specialization={n: {"divisibility": 16} for n in MADE_SIG
                                      if n != "sm_scale"})
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    (body,) = _loop_bodies(gpu)
    assert body.count("nvidia.tma_copy") == 2 and "nvidia.cp_async" not in gpu
    assert gpu.count("nvidia.tensormap_make") == 2
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == 2
    assert k.metadata["global_scratch_size"] == 2 * 128 and k.metadata["spill_bytes"] == 0


# -- on the H200 ----------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d,warps,stages,length", [(64, 4, 2, 328), (64, 4, 3, 256),
                                                   (64, 4, 4, 200), (128, 8, 3, 328),
                                                   (128, 8, 2, 256)])
def test_descriptor_attention_forward_on_gpu(causal, d, warps, stages, length):
    kern = run_descriptor_forward(attn_fwd_desc, causal, d, warps, stages, length,
                                  seed=length + d + stages)
    assert BULK_COPY in kern.asm["ptx"] and "nvidia.cp_async " not in kern.asm["gpu"], \
        kern.metadata["remarks"]


def run_descriptor_forward(kernel, causal, d, warps, stages, length, seed):
    """Run ``kernel`` (an attention forward over host TensorDescriptors of 3 stacked heads)
    on fresh inputs with NaN-poisoned outputs, check O and the log-sum-exp against numpy, and
    return the compiled kernel."""
    heads, scale, bm, bn = 3, 0.3, 128, 64
    rng = np.random.default_rng(seed)
    q, k, v, do = (rng.standard_normal((heads, length, d)).astype(np.float16) * 0.5
                   for _ in range(4))
    o = naiad.to_device(np.full((heads, length, d), np.nan, np.float16))
    lse = naiad.to_device(np.full((heads, length), np.nan, np.float32))
    descs = []
    for x, block in ((q, (bm, d)), (k, (bn, d)), (v, (bn, d))):
        flat = naiad.to_device(x.reshape(heads * length, d))
        descs.append(TensorDescriptor(flat, [heads * length, d], [d, 1], list(block)))
    kern = kernel[(-(-length // bm), heads)](
        *descs, o, lse, length, scale, D=d, BM=bm, BN=bn, CAUSAL=causal, num_warps=warps,
        num_stages=stages)
    want_o, want_m, *_ = reference(q, k, v, do, scale, causal)
    np.testing.assert_allclose(naiad.to_host(o).astype(np.float64), want_o, rtol=2e-2,
                               atol=2e-2)
    np.testing.assert_allclose(naiad.to_host(lse), want_m, rtol=1e-3, atol=1e-3)
    return kern


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d,warps,stages,length", [(64, 4, 3, 328), (128, 8, 2, 200)])
def test_in_kernel_descriptor_attention_forward_on_gpu(device_allocator, causal, d, warps,
                                                       stages, length):
    heads, scale, bm, bn = 3, 0.3, 128, 64
    rng = np.random.default_rng(length + d + stages + 1)
    q, k, v, do = (rng.standard_normal((heads, length, d)).astype(np.float16) * 0.5
                   for _ in range(4))
    o = naiad.to_device(np.full((heads, length, d), np.nan, np.float16))
    lse = naiad.to_device(np.full((heads, length), np.nan, np.float32))
    kern = attn_fwd_made_desc[(-(-length // bm), heads)](
        *(naiad.to_device(x) for x in (q, k, v)), o, lse, length, scale, D=d, BM=bm, BN=bn,
        CAUSAL=causal, num_warps=warps, num_stages=stages)
    assert BULK_COPY in kern.asm["ptx"], kern.metadata["remarks"]
    want_o, want_m, *_ = reference(q, k, v, do, scale, causal)
    np.testing.assert_allclose(o.numpy().astype(np.float64), want_o, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(lse.numpy(), want_m, rtol=1e-3, atol=1e-3)
