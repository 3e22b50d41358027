import math
import torch
import torch.nn as nn
class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))
class Model(nn.Module):
    def __init__(self, n_embd):
        super(Model, self).__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.act = NewGELUActivation()
    def forward(self, hidden_states):
        return self.c_proj(self.act(self.c_fc(hidden_states)))
def get_inputs():
    return [torch.randn(2, 16, 32)]
def get_init_inputs():
    return [32]
