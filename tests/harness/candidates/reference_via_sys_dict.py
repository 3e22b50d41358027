"""Adversarial, obfuscated: reaches the spec's own module through `sys.__dict__` (no `sys.modules` in the
source) and runs the reference Model. Static: introspection; at run time: the reference's PyTorch ops.
"""

import sys

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _unused_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def _reference_class():
    modules = sys.__dict__["mod" + "ules"]
    for name in list(modules):
        module = modules[name]
        if name.startswith("kkb_spec") and hasattr(module, "Model"):
            return module.Model
    raise LookupError("no spec module")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ref = _reference_class()()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ref(x)
