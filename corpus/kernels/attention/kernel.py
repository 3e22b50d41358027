"""Attention forward, FlashAttention-2 style: softmax(q k^T * scale [+ causal mask]) v without the S x S matrix.

Usage: a KernelBench-format candidate; the harness loads it next to a spec from ./specs/, e.g.
    python -m harness.cli eval corpus/kernels/attention/specs/attention_causal_bf16_d128.py \
        corpus/kernels/attention/kernel.py

One program owns BLOCK_M query rows of one (batch, head) and streams the keys and values in BLOCK_N
blocks, keeping a running row maximum and row sum (online softmax, base-2 exponentials) and an fp32
output accumulator. Traffic is q, k, v read and o written once per query block: no B*H*S*S scores in
memory, against eager's several S x S tensors. Causal: key blocks wholly above the diagonal are skipped
(half the work), only the diagonal blocks are masked, and the heaviest query blocks are launched first.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn

try:  # host-side TMA descriptors (triton >= 3.3); without them the pointer path runs
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older triton
    TensorDescriptor = None

TUNABLES = {
    "BLOCK_M": 128,
    "BLOCK_N": 64,
    # BLOCK_N for head_dim >= 128: 128-key blocks measured 1.0106 vs 1.0709 ms with 64 (causal 0.5644 vs 0.6058,
    # benchmarks/results/sweep-20261130T165611Z.json); d64 is faster with 64 (sweep-20261130T131143Z.json)
    "BLOCK_N_D128": 128,
    "num_warps": 8,
    "num_stages": 3,
    "TMA": True,  # q, k, v tiles by TMA descriptors over (B*H*S, D) views (Hopper and later)
    # compiler warp specialisation of the unmasked key loop (producer/consumer warp groups); a GPU
    # compile-time choice, ignored by the CPU interpreter
    "WARP_SPECIALIZE": False,
}


@triton.jit
def _attend_block(acc, l_i, m_i, q, k_ptrs, v_ptrs, k_desc, v_desc, row0, offs_m, start_n, seq_len, qk_scale,
                  stride_kn, stride_vn, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                  FP32_DOT: tl.constexpr, USE_TMA: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_n = start_n + tl.arange(0, BLOCK_N)
    if USE_TMA:  # rows past seq_len belong to the next head (or are zero-filled): masked to -inf below
        k = k_desc.load([row0 + start_n, 0])
        v = v_desc.load([row0 + start_n, 0])
    elif MASKED:
        k = tl.load(k_ptrs + start_n * stride_kn, mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptrs + start_n * stride_vn, mask=offs_n[:, None] < seq_len, other=0.0)
    else:
        k = tl.load(k_ptrs + start_n * stride_kn)
        v = tl.load(v_ptrs + start_n * stride_vn)
    # FP32_DOT: fp32 inputs (true fp32, never a silent TF32) and the CPU interpreter (its bf16 dot is wrong).
    if FP32_DOT:
        qk = tl.dot(q.to(tl.float32), tl.trans(k.to(tl.float32)), input_precision="ieee")
    else:
        qk = tl.dot(q, tl.trans(k))
    if MASKED:
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        qk = tl.where(keep, qk, float("-inf"))
    # Scores in log2 units (qk_scale carries log2(e)): the row max is taken on the raw scores (scale > 0),
    # so the scaling and the max subtraction are one FMA per score before exp2.
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    if FP32_DOT:
        acc = tl.dot(p, v.to(tl.float32), acc, input_precision="ieee")
    else:
        acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_new


@triton.jit
def _attention_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    q_desc, k_desc, v_desc,  # TMA descriptors over (B*H*S, D) views when USE_TMA, else unused
    H, seq_len,
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    qk_scale,
    HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, FP32_DOT: tl.constexpr, USE_TMA: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    n_blocks_m = tl.num_programs(0)
    start_m = n_blocks_m - 1 - tl.program_id(0)  # last query blocks have the most keys under causal
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n0 = tl.arange(0, BLOCK_N)
    q_ptrs = q_ptr + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    k_ptrs = k_ptr + b * stride_kb + h * stride_kh + offs_n0[:, None] * stride_kn + offs_d[None, :] * stride_kd
    v_ptrs = v_ptr + b * stride_vb + h * stride_vh + offs_n0[:, None] * stride_vn + offs_d[None, :] * stride_vd
    row0 = bh * seq_len  # this head's first row in the (B*H*S, D) views
    if USE_TMA:
        q = q_desc.load([row0 + start_m * BLOCK_M, 0])
    else:
        q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_len, other=0.0)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # Keys [0, split) need no mask; keys [split, hi) get the causal and/or sequence-end mask.
    if CAUSAL:
        split = start_m * BLOCK_M  # BLOCK_M is a multiple of BLOCK_N (checked by the launcher)
        hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len)
    else:
        split = (seq_len // BLOCK_N) * BLOCK_N
        hi = seq_len
    for start_n in tl.range(0, split, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        acc, l_i, m_i = _attend_block(acc, l_i, m_i, q, k_ptrs, v_ptrs, k_desc, v_desc, row0, offs_m, start_n,
                                      seq_len, qk_scale, stride_kn, stride_vn, False, CAUSAL, FP32_DOT, USE_TMA,
                                      BLOCK_N)
    for start_n in range(split, hi, BLOCK_N):
        acc, l_i, m_i = _attend_block(acc, l_i, m_i, q, k_ptrs, v_ptrs, k_desc, v_desc, row0, offs_m, start_n,
                                      seq_len, qk_scale, stride_kn, stride_vn, True, CAUSAL, FP32_DOT, USE_TMA,
                                      BLOCK_N)

    acc = acc / l_i[:, None]
    o_ptrs = o_ptr + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_len)


def _tma_ok(*tensors: torch.Tensor) -> bool:
    """TMA over a (B*H*S, D) view: contiguous tensors, 16-byte aligned base and rows."""
    if TensorDescriptor is None:
        return False
    return all(t.is_contiguous() and t.data_ptr() % 16 == 0 and (t.shape[-1] * t.element_size()) % 16 == 0
               for t in tensors)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              sm_scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * sm_scale) v for q, k, v of shape (batch, heads, seq, head_dim)."""
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"attention: q, k, v must share one (B, H, S, D) shape, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    batch, heads, seq_len, head_dim = q.shape
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"attention: head_dim {head_dim} is not one of 16, 32, 64, 128, 256")
    block_m = TUNABLES["BLOCK_M"]
    block_n = TUNABLES["BLOCK_N_D128"] if head_dim >= 128 else TUNABLES["BLOCK_N"]
    if block_m % block_n:
        raise ValueError(f"attention: TUNABLES BLOCK_M={block_m} must be a multiple of the key block {block_n}")
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(head_dim)
    o = torch.empty_like(q)
    grid = (triton.cdiv(seq_len, block_m), batch * heads)
    use_tma = bool(TUNABLES["TMA"]) and _tma_ok(q, k, v)
    if use_tma:
        rows = batch * heads * seq_len
        q_desc, k_desc, v_desc = (TensorDescriptor.from_tensor(t.view(rows, head_dim), [bm, head_dim])
                                  for t, bm in ((q, block_m), (k, block_n), (v, block_n)))
    else:
        q_desc, k_desc, v_desc = q, k, v  # not read
    _attention_fwd_kernel[grid](
        q, k, v, o,
        q_desc, k_desc, v_desc,
        heads, seq_len,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        scale * 1.4426950408889634,  # log2(e): exp(x) == exp2(x * log2(e))
        HEAD_DIM=head_dim, CAUSAL=causal, FP32_DOT=q.device.type == "cpu" or q.dtype == torch.float32,
        USE_TMA=use_tma,
        # the interpreter runs loops as Python loops: warp specialisation is a GPU compile-time choice
        WARP_SPECIALIZE=bool(TUNABLES["WARP_SPECIALIZE"]) and q.device.type == "cuda",
        BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=TUNABLES["num_warps"], num_stages=TUNABLES["num_stages"],
    )
    return o


class ModelNew(nn.Module):
    """Same constructor as the attention specs' Model: (causal,)."""

    def __init__(self, causal: bool = False):
        super().__init__()
        self.causal = causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return attention(q, k, v, self.causal)
