import torch
import torch.nn as nn


def swap_halves(t):
    # (a, b) -> (-b, a) over the last dim
    half = t.shape[-1] // 2
    return torch.cat((-t[..., half:], t[..., :half]), dim=-1)


def rotate(q, k, cos, sin, head_dim_axis=1):
    cos, sin = cos.unsqueeze(head_dim_axis), sin.unsqueeze(head_dim_axis)
    return q * cos + swap_halves(q) * sin, k * cos + swap_halves(k) * sin


class Model(nn.Module):
    def __init__(self, dim=64, theta=10000.0):
        super().__init__()
        exponents = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
        self.register_buffer("freqs", 1.0 / (theta ** exponents), persistent=False)

    def forward(self, q, k, positions):
        f = self.freqs[None, :, None].float().expand(positions.shape[0], -1, 1)
        p = positions[:, None, :].float()
        angles = (f @ p).transpose(1, 2)
        angles = torch.cat((angles, angles), dim=-1)
        return rotate(q, k, angles.cos().to(q.dtype), angles.sin().to(q.dtype))


def get_inputs():
    return [torch.randn(2, 4, 16, 64), torch.randn(2, 4, 16, 64), torch.arange(16).unsqueeze(0).expand(2, -1)]


def get_init_inputs():
    return []
