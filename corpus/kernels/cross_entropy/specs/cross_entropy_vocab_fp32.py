"""Cross-entropy (mean over the batch) over a vocabulary-sized row: logits 4096 x 50257 fp32
(785 MiB read), integer targets. The output is one scalar: the work is one read of the logits.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 4096, "classes": 50257}, "tiny": {"batch": 3, "classes": 50257}}
BATCH, CLASSES = SHAPES[SIZE]["batch"], SHAPES[SIZE]["classes"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "few_classes", "kwargs": {"batch": 37, "classes": 10}},  # one masked block per row
    {"name": "odd_classes", "kwargs": {"batch": 5, "classes": 5003}},  # two loop steps, ragged tail
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets)


def get_inputs(batch=BATCH, classes=CLASSES):
    return [torch.randn(batch, classes, dtype=DTYPE, device=DEVICE) * 3.0, torch.randint(0, classes, (batch,), device=DEVICE)]


def get_init_inputs():
    return []
