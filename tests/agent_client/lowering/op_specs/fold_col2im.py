import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Fold (col2im): overlapping patches summed back into an image (a scatter on the last two dims)."""

    def __init__(self):
        super(Model, self).__init__()
        self.fold = nn.Fold(output_size=(9, 8), kernel_size=(3, 2), padding=1, stride=(2, 1))

    def forward(self, cols):
        return self.fold(cols)


def get_inputs():
    return [torch.randn(2, 3 * 3 * 2, 5 * 9)]


def get_init_inputs():
    return []
