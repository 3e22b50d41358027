"""The GEMM main loop of the gemm_epilogue family: one output tile's accumulator over a range of K.

Shared by the family's kernels (kernel.py) and by the offline lowering, whose generated GEMM kernels call these
functions and fuse the op graph's epilogue after them (agent_client/lowering/kernels/dot.py pastes this file's
code into a candidate; ingest/bundle.py inlines it into kernel.py's). One loop, measured once, serves both.

- _tile_coords: the grouped tile order (GROUP_M row blocks share each column block of B while it is in L2).
- _mma: one K step's product: fp32 inputs through "tf32x3" (three TF32 products of high and remainder parts,
  fp32-level error) or "ieee"; 16-bit inputs on the tensor cores; the CPU interpreter's 16-bit dot through fp32.
- _gemm_acc: acc + A[rows, ks] @ B[ks, cols] through pointers, any strides. Rows and columns past the edges
  wrap around (loads stay in bounds without masks; the caller masks its stores), and K is masked only when it
  is not a multiple of BLOCK_K (EVEN_K): the loop body is two loads, one product and two pointer increments.
- _gemm_acc_tma: the same from TMA descriptors (Hopper and later; edges zero-filled by the copy engine), B
  given as its transpose (N, K), as nn.Linear's weight is stored, or as it is (K, N) with B_KN.
"""

import triton
import triton.language as tl


@triton.jit
def _tile_coords(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering: GROUP_M row-blocks in a row share each B column-block while it is in L2.
    n_blocks_m = tl.cdiv(M, BLOCK_M)
    n_blocks_n = tl.cdiv(N, BLOCK_N)
    blocks_per_group = GROUP_M * n_blocks_n
    first_m = (tile // blocks_per_group) * GROUP_M
    group_rows = min(n_blocks_m - first_m, GROUP_M)
    pid_m = first_m + (tile % blocks_per_group) % group_rows
    pid_n = (tile % blocks_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _mma(a, b, acc, IS_FP32: tl.constexpr, FP32_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    if IS_FP32:  # fp32 inputs: "ieee" or "tf32x3", never a silent TF32 downgrade
        acc = tl.dot(a, b, acc, input_precision=FP32_PRECISION)
    elif UPCAST_DOT:  # CPU interpreter only: its bf16 dot multiplies raw bits, so go through fp32
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _gemm_acc(a_ptr, b_ptr, off_m, off_n, M, N, K, k_first, k_steps, stride_am, stride_ak, stride_bk, stride_bn,
              acc, EVEN_K: tl.constexpr, IS_FP32: tl.constexpr, FP32_PRECISION: tl.constexpr,
              UPCAST_DOT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """acc + A[off_m:off_m+BLOCK_M, K steps k_first..k_first+k_steps) @ B[those K, off_n:off_n+BLOCK_N]."""
    rows = (off_m + tl.arange(0, BLOCK_M)) % M
    cols = (off_n + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    k0 = k_first * BLOCK_K
    a_ptrs = a_ptr + rows[:, None] * stride_am + (k0 + ks[None, :]) * stride_ak
    b_ptrs = b_ptr + (k0 + ks[:, None]) * stride_bk + cols[None, :] * stride_bn
    for k in range(k_steps):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k0 - k * BLOCK_K
            a = tl.load(a_ptrs, mask=ks[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=ks[:, None] < k_left, other=0.0)
        acc = _mma(a, b, acc, IS_FP32, FP32_PRECISION, UPCAST_DOT)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def _gemm_acc_tma(a_desc, b_desc, off_m, off_n, k_steps, acc, IS_FP32: tl.constexpr,
                  FP32_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, BLOCK_K: tl.constexpr,
                  B_KN: tl.constexpr):
    """acc + A[off_m:, :K] @ B[:K, off_n:] from descriptors of A (M, K) and of B's transpose (N, K), or with
    B_KN of B itself (K, N)."""
    for k in range(k_steps):
        a = a_desc.load([off_m, k * BLOCK_K])
        if B_KN:
            acc = _mma(a, b_desc.load([k * BLOCK_K, off_n]), acc, IS_FP32, FP32_PRECISION, UPCAST_DOT)
        else:
            b = b_desc.load([off_n, k * BLOCK_K])  # a (BLOCK_N, BLOCK_K) tile of B^T
            acc = _mma(a, b.T, acc, IS_FP32, FP32_PRECISION, UPCAST_DOT)
    return acc
