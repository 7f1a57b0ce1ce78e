"""Tile-language matmul kernels shared by the tensor-core test modules."""
import naiad
import naiad.language as tl


@naiad.jit
def masked_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    """Masked edges in M, N and K; the mask depends on the induction variable."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@naiad.jit
def pointer_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """bench's matmul_tc_kernel (repeated so tests do not import bench/): unmasked loads
    through carried, incremented pointers, f16 epilogue."""
    pid_m = tl.program_id(0) // tl.cdiv(N, BN)
    pid_n = tl.program_id(0) % tl.cdiv(N, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


@naiad.jit
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   GROUP: tl.constexpr, ASSUME: tl.constexpr):
    """The shape of Triton's matmul tutorial, written for these tests: grouped program ids,
    ``tl.assume`` on them (when ``ASSUME``), rows and columns wrapped with ``% M`` / ``% N``,
    K masked through the loop counter, every stride an argument, a masked f16 store."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows_in_group = min(tiles_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group
    if ASSUME:
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)
        tl.assume(stride_am > 0)
        tl.assume(stride_bk > 0)
    rows = (pid_m * BM + tl.arange(0, BM)) % M
    cols = (pid_n * BN + tl.arange(0, BN)) % N
    ks = tl.arange(0, BK)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for i in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=ks[None, :] < K - i * BK, other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < K - i * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    out_rows = pid_m * BM + tl.arange(0, BM)
    out_cols = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn,
             acc.to(tl.float16), mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


@naiad.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      PROGRAMS: tl.constexpr, STAGES: tl.constexpr):
    """A persistent kernel (the shape of Triton's tutorial 09, written for these tests): each
    program walks tiles ``pid, pid + PROGRAMS, ...``; rows and columns clamped with
    ``tl.where`` and re-hinted, the K loop a ``tl.range`` with its own ``num_stages``, pointers
    rebuilt from the counter each iteration, K masked, C stored with a mask."""
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    ks = tl.arange(0, BK)
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS):
        rows = (tile // tiles_n) * BM + tl.arange(0, BM)
        cols = (tile % tiles_n) * BN + tl.arange(0, BN)
        safe_rows = tl.max_contiguous(tl.multiple_of(tl.where(rows < M, rows, 0), BM), BM)
        safe_cols = tl.max_contiguous(tl.multiple_of(tl.where(cols < N, cols, 0), BN), BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for i in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
            k = i * BK + ks
            a = tl.load(a_ptr + safe_rows[:, None] * stride_am + k[None, :],
                        mask=ks[None, :] < K - i * BK, other=0.0)
            b = tl.load(b_ptr + k[:, None] * stride_bk + safe_cols[None, :],
                        mask=ks[:, None] < K - i * BK, other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc.to(tl.float16),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


@naiad.jit
def pointer_table_matmul(ptrs, sizes, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Tutorial 08's way of finding its operands (written for these tests): A, B and C
    addresses loaded from a table, so nothing is known of their alignment until
    ``tl.multiple_of`` -- written as a statement, its result unused -- promises it."""
    m, n, k = tl.load(sizes), tl.load(sizes + 1), tl.load(sizes + 2)
    a_ptr = tl.load(ptrs).to(tl.pointer_type(tl.float16))
    b_ptr = tl.load(ptrs + 1).to(tl.pointer_type(tl.float16))
    c_ptr = tl.load(ptrs + 2).to(tl.pointer_type(tl.float16))
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    a_ptrs = a_ptr + rows[:, None] * k + ks[None, :]
    b_ptrs = b_ptr + ks[:, None] * n + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for i in range(0, tl.cdiv(k, BK)):
        tl.multiple_of(a_ptrs, [16, 16])
        tl.multiple_of(b_ptrs, [16, 16])
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * n
    tl.store(c_ptr + rows[:, None] * n + cols[None, :], acc.to(tl.float16))
