import torch
import torch.nn as nn


class Model(nn.Module):
    """Bitwise and, or, xor, not and shifts on signed integers (their bits, not their truth), and on bools."""

    def forward(self, x):
        q = (x * 100).long()
        return (q >> 2) + (q << 1) + (q & 7) + (q | 3) + (q ^ 5) + (~q), (x > 0) & (x < 1), ~(x > 0), q.to(torch.int32) & 0xF0


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
