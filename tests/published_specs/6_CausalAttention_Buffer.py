import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Single-head causal self-attention; the causal mask is a registered buffer, as in minGPT.
    """

    def __init__(self, n_embd, max_seqlen):
        super(Model, self).__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen))
                             .view(1, max_seqlen, max_seqlen))
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        return self.c_proj(y)


batch_size = 2
max_seqlen = 16
seq_len = 12
n_embd = 16


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, max_seqlen]
