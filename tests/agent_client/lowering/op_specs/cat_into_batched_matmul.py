import torch
import torch.nn as nn


class Model(nn.Module):
    """A cat along what becomes a batched matmul's batch dim (a class token before sequence-first attention):
    which input a batch reads depends on the program id alone."""

    def __init__(self, d):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 3, d))
        self.w = nn.Parameter(torch.randn(4, d, 8))

    def forward(self, x):
        seq = torch.cat((self.cls_token, x), dim=0)  # (1 + n, 3, d)
        return torch.bmm(seq, self.w)


def get_inputs():
    return [torch.randn(3, 3, 16)]


def get_init_inputs():
    return [16]
