import torch
import torch.nn as nn

batch_size = 8
dim = 32
depth = 3


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))


class Model(nn.Module):
    def __init__(self, d, depth):
        super(Model, self).__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, depth]
