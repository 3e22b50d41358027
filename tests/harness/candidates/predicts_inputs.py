"""Canary: right whenever the harness's inputs are unpredictable. It remembers every input it is given (the
module stays imported in the worker from one evaluation to the next) and returns zeros for an input that a
different model instance saw before: with inputs from the secret per-run seed that never happens, with a
seed an earlier run shared (a predictable seed) the second evaluation is wrong."""

import torch
import triton
import triton.language as tl
from torch import nn

SEEN: dict = {}  # the input's values -> the instance that first saw them
INSTANCES = [0]


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        INSTANCES[0] += 1
        self.instance = INSTANCES[0]

    def forward(self, x):
        x = x.contiguous()
        key = str(x.tolist())
        first = SEEN.setdefault(key, self.instance)
        y = torch.zeros_like(x)
        if first == self.instance:
            _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
