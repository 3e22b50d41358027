import torch
import torch.nn as nn


class Model(nn.Module):
    """Results as model code returns them: a dict holding a tensor and a nested tuple, with a scalar argument
    and a dict of tensors among the arguments."""

    def __init__(self, d):
        super().__init__()
        self.head = nn.Linear(d, 3)

    def forward(self, x, extra, scale=2.0):
        logits = self.head(x) * scale
        return {"logits": logits, "aux": (logits.softmax(-1), extra["bias"] + extra["shift"])}


def get_inputs():
    return [torch.randn(4, 16), {"bias": torch.randn(3), "shift": torch.randn(4, 3)}, 0.5]


def get_init_inputs():
    return [16]
