"""The `cute` backend: kernels written in the CuTe DSL (nvidia-cutlass-dsl: import cutlass.cute)."""

from __future__ import annotations

import importlib.util

from harness.backends import register
from harness.backends.base import Backend


def _available(device: str) -> str | None:
    if importlib.util.find_spec("cutlass") is None:
        return "cute backend needs the CuTe DSL (pip install nvidia-cutlass-dsl)"
    if not device.startswith("cuda"):
        return "cute backend needs an NVIDIA GPU"
    return None


register(Backend(
    name="cute",
    description="CuTe DSL kernels (cutlass.cute)",
    required=((r"cutlass", "cute backend: the candidate must use cutlass.cute"),),
    available=_available,
))
