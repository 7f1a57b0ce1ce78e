"""In-flight wgmmas of multi-dot ring loops (:mod:`naiad_nvidia.passes.wgmma_async`): which
dots run without waiting, where their results are waited for and with which ``wait_group``
count, where the ring copies go, and that ptxas keeps the pipeline (compile tier, no GPU)."""
import re

import pytest

import naiad

from nv_attention_kernels import (CHAINED_SIG, FWD_SIG, PARTS_SIG, aligned, attn_fwd,
                                  attn_fwd_parts, chained_dots)

BLOCKS = dict(BM=128, BN=64)


def _compile(fn, sig, num_warps=4, num_stages=3, **constexprs):
    return naiad.compile(fn, sig, dict(BLOCKS, **constexprs), target="nvidia:sm_90",
                         options={"num_warps": num_warps, "num_stages": num_stages},
                         specialization=aligned(sig))


def _loop_bodies(gpu: str) -> list[str]:
    out, pos = [], 0
    while (start := gpu.find(" = for ", pos)) >= 0:
        end = gpu.index("\n  }\n", start)
        out.append(gpu[start:end])
        pos = end
    return out


def _after_loops(gpu: str) -> str:
    return gpu[gpu.rindex("\n  }\n"):]


def _wait_groups(ptx: str) -> list[int]:
    return [int(n) for n in re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+);", ptx)]


