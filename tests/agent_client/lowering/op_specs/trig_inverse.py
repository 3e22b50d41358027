import torch
import torch.nn as nn


class Model(nn.Module):
    """Inverse and hyperbolic trigonometry, with zeros on the axes of atan2."""

    def forward(self, x, y):
        t = torch.tanh(x) * 0.99
        return (torch.atan(x * 3) + torch.atan2(y, x) + torch.asin(t) + torch.acos(t) + torch.sinh(x)
                + torch.cosh(x) + torch.asinh(x * 5) + torch.acosh(x.abs() + 1.5) + torch.atanh(t)
                + torch.hypot(x, y))


def get_inputs():
    x, y = torch.randn(8, 64), torch.randn(8, 64)
    x[0, :4] = 0.0
    y[0, :2] = 0.0
    return [x, y]


def get_init_inputs():
    return []
