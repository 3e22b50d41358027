import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.h = heads
        self.d = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.h, self.d)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        extended = attention_mask[:, None, None, :].to(dtype=hidden_states.dtype)
        extended = (1.0 - extended) * torch.finfo(hidden_states.dtype).min
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        scores = scores + extended
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.h * self.d,))


def get_inputs():
    mask = torch.ones(2, 32, dtype=torch.long)
    mask[1, 20:] = 0
    return [torch.randn(2, 32, 64), mask]


def get_init_inputs():
    return [64, 4]
