"""What a backend declares: availability, the environment of its worker, what a candidate may call.

Usage: from harness.backends.base import Backend, KERNEL_ALLOWED_OPS
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# aten ops a kernel candidate (triton, cuda, cute, hip) may run through PyTorch during its forward:
# allocation, metadata/views, copies and fills. Anything else (aten.mm, aten._softmax, aten.add...) means
# the output was computed by PyTorch, not by the candidate's kernel -> rejected. Names are overload packets
# ("aten.empty", not "aten.empty.memory_format").
KERNEL_ALLOWED_OPS: frozenset[str] = frozenset({
    # allocation
    "aten.empty", "aten.empty_like", "aten.empty_strided", "aten.new_empty", "aten.new_empty_strided",
    "aten.zeros", "aten.zeros_like", "aten.new_zeros", "aten.full", "aten.full_like", "aten.new_full",
    "aten.ones", "aten.ones_like", "aten.new_ones", "aten.arange", "aten.scalar_tensor",
    # initialisation and copies (no arithmetic)
    "aten.zero_", "aten.fill_", "aten.copy_", "aten.clone", "aten._to_copy", "aten.lift_fresh",
    "aten.set_", "aten.resize_", "aten.detach", "aten.alias", "aten._local_scalar_dense",
    # views and metadata
    "aten.view", "aten._unsafe_view", "aten.reshape", "aten.as_strided", "aten.expand", "aten.squeeze",
    "aten.unsqueeze", "aten.t", "aten.transpose", "aten.permute", "aten.slice", "aten.select",
    "aten.split", "aten.split_with_sizes", "aten.unbind", "aten.narrow", "aten.view_as_real",
    "aten.view_as_complex", "aten.is_contiguous", "aten.sym_size", "aten.sym_stride", "aten.sym_numel",
    "aten.record_stream",
})


def _always(_device: str) -> str | None:
    return None


def _no_env(_device: str) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Backend:
    name: str
    description: str
    # aten ops (overload packet names) allowed inside the candidate's forward; None = anything
    allowed_ops: frozenset[str] | None = KERNEL_ALLOWED_OPS
    # (regex over the source, reason when it does not match): what a candidate of this backend must contain
    required: tuple[tuple[str, str], ...] = ()
    # modules a candidate of this backend may not import (besides the harness-wide list)
    forbidden_imports: tuple[str, ...] = ("numpy",)
    # None when usable on `device`, else why not
    available: Callable[[str], str | None] = field(default=_always, compare=False)
    # environment variables the worker process needs before torch/triton are imported
    env: Callable[[str], dict[str, str]] = field(default=_no_env, compare=False)
    # the compile step: after the candidate module is imported, reasons it is not a valid candidate
    check_module: Callable[[object], list[str]] | None = field(default=None, compare=False)
