import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Softplus(beta=2.0, threshold=10.0)
        self.b = nn.CELU(alpha=0.5)
        self.c = nn.Softsign()
        self.d = nn.Tanhshrink()
        self.e = nn.Threshold(0.1, -1.0)
        self.f = nn.Hardtanh(-2.0, 2.0)

    def forward(self, x):
        # the threshold (a step) reads the exact input: after the chain, a value within rounding of 0.1 lands on
        # either side of the step in the candidate and in the reference, one element in ~10^5 (seen in CI)
        return self.f(self.d(self.c(self.b(self.a(self.e(x))))) * 4)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
