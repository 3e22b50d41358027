import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def get_inputs():
    return [torch.randn(2, 12, 32)]


def get_init_inputs():
    return []
