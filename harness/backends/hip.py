"""The `hip` backend: HIP C++ through load_inline on a ROCm build of torch (torch.version.hip)."""

from __future__ import annotations

from harness.backends import register
from harness.backends.base import Backend


def _available(device: str) -> str | None:
    import torch

    if not getattr(torch.version, "hip", None):
        return "hip backend needs a ROCm build of torch (torch.version.hip is unset)"
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return "hip backend needs an AMD GPU (device cuda:N on ROCm)"
    return None


register(Backend(
    name="hip",
    description="HIP C++ through torch.utils.cpp_extension.load_inline on ROCm",
    required=((r"load_inline", "hip backend: the candidate must build its kernel with load_inline"),),
    available=_available,
))
