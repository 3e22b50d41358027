"""Mean squared error in one pass over both inputs: each program sums (a - b)^2 over a contiguous stretch in
fp32 lanes, a second one-program kernel adds the partial sums and divides by the count. Reads each input
once (8.6 GB at the published size), writes a scalar: about the card's bandwidth, not a copy's."""

import torch
import triton
import triton.language as tl
from torch import nn

PROGRAMS = 1024  # partial sums at most: a few per SM, a power of two for the second kernel's single block
BLOCK = 4096


@triton.jit
def _partial_kernel(a_ptr, b_ptr, part_ptr, n, per_program, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * per_program
    acc = tl.zeros((BLOCK,), tl.float32)
    for off in range(0, per_program, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        mask = idx < n
        d = tl.load(a_ptr + idx, mask=mask, other=0.0) - tl.load(b_ptr + idx, mask=mask, other=0.0)
        acc += d * d
    tl.store(part_ptr + tl.program_id(0), tl.sum(acc, axis=0))


@triton.jit
def _finish_kernel(part_ptr, out_ptr, n, count, PROGRAMS: tl.constexpr):
    offs = tl.arange(0, PROGRAMS)
    parts = tl.load(part_ptr + offs, mask=offs < count, other=0.0)
    tl.store(out_ptr, tl.sum(parts, axis=0) / n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        a, b = predictions.contiguous().view(-1), targets.contiguous().view(-1)
        n = a.numel()
        programs = min(PROGRAMS, triton.cdiv(n, BLOCK))
        per_program = triton.cdiv(triton.cdiv(n, programs), BLOCK) * BLOCK
        parts = torch.empty(programs, device=a.device, dtype=torch.float32)
        out = torch.empty((), device=a.device, dtype=torch.float32)
        _partial_kernel[(programs,)](a, b, parts, n, per_program, BLOCK=BLOCK)
        _finish_kernel[(1,)](parts, out, n, programs, PROGRAMS=PROGRAMS)
        return out
