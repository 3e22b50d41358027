"""The `triton` backend: a candidate launches @triton.jit kernels; on CPU through TRITON_INTERPRET=1."""

from __future__ import annotations

import importlib.util

from harness.backends import register
from harness.backends.base import Backend


def _available(device: str) -> str | None:
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    return None


def _env(device: str) -> dict[str, str]:
    # The interpreter must be switched on before triton is first imported in the worker.
    return {"TRITON_INTERPRET": "1"} if device.startswith("cpu") else {}


def _check_module(module: object) -> list[str]:
    # @triton.jit gives a JITFunction (an InterpretedFunction under TRITON_INTERPRET=1); autotune and
    # heuristics wrap it. Matched by class name to stay independent of triton's module layout.
    kinds = {"JITFunction", "InterpretedFunction", "Autotuner", "Heuristics"}
    if not any(k.__name__ in kinds for v in vars(module).values() for k in type(v).__mro__):
        return ["triton backend: the candidate defines no @triton.jit kernel at module level"]
    return []


register(Backend(
    name="triton",
    description="Triton kernels (@triton.jit); CPU runs use the Triton interpreter",
    required=((r"@triton\.(jit|autotune|heuristics)", "triton backend: no @triton.jit kernel in the source"),),
    available=_available,
    env=_env,
    check_module=_check_module,
))
