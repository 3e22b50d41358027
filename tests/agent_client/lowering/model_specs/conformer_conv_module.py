import torch
import torch.nn as nn


class Model(nn.Module):
    """A Conformer convolution module: LayerNorm, pointwise Conv1d, GLU, depthwise Conv1d, BatchNorm1d in
    training mode, SiLU, pointwise Conv1d, a residual."""

    def __init__(self, d, k=7):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.glu = nn.GLU(dim=1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.act = nn.SiLU()
        self.pw2 = nn.Conv1d(d, d, 1)

    def forward(self, x):
        y = self.ln(x).transpose(1, 2)
        y = self.pw2(self.act(self.bn(self.dw(self.glu(self.pw1(y))))))
        return x + y.transpose(1, 2)


def get_inputs():
    return [torch.randn(2, 20, 16)]


def get_init_inputs():
    return [16]
