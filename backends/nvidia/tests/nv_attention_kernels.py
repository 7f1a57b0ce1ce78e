"""Flash-attention kernels (forward, and the backward's dK/dV and dQ loops) in the shape of
Triton's tutorial 06, with masks so sequence lengths need not be multiples of the blocks, and
their numpy references. Shapes: (heads, L, D) contiguous; ``sm_scale`` applied to Q K^T."""
import numpy as np

import naiad
import naiad.language as tl

LOG2E = 1.4426950408889634


@naiad.jit
def attn_fwd(Q, K, V, O, M, L, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
             CAUSAL: tl.constexpr):
    """O = softmax(Q K^T * sm_scale) V per head; M = the rows' log2-sum-exp2 (for backward)."""
    pid = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * L * D
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = tl.minimum((pid + 1) * BM, L) if CAUSAL else L
    for start in range(0, hi, BN):
        cols = start + rn
        kt = tl.load(K + head + cols[None, :] * D + rd[:, None], mask=cols[None, :] < L,
                     other=0.0)
        s = tl.dot(q, kt) * qk_scale
        keep = cols[None, :] < L
        if CAUSAL:
            keep = keep & (rm[:, None] >= cols[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + head + cols[:, None] * D + rd[None, :], mask=cols[:, None] < L,
                    other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    tl.store(M + tl.program_id(1) * L + rm, m_i + tl.math.log2(l_i), mask=rm < L)
    tl.store(O + head + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16),
             mask=rm[:, None] < L)



@naiad.jit
def attn_fwd_desc(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    """:func:`attn_fwd` with Q, K, V as tensor descriptors (host ``TensorDescriptor`` s) of
    the heads stacked into one ``(heads * L, D)`` matrix."""
    _fwd_from_descriptors(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D, BM, BN, CAUSAL)


@naiad.jit
def attn_fwd_made_desc(Q, K, V, O, LSE, L, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr, CAUSAL: tl.constexpr):
    """:func:`attn_fwd_desc` with the descriptors made in the kernel (maps built on the
    device), as tutorial 06 makes them with ``warp_specialize`` on Hopper."""
    rows = tl.num_programs(1) * L
    desc_q = tl.make_tensor_descriptor(Q, shape=[rows, D], strides=[D, 1], block_shape=[BM, D])
    desc_k = tl.make_tensor_descriptor(K, shape=[rows, D], strides=[D, 1], block_shape=[BN, D])
    desc_v = tl.make_tensor_descriptor(V, shape=[rows, D], strides=[D, 1], block_shape=[BN, D])
    _fwd_from_descriptors(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D, BM, BN, CAUSAL)


@naiad.jit
def _fwd_from_descriptors(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D: tl.constexpr,
                          BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr,
                          SPLIT: tl.constexpr = False):
    """The forward of :func:`attn_fwd` reading Q, K, V through descriptors, as tutorial 06
    does (``desc_k.load(...).T``): a key block past ``L`` reads the next head's rows (masked to
    -inf in ``s``), past the last head the descriptor's zero fill. ``SPLIT`` with ``CAUSAL``:
    two loops, the off-band key blocks then the diagonal's (tutorial 06's STAGE 3); else one
    loop with the causal mask in it."""
    pid = tl.program_id(0)
    row0 = tl.program_id(1) * L
    head = tl.program_id(1).to(tl.int64) * L * D
    rm = pid * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = desc_q.load([row0 + pid * BM, 0])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL and SPLIT:
        acc, l_i, m_i = _fwd_loop(acc, l_i, m_i, q, desc_k, desc_v, row0, rm, 0, pid * BM, L,
                                  qk_scale, BN, False)
        acc, l_i, m_i = _fwd_loop(acc, l_i, m_i, q, desc_k, desc_v, row0, rm, pid * BM,
                                  tl.minimum((pid + 1) * BM, L), L, qk_scale, BN, True)
    else:
        hi = tl.minimum((pid + 1) * BM, L) if CAUSAL else L
        acc, l_i, m_i = _fwd_loop(acc, l_i, m_i, q, desc_k, desc_v, row0, rm, 0, hi, L,
                                  qk_scale, BN, CAUSAL)
    tl.store(LSE + tl.program_id(1) * L + rm, m_i + tl.math.log2(l_i), mask=rm < L)
    tl.store(O + head + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16),
             mask=rm[:, None] < L)


@naiad.jit
def attn_fwd_desc_split(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D: tl.constexpr,
                        BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    """:func:`attn_fwd_desc` split as tutorial 06 splits its causal forward (STAGE 3): an
    off-band loop over the key blocks left of the diagonal, then the diagonal's loop with the
    causal mask -- two ring loops in one program, one after the other."""
    _fwd_from_descriptors(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D, BM, BN, CAUSAL,
                          SPLIT=True)


@naiad.jit
def attn_fwd_made_desc_split(Q, K, V, O, LSE, L, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr, CAUSAL: tl.constexpr):
    """:func:`attn_fwd_desc_split` with the descriptors made in the kernel."""
    rows = tl.num_programs(1) * L
    desc_q = tl.make_tensor_descriptor(Q, shape=[rows, D], strides=[D, 1], block_shape=[BM, D])
    desc_k = tl.make_tensor_descriptor(K, shape=[rows, D], strides=[D, 1], block_shape=[BN, D])
    desc_v = tl.make_tensor_descriptor(V, shape=[rows, D], strides=[D, 1], block_shape=[BN, D])
    _fwd_from_descriptors(desc_q, desc_k, desc_v, O, LSE, L, sm_scale, D, BM, BN, CAUSAL,
                          SPLIT=True)


@naiad.jit
def _fwd_loop(acc, l_i, m_i, q, desc_k, desc_v, row0, rm, lo, hi, L, qk_scale,
              BN: tl.constexpr, DIAGONAL: tl.constexpr):
    """Key blocks ``lo, lo + BN, ... < hi`` of one stage (tutorial 06's ``_attn_fwd_inner``)."""
    rn = tl.arange(0, BN)
    offset = row0 + lo
    for start in range(lo, hi, BN):
        k = desc_k.load([offset, 0]).T
        s = tl.dot(q, k) * qk_scale
        cols = start + rn
        keep = cols[None, :] < L
        if DIAGONAL:
            keep = keep & (rm[:, None] >= cols[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = desc_v.load([offset, 0])
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
        offset += BN
    return acc, l_i, m_i


@naiad.jit
def attn_bwd_dkdv(Q, K, V, DO, M, Delta, DK, DV, L, sm_scale, D: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    """dK, dV of one BN block of keys; loops over BM blocks of queries (tutorial 06's
    _attn_bwd_dkdv: K and V stay, Q^T and dO stream)."""
    pid = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * L * D
    rows = tl.program_id(1) * L
    rn = pid * BN + tl.arange(0, BN)
    rd = tl.arange(0, D)
    rb = tl.arange(0, BM)
    k = tl.load(K + head + rn[:, None] * D + rd[None, :], mask=rn[:, None] < L, other=0.0)
    v = tl.load(V + head + rn[:, None] * D + rd[None, :], mask=rn[:, None] < L, other=0.0)
    dk = tl.zeros((BN, D), tl.float32)
    dv = tl.zeros((BN, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    lo = (pid * BN) // BM * BM if CAUSAL else 0
    for start in range(lo, L, BM):
        rm = start + rb
        qT = tl.load(Q + head + rm[None, :] * D + rd[:, None], mask=rm[None, :] < L, other=0.0)
        m = tl.load(M + rows + rm, mask=rm < L, other=0.0)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT * qk_scale - m[None, :])
        keep = rm[None, :] < L
        if CAUSAL:
            keep = keep & (rm[None, :] >= rn[:, None])
        pT = tl.where(keep, pT, 0.0)
        do = tl.load(DO + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
        dv = tl.dot(pT.to(tl.float16), do, dv)
        di = tl.load(Delta + rows + rm, mask=rm < L, other=0.0)
        dpT = tl.dot(v, tl.trans(do))
        dsT = pT * (dpT - di[None, :])
        dk = tl.dot(dsT.to(tl.float16), tl.trans(qT), dk)
    tl.store(DK + head + rn[:, None] * D + rd[None, :], (dk * sm_scale).to(tl.float16),
             mask=rn[:, None] < L)
    tl.store(DV + head + rn[:, None] * D + rd[None, :], dv.to(tl.float16), mask=rn[:, None] < L)


@naiad.jit
def attn_bwd_dq(Q, K, V, DO, M, Delta, DQ, L, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr, CAUSAL: tl.constexpr):
    """dQ of one BM block of queries; loops over BN blocks of keys (tutorial 06's
    _attn_bwd_dq: Q and dO stay, K^T and V^T stream)."""
    pid = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * L * D
    rows = tl.program_id(1) * L
    rm = pid * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    rb = tl.arange(0, BN)
    q = tl.load(Q + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    do = tl.load(DO + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    m = tl.load(M + rows + rm, mask=rm < L, other=0.0)
    di = tl.load(Delta + rows + rm, mask=rm < L, other=0.0)
    dq = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = tl.minimum((pid + 1) * BM, L) if CAUSAL else L
    for start in range(0, hi, BN):
        rn = start + rb
        kT = tl.load(K + head + rn[None, :] * D + rd[:, None], mask=rn[None, :] < L, other=0.0)
        vT = tl.load(V + head + rn[None, :] * D + rd[:, None], mask=rn[None, :] < L, other=0.0)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk * qk_scale - m[:, None])
        keep = rn[None, :] < L
        if CAUSAL:
            keep = keep & (rm[:, None] >= rn[None, :])
        p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, vT)
        ds = p * (dp - di[:, None])
        dq = tl.dot(ds.to(tl.float16), tl.trans(kT), dq)
    tl.store(DQ + head + rm[:, None] * D + rd[None, :], (dq * sm_scale).to(tl.float16),
             mask=rm[:, None] < L)


@naiad.jit
def attn_fwd_parts(Q, K, V, ACC, M, L_SUM, L, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                   BN: tl.constexpr, CAUSAL: tl.constexpr):
    """The forward's loop alone: stores the unnormalised accumulator, the running max and the
    row sums (no division, no log2: nothing in the kernel makes ptxas serialize its wgmmas)."""
    pid = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * L * D
    rows = tl.program_id(1) * L
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = tl.minimum((pid + 1) * BM, L) if CAUSAL else L
    for start in range(0, hi, BN):
        cols = start + rn
        kt = tl.load(K + head + cols[None, :] * D + rd[:, None], mask=cols[None, :] < L,
                     other=0.0)
        s = tl.dot(q, kt) * qk_scale
        keep = cols[None, :] < L
        if CAUSAL:
            keep = keep & (rm[:, None] >= cols[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + head + cols[:, None] * D + rd[None, :], mask=cols[:, None] < L,
                    other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    tl.store(M + rows + rm, m_i, mask=rm < L)
    tl.store(L_SUM + rows + rm, l_i, mask=rm < L)
    tl.store(ACC + head + rm[:, None] * D + rd[None, :], acc, mask=rm[:, None] < L)


@naiad.jit
def chained_dots(Q, K, V, OUT, ROWSUM, L, scale, D: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr, READ: tl.constexpr):
    """OUT = ((Q K^T * scale) as f16) V: the second dot only accumulates (no rescaling), so its
    accumulator is never read in the loop -- unless READ, which sums it every iteration."""
    pid = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * L * D
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    acc = tl.zeros((BM, D), tl.float32)
    total = tl.zeros((BM,), tl.float32)
    for start in range(0, L, BN):
        cols = start + rn
        kt = tl.load(K + head + cols[None, :] * D + rd[:, None], mask=cols[None, :] < L,
                     other=0.0)
        p = tl.where(cols[None, :] < L, tl.dot(q, kt) * scale, 0.0)
        v = tl.load(V + head + cols[:, None] * D + rd[None, :], mask=cols[:, None] < L,
                    other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        if READ:
            total += tl.sum(acc, 1)
    tl.store(OUT + head + rm[:, None] * D + rd[None, :], acc, mask=rm[:, None] < L)
    if READ:
        tl.store(ROWSUM + tl.program_id(1) * L + rm, total, mask=rm < L)


FWD_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "O": "*fp16", "M": "*fp32", "L": "i32",
           "sm_scale": "fp32"}
DKDV_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "DO": "*fp16", "M": "*fp32",
            "Delta": "*fp32", "DK": "*fp16", "DV": "*fp16", "L": "i32", "sm_scale": "fp32"}
PARTS_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "ACC": "*fp32", "M": "*fp32",
             "L_SUM": "*fp32", "L": "i32", "sm_scale": "fp32"}
CHAINED_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "OUT": "*fp32", "ROWSUM": "*fp32",
               "L": "i32", "scale": "fp32"}
DQ_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "DO": "*fp16", "M": "*fp32",
          "Delta": "*fp32", "DQ": "*fp16", "L": "i32", "sm_scale": "fp32"}


def aligned(sig) -> dict:
    """What the runtime derives for ``sig``'s (fresh, contiguous) pointers and a length
    divisible by 16."""
    return {n: {"divisibility": 16} for n, t in sig.items() if t.startswith("*") or n == "L"}


def reference(q, k, v, do, sm_scale, causal):
    """numpy (float64): O, the log2-sum-exp2 rows M, Delta = rowsum(O * dO), dQ, dK, dV."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = q @ k.transpose(0, 2, 1) * sm_scale
    length = q.shape[1]
    if causal:
        s = np.where(np.tril(np.ones((length, length), bool)), s, -np.inf)
    t = s * LOG2E
    mx = t.max(axis=-1, keepdims=True)
    m2 = mx[..., 0] + np.log2(np.exp2(t - mx).sum(axis=-1))
    p = np.exp2(t - m2[..., None])
    o = p @ v
    delta = (o * do).sum(axis=-1)
    dv = p.transpose(0, 2, 1) @ do
    dp = do @ v.transpose(0, 2, 1)
    ds = p * (dp - delta[..., None])
    dq = ds @ k * sm_scale
    dk = ds.transpose(0, 2, 1) @ q * sm_scale
    return o, m2, delta, dq, dk, dv


def reference_parts(q, k, v, sm_scale, causal):
    """numpy (float64) of :func:`attn_fwd_parts`: the rows' max of ``Q K^T * scale * log2 e``,
    the unnormalised ``exp2(t - max) V`` and its row sums."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    t = q @ k.transpose(0, 2, 1) * sm_scale * LOG2E
    length = q.shape[1]
    if causal:
        t = np.where(np.tril(np.ones((length, length), bool)), t, -np.inf)
    mx = t.max(axis=-1)
    p = np.exp2(t - mx[..., None])
    return p @ v, mx, p.sum(axis=-1)


def reference_chained(q, k, v, scale):
    """numpy of :func:`chained_dots`: the product's first factor rounded to f16 as the kernel
    does, both products in float64."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    p = (q @ k.transpose(0, 2, 1) * scale).astype(np.float16).astype(np.float64)
    return p @ v
