"""Adversarial: notices that it is being timed (the same input values again, as timing repeats clones of
one input set, where checks draw fresh inputs) and then computes only the first row. Caught by the guarded
call after timing, which also reuses the timed inputs.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)


def _softmax(x, y, rows):
    _softmax_kernel[(rows,)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


SEEN = []


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        values = x.tolist()  # read without a compute op
        timed = values in SEEN
        SEEN.append(values)
        y = torch.empty_like(x)
        return _softmax(x, y, 1 if timed else x.shape[0])
