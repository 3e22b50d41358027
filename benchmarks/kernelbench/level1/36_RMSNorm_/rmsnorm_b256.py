"""RMS norm over dim 1 of (batch, features, *spatial): each program takes 256 spatial positions of one batch
element and walks the features twice (sum of squares, then the scaled write)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rmsnorm_kernel(x_ptr, y_ptr, n_features, n_spatial, eps, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * n_features * n_spatial
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_spatial
    acc = tl.zeros((BLOCK,), tl.float32)
    for f in range(n_features):
        x = tl.load(x_ptr + base + f * n_spatial + offs, mask=mask, other=0.0)
        acc += x * x
    rms = tl.sqrt(acc / n_features + eps)
    for f in range(n_features):
        x = tl.load(x_ptr + base + f * n_spatial + offs, mask=mask, other=0.0)
        tl.store(y_ptr + base + f * n_spatial + offs, x / rms, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, features = x.shape[0], x.shape[1]
        spatial = x.numel() // (batch * features)
        _rmsnorm_kernel[(batch, triton.cdiv(spatial, 256))](x, y, features, spatial, self.eps, BLOCK=256)
        return y
