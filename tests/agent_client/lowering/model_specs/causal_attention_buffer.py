import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, width=64, heads=4, max_len=32):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.heads = heads
        self.width = width
        lower = torch.tril(torch.ones(max_len, max_len))
        self.register_buffer("causal", lower.view(1, 1, max_len, max_len))

    def forward(self, h):
        b, n, w = h.size()
        q, k, v = self.qkv(h).split(self.width, dim=2)
        q, k, v = (t.view(b, n, self.heads, w // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores = scores.masked_fill(self.causal[:, :, :n, :n] == 0, float("-inf"))
        mixed = F.softmax(scores, dim=-1) @ v
        return self.out(mixed.transpose(1, 2).contiguous().view(b, n, w))


def get_inputs():
    return [torch.randn(2, 32, 64)]


def get_init_inputs():
    return []
