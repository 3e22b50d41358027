import torch
import torch.nn as nn


class Model(nn.Module):
    """lgamma and digamma over both signs with their poles and zeros, erfinv with +-1, gammaln."""

    def forward(self, x, p):
        return torch.lgamma(x), torch.digamma(x), torch.erfinv(p), torch.special.gammaln(x.abs() + 0.1)


def get_inputs():
    x = torch.randn(8, 64) * 6
    x[0, :8] = torch.tensor([0.0, -1.0, -2.0, 1.0, 2.0, 0.5, -0.5, 1e-4])
    p = torch.rand(8, 64) * 2 - 1
    p[0, :4] = torch.tensor([1.0, -1.0, 0.0, 0.9999])
    return [x, p]


def get_init_inputs():
    return []
