import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, ids, x):
        bucket = torch.div(ids - 50, 4, rounding_mode="floor") % 7  # negative ids too: Python's floor and modulo
        counts = (bucket[..., None] == torch.arange(7, device=ids.device)).sum(dim=(0, 1))
        return counts, x[torch.arange(x.shape[0], device=x.device), bucket[:, 0]]


def get_inputs():
    return [torch.randint(0, 100, (6, 5)), torch.randn(6, 7)]


def get_init_inputs():
    return []
