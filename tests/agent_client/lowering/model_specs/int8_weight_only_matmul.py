import torch
import torch.nn as nn


class Model(nn.Module):
    """Dynamic int8 quantisation of activations against an int8 weight buffer with per-row scales."""

    def __init__(self, k, n):
        super().__init__()
        self.register_buffer("w_q", torch.randint(-127, 128, (n, k), dtype=torch.int8))
        self.register_buffer("w_scale", torch.rand(n) * 0.01)

    def forward(self, x):
        x_scale = x.abs().amax(dim=-1, keepdim=True) / 127.0
        x_q = torch.clamp(torch.round(x / x_scale), -127, 127).to(torch.int8)
        acc = x_q.float() @ self.w_q.float().t()
        return acc * x_scale * self.w_scale


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return [64, 32]
