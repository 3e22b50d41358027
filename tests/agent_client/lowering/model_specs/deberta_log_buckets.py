import math
import torch
import torch.nn as nn


def make_log_bucket_position(relative_pos, bucket_size, max_position):
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where((relative_pos < mid) & (relative_pos > -mid),
                          torch.tensor(mid - 1).type_as(relative_pos), torch.abs(relative_pos))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    bucket_pos = torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)
    return bucket_pos


class Model(nn.Module):
    """DeBERTa's log-bucketed relative positions: sign, ceil of a log ratio, where, an embedding of the
    buckets added to the scores."""

    def __init__(self, n, heads):
        super().__init__()
        self.rel = nn.Embedding(2 * n, heads)
        self.n = n

    def forward(self, scores):
        q = torch.arange(scores.shape[-2], device=scores.device)
        k = torch.arange(scores.shape[-1], device=scores.device)
        rel = q[:, None] - k[None, :]
        b = make_log_bucket_position(rel, 16, 64).long() + self.n
        return scores + self.rel(b.clamp(0, 2 * self.n - 1)).permute(2, 0, 1)


def get_inputs():
    return [torch.randn(2, 4, 30, 30)]


def get_init_inputs():
    return [32, 4]
