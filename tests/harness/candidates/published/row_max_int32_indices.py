"""Wrong Triton candidate for tests/published_specs/9_RowMax_TupleOutput.py: right values, but the indices
come back as int32 where the reference gives int64 (dtypes must match exactly)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _row_max_kernel(x_ptr, values_ptr, indices_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + offs, mask=offs < n_cols, other=-float("inf"))
    value, index = tl.max(x, axis=0, return_indices=True)
    tl.store(values_ptr + row, value)
    tl.store(indices_ptr + row, index)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        values = torch.empty(rows, dtype=x.dtype, device=x.device)
        indices = torch.empty(rows, dtype=torch.int32, device=x.device)
        _row_max_kernel[(rows,)](x, values, indices, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return values, indices
