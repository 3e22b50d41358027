import torch
import torch.nn as nn


class Model(nn.Module):
    """scatter_reduce in every mode it lowers: sum and mean through scatter_add, amax and amin through atomic
    maxima and minima, with and without the tensor's own values; an integer amax."""

    def forward(self, x, index, src, counts):
        return (x.scatter_reduce(1, index, src, "sum", include_self=False),
                x.scatter_reduce(1, index, src, "mean"),
                x.scatter_reduce(1, index, src, "amax"),
                x.scatter_reduce(1, index, src, "amin", include_self=False),
                torch.zeros(4, 6, dtype=torch.long).scatter_reduce(1, index, counts, "amax", include_self=False))


def get_inputs():
    return [torch.randn(4, 6), torch.randint(0, 5, (4, 12)), torch.randn(4, 12), torch.randint(-50, 50, (4, 12))]


def get_init_inputs():
    return []
