import torch
import torch.nn as nn


class Model(nn.Module):
    """
    RMS normalisation of a half-precision input, computed in float32 and cast back inside forward.
    """

    def __init__(self, num_features, eps=1e-6):
        super(Model, self).__init__()
        self.weight = nn.Parameter(torch.ones(num_features))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x * rms * self.weight).to(dtype)


batch_size = 4
num_features = 64


def get_inputs():
    return [torch.randn(batch_size, num_features).half()]


def get_init_inputs():
    return [num_features]
