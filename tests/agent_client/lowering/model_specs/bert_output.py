import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, hidden, inter, eps):
        super().__init__()
        self.dense = nn.Linear(inter, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)
def get_inputs():
    return [torch.randn(2, 8, 64), torch.randn(2, 8, 32)]
def get_init_inputs():
    return [32, 64, 1e-12]
