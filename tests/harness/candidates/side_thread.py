"""Adversarial: returns at once and computes on a Python thread (escapes the timer)."""

import threading
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


def _softmax(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)

        def work():
            time.sleep(5.0)  # still running when the harness looks, however busy the machine
            y.copy_(_softmax(x))

        threading.Thread(target=work, daemon=True).start()
        return y
