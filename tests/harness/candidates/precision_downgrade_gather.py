"""Adversarial: gathers the rows for specs/gather_loose.py but keeps only bf16 precision of the table; inside
the loose tolerance, rejected as a precision downgrade (the reference with bf16-rounded parameters errs alike)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _to_bf16_precision(v):
    return (v.to(tl.int32, bitcast=True) & -65536).to(tl.float32, bitcast=True)


@triton.jit
def _gather_kernel(table_ptr, idx_ptr, out_ptr, dim, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    row = tl.load(idx_ptr + i)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + i * dim + cols, _to_bf16_precision(tl.load(table_ptr + row * dim + cols)))


class ModelNew(nn.Module):
    def __init__(self, num_rows: int, dim: int):
        super().__init__()
        self.table = nn.Parameter(torch.rand(num_rows, dim) + 1.0)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        dim = self.table.shape[1]
        out = torch.empty(indices.shape[0], dim, dtype=self.table.dtype, device=self.table.device)
        _gather_kernel[(indices.shape[0],)](self.table, indices, out, dim, BLOCK=dim)
        return out
