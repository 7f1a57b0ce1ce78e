"""Triton's tutorial kernels, written exactly as a Triton user would, with only the imports
swapped. Shared by the frontend tests (and usable by runtime/conformance tests).

Each entry of :data:`TUTORIALS` gives a kernel with a signature and constexprs that compile it.
"""
import naiad as triton
import naiad.language as tl


# -- 01 vector add ------------------------------------------------------------------------------
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


# -- 02 fused softmax (persistent rows with tl.range) -------------------------------------------
@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


# -- 03 grouped matmul with a @jit activation and a string constexpr ------------------------------
@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


# -- 05 layer-norm forward ------------------------------------------------------------------------
@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


# -- integer ops: mixed signedness, //, %, shifts ----------------------------------------------
@triton.jit
def int_ops_kernel(a_ptr, b_ptr, u_ptr, q_ptr, r_ptr, mix_ptr, shift_ptr, n,
                   BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)   # int32
    b = tl.load(b_ptr + offs, mask=mask, other=1)   # int8
    u = tl.load(u_ptr + offs, mask=mask, other=1)   # uint16
    q = a // b                      # C division (toward zero) in int32
    r = a % b                       # remainder with the dividend's sign
    mixed = a + u                   # int32 + uint16 -> int32 (the wider wins)
    wide = u.to(tl.uint32) * a      # uint32 * int32 -> uint32 (same width: unsigned wins)
    small = b + 100                 # int literal is weak: stays int8
    sh = (a << 3) >> (b & 7)        # arithmetic shift on int32
    ush = wide >> 4                 # logical shift on uint32
    tl.store(q_ptr + offs, q, mask=mask)
    tl.store(r_ptr + offs, r, mask=mask)
    tl.store(mix_ptr + offs, mixed + small, mask=mask)
    tl.store(shift_ptr + offs, sh ^ ush.to(tl.int32, bitcast=True), mask=mask)


# -- 2-D grid with static_range ---------------------------------------------------------------
@triton.jit
def scale_tiles_2d(src_ptr, dst_ptr, M, N, stride_m,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, REPS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    base_n = pid_n * (BLOCK_N * REPS)
    for r in tl.static_range(REPS):
        offs_n = base_n + r * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        offs = offs_m[:, None] * stride_m + offs_n[None, :]
        x = tl.load(src_ptr + offs, mask=mask)
        tl.store(dst_ptr + offs, x * (r + 1), mask=mask)


# -- atomic histogram ---------------------------------------------------------------------------
@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    bins = x % NUM_BINS
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)


# -- argmax of each row ------------------------------------------------------------------------
@triton.jit
def argmax_rows_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    idx = tl.argmax(x, axis=0)
    tl.store(out_ptr + row, idx)


#: name -> (kernel, signature, constexprs)
TUTORIALS = {
    "vector_add": (add_kernel,
                   {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32",
                    "n_elements": "i32"},
                   {"BLOCK_SIZE": 1024}),
    "softmax": (softmax_kernel,
                {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                 "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                {"BLOCK_SIZE": 1024, "num_stages": 3}),
    "matmul": (matmul_kernel,
               {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
                "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"},
               {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                "ACTIVATION": "leaky_relu"}),
    "layer_norm": (_layer_norm_fwd_fused,
                   {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
                    "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": 1024}),
    "int_ops": (int_ops_kernel,
                {"a_ptr": "*i32", "b_ptr": "*i8", "u_ptr": "*u16", "q_ptr": "*i32",
                 "r_ptr": "*i32", "mix_ptr": "*i32", "shift_ptr": "*i32", "n": "i32"},
                {"BLOCK": 256}),
    "tiles_2d": (scale_tiles_2d,
                 {"src_ptr": "*fp32", "dst_ptr": "*fp32", "M": "i32", "N": "i32",
                  "stride_m": "i32"},
                 {"BLOCK_M": 16, "BLOCK_N": 32, "REPS": 3}),
    "histogram": (histogram_kernel,
                  {"x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"},
                  {"NUM_BINS": 16, "BLOCK": 512}),
    "argmax_rows": (argmax_rows_kernel,
                    {"x_ptr": "*fp32", "out_ptr": "*i32", "n_cols": "i32", "stride": "i32"},
                    {"BLOCK": 128}),
}
