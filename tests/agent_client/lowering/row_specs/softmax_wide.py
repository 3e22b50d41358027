import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over rows; the tests lower it with a small split threshold, so each row is cut in chunks."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 5
dim = 1000  # not a multiple of the chunks the tests choose: a partial last chunk


def get_inputs():
    return [torch.rand(batch_size, dim) * 20.0]


def get_init_inputs():
    return []
