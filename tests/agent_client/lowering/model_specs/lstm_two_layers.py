import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features=8, hidden=16, layers=2):
        super(Model, self).__init__()
        self.rnn = nn.LSTM(features, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, 4)

    def forward(self, x, h0, c0):
        out, (hn, cn) = self.rnn(x, (h0, c0))
        return self.head(out[:, -1, :]), hn


def get_inputs():
    return [torch.randn(3, 6, 8), torch.randn(2, 3, 16), torch.randn(2, 3, 16)]


def get_init_inputs():
    return []
