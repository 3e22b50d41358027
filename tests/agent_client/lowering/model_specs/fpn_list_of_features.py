import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A feature pyramid's top-down merge: a list of feature maps in, a tuple of merged maps out."""

    def __init__(self, channels):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(c, 8, 1) for c in channels])

    def forward(self, feats):
        out = self.lateral[-1](feats[-1])
        results = [out]
        for f, lat in zip(reversed(feats[:-1]), reversed(self.lateral[:-1])):
            out = lat(f) + F.interpolate(out, size=f.shape[-2:], mode="nearest")
            results.insert(0, out)
        return tuple(results)


def get_inputs():
    return [[torch.randn(2, 4, 16, 16), torch.randn(2, 6, 8, 8), torch.randn(2, 8, 4, 4)]]


def get_init_inputs():
    return [[4, 6, 8]]