@pytest.mark.parametrize("num_stages", [2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_p_at_v_runs_in_flight(num_stages, causal):
    """acc = dot(p, v, acc) is read only by the next iteration's ``acc * alpha``: issued with no
    wait; the next iteration waits for it before that multiply with ``wait_group 1`` (q @ k.T
    was committed after it), and the loop's result is waited for (``0``) after the loop."""
    k = _compile(attn_fwd, FWD_SIG, num_stages=num_stages, D=64, CAUSAL=causal)
    gpu, ptx = k.asm["gpu"], k.asm["ptx"]
    assert not [r for r in k.metadata["remarks"] if "waits for its result" in r]
    bodies = _loop_bodies(gpu)
    assert len(bodies) == 1
    body = bodies[0]
    rings = re.findall(r"(%\w+) = nvidia\.wgmma_ring [^\n]*", body)
    assert len(rings) == 2 and body.count("in_flight = true") == 2
    waits = re.findall(r"(%\w+) = nvidia\.wgmma_wait (%\w+) \{pending = (\d+)\}", body)
    # q @ k.T waits for its own result (0) after the early copies; the carried acc (1)
    assert [(w[1] == rings[0], w[2]) for w in waits] == [(True, "0"), (False, "1")]
    # the second wait reads the loop-carried accumulator; its result is what the multiply scales
    assert re.search(rf"= mul {waits[1][0]}, ", body)
    assert body.index(f"= nvidia.wgmma_wait {waits[1][1]}") > body.index("= nvidia.wgmma_ring")
    after = gpu[gpu.index("yield", gpu.index(" = for ")):]
    assert re.search(r"= nvidia\.wgmma_wait %acc\w* \{pending = 0\}", after)
    # per loop: q @ k.T waits for everything, the carried p @ v with one group behind it
    assert _wait_groups(ptx) == [0, 1, 0]
    assert ptx.count("wgmma.commit_group") == 2
    assert k.metadata["spill_bytes"] == 0


def test_copies_of_an_in_flight_dots_tile_follow_the_last_dot():
    """V (read by the in-flight p @ v) is copied after p @ v is issued: its slot was last read
    by the previous p @ v, retired by this iteration's q @ k.T wait and past the barrier
    before p @ v. K (read only by q @ k.T, which waits for its result in its iteration) is
    copied early: after q @ k.T is issued and before its wait, so the copies overlap it."""
    k = _compile(attn_fwd, FWD_SIG, num_stages=3, D=64, CAUSAL=False)
    (body,) = _loop_bodies(k.asm["gpu"])
    lines = body.splitlines()
    where = {name: [i for i, s in enumerate(lines) if name in s]
             for name in ("nvidia.cp_async ", "= nvidia.wgmma_ring", "barrier",
                          "nvidia.cp_async_wait")}
    copy_k, copy_v = where["nvidia.cp_async "]
    dot_qk, dot_pv = where["= nvidia.wgmma_ring"]
    qk = re.search(r"(%\w+) = nvidia\.wgmma_ring", lines[dot_qk]).group(1)
    wait_qk = next(i for i, s in enumerate(lines) if f"= nvidia.wgmma_wait {qk} " in s)
    assert where["barrier"][0] < dot_qk < copy_k < wait_qk < where["barrier"][1] < dot_pv < copy_v
    assert "offset = 0," in lines[copy_k] and "offset = 8192," in lines[copy_v]
    # D = 2, K then V per iteration: K of i waits behind V of i, K and V of i + 1; V of i
    # behind K and V of i + 1 and K of i + 2
    assert [int(re.search(r"pending = (\d+)", lines[i]).group(1))
            for i in where["nvidia.cp_async_wait"]] == [3, 3]


@pytest.mark.parametrize("d,num_warps", [(64, 4), (64, 8), (128, 8)])
def test_ptxas_keeps_the_wgmma_pipeline(d, num_warps):
    """Without extern calls in the kernel (no division), ptxas neither serializes the wgmmas
    (C7509/C7510 warnings in the info log) nor spills."""
    k = _compile(attn_fwd_parts, PARTS_SIG, num_warps, D=d, CAUSAL=False)
    assert "in_flight = true" in k.asm["gpu"]
    log = k.metadata["jit_log"]
    assert "serialized" not in log, log
    assert k.metadata["spill_bytes"] == 0, log


def test_register_a_fragments_are_packed_before_the_group():
    """Each register-A wgmma group packs its A words (cvt to f16x2) before ``wgmma.fence``:
    a register written between two wgmmas of a group makes ptxas fence before each one."""
    k = _compile(attn_fwd_parts, PARTS_SIG, 4, D=64, CAUSAL=False)
    ptx = k.asm["ptx"]
    fences = [m.start() for m in re.finditer(r"wgmma\.fence", ptx)]
    commits = [m.start() for m in re.finditer(r"wgmma\.commit_group", ptx)]
    for start, end in zip(fences, commits):
        assert "cvt.rn.f16x2" not in ptx[start:end]
    assert len(fences) == len(commits) == 2


def test_hd128_with_four_warps_stays_synchronous():
    """128 + 64 accumulator registers and 32 of p per thread exceed the register budget:
    keeping p and acc live into the next iteration would spill, so every dot waits."""
    from naiad_nvidia.passes.wgmma_async import REGISTER_BUDGET

    assert 128 + 64 + 32 > REGISTER_BUDGET >= 64 + 64 + 32
    k = _compile(attn_fwd_parts, PARTS_SIG, 4, D=128, CAUSAL=False)
    assert "in_flight" not in k.asm["gpu"]
    import inspect

    src, first = inspect.getsourcelines(attn_fwd_parts.fn)
    line = first + next(i for i, s in enumerate(src) if "acc = tl.dot(" in s)
    assert (f"dot at nv_attention_kernels.py:{line} waits for its result each iteration "
            "(wgmma.wait_group 0) although only the next iteration reads it: the loop's "
            "accumulators and register A operands take 224 registers per thread, and keeping "
            "them live into the next iteration past 192 would spill") in k.metadata["remarks"]
    assert "nvidia.wgmma_wait" not in k.asm["gpu"]
    assert set(_wait_groups(k.asm["ptx"])) == {0}


def test_chained_accumulator_is_waited_for_after_the_loop_only():
    """An accumulator carried only into the same dot (acc = dot(p, v, acc)) chains wgmmas on
    in-flight registers: no wait in the loop, one after it."""
    k = _compile(chained_dots, CHAINED_SIG, 4, D=64, READ=False)
    gpu = k.asm["gpu"]
    (body,) = _loop_bodies(gpu)
    rings = re.findall(r"(%\w+) = nvidia\.wgmma_ring", body)
    # in the loop only the first dot's own wait (after the early copies), none for acc
    assert re.findall(r"= nvidia\.wgmma_wait (%\w+)", body) == [rings[0]]
    assert body.count("in_flight = true") == 2
    assert gpu.count("nvidia.wgmma_wait") == 2
    assert _wait_groups(k.asm["ptx"]) == [0, 0]   # the first dot, and after the loop
    assert "serialized" not in k.metadata["jit_log"]


def test_result_read_in_its_own_iteration_is_waited_for():
    """READ sums the accumulator every iteration: the dot's result is read where it is made,
    so it waits (``wait_group 0``) as before and nothing runs in flight."""
    k = _compile(chained_dots, CHAINED_SIG, 4, D=64, READ=True)
    gpu = k.asm["gpu"]
    assert "in_flight" not in gpu and "nvidia.wgmma_wait" not in gpu
    assert _wait_groups(k.asm["ptx"]) == [0, 0]
