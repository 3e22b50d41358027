import torch
import torch.nn as nn


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class Model(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.split_size = n_embd

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        return query, key, value


def get_inputs():
    return [torch.randn(2, 32, 128)]


def get_init_inputs():
    return [128]
