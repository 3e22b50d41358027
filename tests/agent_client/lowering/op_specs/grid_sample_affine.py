import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A spatial transformer: an affine grid from a learned matrix, bilinear sampling with zero padding, and
    nearest sampling with border padding."""

    def __init__(self):
        super().__init__()
        self.theta = nn.Parameter(torch.tensor([[0.9, 0.2, 0.05], [-0.15, 1.1, -0.1]]))

    def forward(self, x):
        grid = F.affine_grid(self.theta.expand(x.shape[0], 2, 3), [x.shape[0], x.shape[1], 7, 6],
                             align_corners=False)
        smooth = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        near = F.grid_sample(x, grid * 1.3, mode="nearest", padding_mode="border", align_corners=True)
        return smooth, near


def get_inputs():
    return [torch.randn(2, 3, 8, 9)]


def get_init_inputs():
    return []
