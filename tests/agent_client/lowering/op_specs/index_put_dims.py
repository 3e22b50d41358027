import torch
import torch.nn as nn


class Model(nn.Module):
    """Writes through integer indices that do not lead the dims: adjacent middle dims, and dims apart."""

    def forward(self, x, rows, cols, v):
        a = x.clone()
        a[:, rows, cols] = v  # adjacent dims 1 and 2: the index shape stands where they were
        b = torch.zeros_like(x)
        b.index_put_((rows[:3], torch.tensor([0, 2, 0]), cols[:3]), v[0, :3], accumulate=True)
        c = x.clone()
        c[rows[:2], :, cols[:2]] = 1.5  # dims 0 and 2 apart: the index shape comes first
        return a, b, c


def get_inputs():
    return [torch.randn(4, 6, 5), torch.tensor([0, 3, 3, 1]), torch.tensor([4, 0, 0, 2]), torch.randn(4, 4)]


def get_init_inputs():
    return []
