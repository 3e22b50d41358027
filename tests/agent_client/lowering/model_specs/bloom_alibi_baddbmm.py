import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, heads, head_dim):
        super().__init__()
        self.heads = heads
        self.inv_norm_factor = 1.0 / math.sqrt(head_dim)
        self.beta = 1.0

    def forward(self, query, key, alibi):
        scores = alibi.baddbmm(batch1=query, batch2=key, beta=self.beta, alpha=self.inv_norm_factor)
        return torch.softmax(scores, dim=-1, dtype=torch.float32)


def get_inputs():
    bh, q, d = 8, 32, 16
    return [torch.randn(bh, q, d), torch.randn(bh, d, q), torch.randn(bh, 1, q)]


def get_init_inputs():
    return [8, 16]
