import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A cumulative sum along one dimension that counts only the elements where a boolean mask is set.

    Parameters:
        dim (int): The dimension along which to sum.
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x, mask):
        """
        Args:
            x (torch.Tensor): (batch_size, *input_shape).
            mask (torch.Tensor): bool, the same shape as x.
        """
        return torch.cumsum(x * mask, dim=self.dim)


batch_size = 4
input_shape = (40,)
dim = 1


def get_inputs():
    x = torch.randn(batch_size, *input_shape)
    mask = torch.randint(0, 2, x.shape).bool()
    return [x, mask]


def get_init_inputs():
    return [dim]
