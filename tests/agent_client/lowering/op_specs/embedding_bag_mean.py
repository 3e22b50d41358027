import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.bag = nn.EmbeddingBag(100, 16, mode='mean')

    def forward(self, idx, offsets):
        return self.bag(idx, offsets)


def get_inputs():
    return [torch.randint(0, 100, (40,)), torch.tensor([0, 5, 12, 20, 33])]


def get_init_inputs():
    return []
