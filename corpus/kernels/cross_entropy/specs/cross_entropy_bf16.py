"""Cross-entropy (mean over the batch) with bf16 logits: 16384 x 32000 bf16 (1000 MiB read), integer
targets; the log-sum-exp runs in fp32 and only the scalar result is rounded to bf16.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 16384, "classes": 32000}, "tiny": {"batch": 4, "classes": 32000}}
BATCH, CLASSES = SHAPES[SIZE]["batch"], SHAPES[SIZE]["classes"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "odd_classes", "kwargs": {"batch": 6, "classes": 1001}},
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
