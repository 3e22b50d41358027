import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Model(nn.Module):
    """A diffusion U-Net's residual block: integer timesteps embedded by a sinusoid and an MLP, GroupNorm and
    SiLU before each convolution, the embedding added per channel."""

    def __init__(self, ch, temb_ch):
        super().__init__()
        self.temb_ch = temb_ch
        self.temb = nn.Sequential(nn.Linear(temb_ch, 2 * temb_ch), nn.SiLU(), nn.Linear(2 * temb_ch, temb_ch))
        self.norm1 = nn.GroupNorm(4, ch, eps=1e-6)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.temb_proj = nn.Linear(temb_ch, ch)
        self.norm2 = nn.GroupNorm(4, ch, eps=1e-6)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.temb_ch))
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


def get_inputs():
    return [torch.randn(2, 8, 8, 8), torch.randint(0, 1000, (2,))]


def get_init_inputs():
    return [8, 16]
