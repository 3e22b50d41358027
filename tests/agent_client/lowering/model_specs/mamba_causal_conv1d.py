import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_inner, d_conv):
        super().__init__()
        self.conv1d = nn.Conv1d(d_inner, d_inner, kernel_size=d_conv, groups=d_inner, padding=d_conv - 1, bias=True)

    def forward(self, x):
        seqlen = x.shape[-1]
        x = self.conv1d(x)[..., :seqlen]
        return F.silu(x)


def get_inputs():
    return [torch.randn(2, 64, 128)]


def get_init_inputs():
    return [64, 4]
