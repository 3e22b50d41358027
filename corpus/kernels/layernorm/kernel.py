"""Layer norm over the last dimension with an elementwise affine (weight, bias), fp32 statistics.

Two paths, chosen by the launcher from the row width N:
- fused (N <= MAX_FUSED_N): the row stays in registers: mean, then the centred variance (two-pass
  numerics, one pass over memory), then y = (x - mean) * rstd * w + b. Narrow rows share a program.
  Bytes moved: read x once, write y once (+ w and b, which stay in L2).
- looped (wider rows): a persistent grid walks rows; pass 1 merges per-block (count, mean, M2)
  statistics with Chan's formula (no sum-of-squares cancellation), pass 2 re-reads the row from its
  end backwards (L2-warm) and writes y.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "MAX_FUSED_N": 16384,  # widest row kept whole in registers
    "BLOCK_LOOP": 4096,
    "num_warps_loop": 16,
    "PROGRAMS_PER_SM": 1,
    "num_warps_fused": 0,  # fused path: 0 = from the row's bytes (ROW_BYTES_PER_WARP)
    "ROW_BYTES_PER_WARP": 1024,  # fused path: one warp per this many bytes of the rows a program holds
    "ROWS_FUSED": 0,  # fused path: rows per program, 0 = as many as fill 2048 lanes (power of 2)
}


@triton.jit
def _layernorm_fused_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
    ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    xc = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(xc * xc, axis=1) / n_cols
    rstd = tl.rsqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_looped_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
    BLOCK: tl.constexpr,
):
    cols = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_x
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_y
        # pass 1: Chan's merge of per-block (count, mean, M2)
        count = 0.0
        mean = 0.0
        m2 = 0.0
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            n_b = tl.sum(mask.to(tl.float32), axis=0)
            mean_b = tl.sum(x, axis=0) / n_b
            d = tl.where(mask, x - mean_b, 0.0)
            m2_b = tl.sum(d * d, axis=0)
            total = count + n_b
            delta = mean_b - mean
            mean = mean + delta * (n_b / total)
            m2 = m2 + m2_b + delta * delta * (count * n_b / total)
            count = total
        rstd = tl.rsqrt(m2 / n_cols + eps)
        # pass 2: newest blocks first, while they are still in L2
        last = tl.cdiv(n_cols, BLOCK) - 1
        for i in range(last + 1):
            start = (last - i) * BLOCK
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _fused_warps(rows: int, n_cols: int, element_size: int, bytes_per_warp: int) -> int:
    """Warps for a program holding `rows` rows: one per bytes_per_warp of real data (not of the padded
    power-of-two tile), a power of two in [2, 32]. On the H200 a 5120-wide bf16 row runs best with 8 warps,
    4096 fp32 with 16 and 8192 fp32 with 32 (benchmarks/results/sweep-20261130T131458Z.json)."""
    want = max(1, rows * n_cols * element_size // bytes_per_warp)
    return max(2, min(32, 1 << (want.bit_length() - 1)))


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


def layer_norm_rows(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    if weight.numel() != n_cols or bias.numel() != n_cols:
        raise ValueError(f"layer norm over {n_cols} features got weight {tuple(weight.shape)}, "
                         f"bias {tuple(bias.shape)}")
    shape = x.shape
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows = x2.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    w, b = weight.contiguous(), bias.contiguous()
    t = TUNABLES
    if n_cols <= t["MAX_FUSED_N"]:
        block = triton.next_power_of_2(n_cols)
        rows = t["ROWS_FUSED"] or max(1, min(2048 // block, triton.next_power_of_2(n_rows)))  # narrow rows
        warps = t["num_warps_fused"] or _fused_warps(rows, n_cols, x2.element_size(), t["ROW_BYTES_PER_WARP"])
        _layernorm_fused_kernel[(triton.cdiv(n_rows, rows),)](
            x2, w, b, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
            ROWS=rows, BLOCK=block, num_warps=warps,
        )
    else:
        grid = (min(n_rows, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        _layernorm_looped_kernel[grid](
            x2, w, b, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
            BLOCK=t["BLOCK_LOOP"], num_warps=t["num_warps_loop"],
        )
    return y.reshape(shape)


class ModelNew(nn.Module):
    """Same parameters (created in the same order) as the family's specs: weight, bias of shape (N,)."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(normalized_shape))
        self.bias = nn.Parameter(torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x):
        return layer_norm_rows(x, self.weight, self.bias, self.eps)
