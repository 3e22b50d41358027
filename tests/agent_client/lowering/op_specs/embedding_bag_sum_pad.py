import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(50, 8, mode="sum", padding_idx=0, include_last_offset=True)

    def forward(self, idx, offsets, w):
        return self.bag(idx, offsets, per_sample_weights=w)


def get_inputs():
    return [torch.randint(0, 50, (30,)), torch.tensor([0, 4, 4, 11, 30]), torch.rand(30)]


def get_init_inputs():
    return []
