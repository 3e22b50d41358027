import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Scores between queries and keys, a causal mask built in forward, then softmax.
    """

    def __init__(self, scale):
        super(Model, self).__init__()
        self.scale = scale

    def forward(self, q, k):
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        seq_len = scores.size(-1)
        mask = torch.triu(torch.ones(seq_len, seq_len, device=q.device, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


batch_size = 2
seq_len = 8
head_dim = 16
scale = head_dim ** -0.5


def get_inputs():
    return [torch.randn(batch_size, seq_len, head_dim), torch.randn(batch_size, seq_len, head_dim)]


def get_init_inputs():
    return [scale]
