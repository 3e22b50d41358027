"""Launches an honest Triton softmax, then hangs in forward (a time-limit test, not a cheat). Writes its
process id to $KKB_TEST_PIDFILE once it hangs, so a test can watch for it."""

import os
import pathlib
import time

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


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        note = os.environ.get("KKB_TEST_PIDFILE")
        if note:
            pathlib.Path(note).write_text(str(os.getpid()))
        while True:
            time.sleep(0.2)
        return y
