import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transposed convolutions of each form: stride 1 (one phase), stride 2 and 3 (output phases), output
    padding, dilation sharing a factor with the stride (phases no tap reaches), groups, 1-D to 3-D."""

    def __init__(self):
        super(Model, self).__init__()
        self.t1 = nn.ConvTranspose1d(16, 24, 3, stride=2, padding=1, dilation=2)
        self.t2 = nn.ConvTranspose2d(16, 20, 4, stride=2, padding=1)
        self.t3 = nn.ConvTranspose2d(16, 32, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.t4 = nn.ConvTranspose2d(16, 16, (3, 5), stride=(3, 2), padding=(1, 2), output_padding=(2, 1))
        self.t5 = nn.ConvTranspose2d(16, 32, 3)
        self.t6 = nn.ConvTranspose3d(8, 16, 3, stride=2, padding=1, output_padding=1)

    def forward(self, a, b, c):
        return self.t1(a), self.t2(b), self.t3(b), self.t4(b), self.t5(b), self.t6(c)


def get_inputs():
    return [torch.randn(2, 16, 13), torch.randn(2, 16, 5, 7), torch.randn(1, 8, 3, 4, 5)]


def get_init_inputs():
    return []
