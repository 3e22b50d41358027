import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, top_k=20, temperature=0.7):
        super().__init__()
        self.top_k = top_k
        self.temperature = temperature

    def forward(self, logits):
        logits = logits / self.temperature
        indices_to_remove = logits < torch.topk(logits, self.top_k)[0][..., -1, None]
        logits = logits.masked_fill(indices_to_remove, float("-inf"))
        return torch.softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(8, 2000)]


def get_init_inputs():
    return []
