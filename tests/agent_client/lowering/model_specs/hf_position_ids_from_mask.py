import torch
import torch.nn as nn


class Model(nn.Module):
    """Position ids from an integer attention mask (cumsum, then masked_fill_ in place), embedded and added."""

    def __init__(self, n_pos, d):
        super().__init__()
        self.wpe = nn.Embedding(n_pos, d)

    def forward(self, hidden, attention_mask):
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        return hidden + self.wpe(position_ids)


def get_inputs():
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[0, :4] = 0
    return [torch.randn(2, 12, 16), mask]


def get_init_inputs():
    return [32, 16]
