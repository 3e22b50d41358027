"""Adversarial, obfuscated: finds the reference class among `nn.Module.__subclasses__()` (no import of the
spec, no `sys.modules`) and runs it. Static: introspection; at run time: the reference's PyTorch ops.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _unused_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def _reference_class():
    for cls in nn.Module.__subclasses__():
        if cls.__name__ == "Model" and cls.__module__.startswith("kkb_spec"):
            return cls
    raise LookupError("no reference class")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ref = _reference_class()()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ref(x)
