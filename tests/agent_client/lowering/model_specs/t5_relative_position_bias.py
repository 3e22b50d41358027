import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """T5's relative position buckets: integer positions, a log over distances cast back to long, an
    embedding of buckets added to the scores before a softmax."""

    def __init__(self, num_buckets=32, max_distance=128, n_heads=4):
        super().__init__()
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)).to(torch.long)
        relative_position_if_large = torch.min(relative_position_if_large,
                                               torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def forward(self, scores):
        q_len, k_len = scores.shape[-2], scores.shape[-1]
        context_position = torch.arange(q_len, dtype=torch.long, device=scores.device)[:, None]
        memory_position = torch.arange(k_len, dtype=torch.long, device=scores.device)[None, :]
        buckets = self._relative_position_bucket(memory_position - context_position, num_buckets=self.num_buckets,
                                                 max_distance=self.max_distance)
        bias = self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)
        return torch.softmax(scores + bias, dim=-1)


def get_inputs():
    return [torch.randn(2, 4, 40, 40)]


def get_init_inputs():
    return []
