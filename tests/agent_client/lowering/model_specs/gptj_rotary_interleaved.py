import torch
import torch.nn as nn


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_pos_emb(tensor, sin, cos):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class Model(nn.Module):
    """GPT-J's rotary embedding: sin/cos tables in a buffer indexed by position ids, even and odd
    channels rotated through strided slices, stack and flatten, on part of the head dim."""

    def __init__(self, rotary_dim, max_pos):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, rotary_dim, 2, dtype=torch.int64) / rotary_dim))
        sinusoid = torch.einsum("i , j -> i j", torch.arange(max_pos, dtype=torch.int64).float(), inv_freq).float()
        self.register_buffer("embed_positions", torch.cat((torch.sin(sinusoid), torch.cos(sinusoid)), dim=1))
        self.rotary_dim = rotary_dim

    def forward(self, q, position_ids):
        sincos = self.embed_positions[position_ids]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        q_rot, q_pass = q[:, :, :, : self.rotary_dim], q[:, :, :, self.rotary_dim:]
        q_rot = apply_rotary_pos_emb(q_rot, sin, cos)
        return torch.cat([q_rot, q_pass], dim=-1)


def get_inputs():
    return [torch.randn(2, 12, 4, 32), torch.arange(12).unsqueeze(0).expand(2, -1)]


def get_init_inputs():
    return [16, 64]
