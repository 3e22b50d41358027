import torch
import torch.nn as nn


class Model(nn.Module):
    """EmbeddingBag by maxima: by offsets with an empty bag, with padding (a bag of padding only gives 0),
    and by rows."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(30, 8, mode="max")
        self.bag_pad = nn.EmbeddingBag(30, 8, mode="max", padding_idx=0)

    def forward(self, ids, offsets, ids2d):
        return self.bag(ids, offsets), self.bag_pad(ids, offsets), self.bag(ids2d)


def get_inputs():
    ids = torch.randint(0, 30, (20,))
    ids[5:8] = 0  # a bag of padding only
    return [ids, torch.tensor([0, 5, 8, 8, 14]), torch.randint(0, 30, (4, 6))]


def get_init_inputs():
    return []
