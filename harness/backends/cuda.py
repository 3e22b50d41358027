"""The `cuda` backend: C++/CUDA source compiled with torch.utils.cpp_extension.load_inline."""

from __future__ import annotations

import shutil

from harness.backends import register
from harness.backends.base import Backend


def _available(device: str) -> str | None:
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available() or torch.version.hip:
        return "cuda backend needs an NVIDIA GPU (device cuda:N with a CUDA build of torch)"
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME is None and shutil.which("nvcc") is None:
        return "cuda backend needs nvcc (CUDA_HOME unset and nvcc not on PATH)"
    return None


register(Backend(
    name="cuda",
    description="CUDA C++ through torch.utils.cpp_extension.load_inline",
    required=((r"load_inline", "cuda backend: the candidate must build its kernel with load_inline"),),
    available=_available,
))
