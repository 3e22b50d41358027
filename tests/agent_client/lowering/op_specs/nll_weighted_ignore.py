import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, n=10):
        super(Model, self).__init__()
        self.loss = nn.NLLLoss(weight=torch.linspace(0.5, 1.5, n), ignore_index=3)

    def forward(self, logits, t):
        return self.loss(F.log_softmax(logits, dim=1), t)


def get_inputs():
    return [torch.randn(64, 10), torch.randint(0, 10, (64,))]


def get_init_inputs():
    return [10]
