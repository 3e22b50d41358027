"""Honest Triton gather for specs/gather_loose.py: copies the indexed rows exactly (must pass)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _gather_kernel(table_ptr, idx_ptr, out_ptr, dim, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    row = tl.load(idx_ptr + i)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + i * dim + cols, tl.load(table_ptr + row * dim + cols))


class ModelNew(nn.Module):
    def __init__(self, num_rows: int, dim: int):
        super().__init__()
        self.table = nn.Parameter(torch.rand(num_rows, dim) + 1.0)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        dim = self.table.shape[1]
        out = torch.empty(indices.shape[0], dim, dtype=self.table.dtype, device=self.table.device)
        _gather_kernel[(indices.shape[0],)](self.table, indices, out, dim, BLOCK=dim)
        return out
