"""Adversarial: right for its first calls on the timed shape, then computes only the first row (a
cheap kernel once it is being timed). Caught by the guarded call after timing.

With the tests' settings (2 trials) the check makes 2 calls on the default shape; timing makes more.
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


CALLS = {}
HONEST_CALLS = 3


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        key = tuple(x.shape)
        CALLS[key] = CALLS.get(key, 0) + 1
        y = torch.empty_like(x)
        rows = x.shape[0] if CALLS[key] <= HONEST_CALLS else 1
        return _softmax(x, y, rows)
