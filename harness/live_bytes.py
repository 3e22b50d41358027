"""Bytes of tensor storage alive, and their peak, counted op by op: the same accounting on the meta device
(where nothing is allocated: the footprint estimate's reference workspace) and on a real one (the CPU,
where torch keeps no allocator statistics: tests measure an evaluation's peak with it).

Usage:
    with LiveBytes("meta") as live:     # count the storages of this device type only ("meta", "cpu", "cuda")
        out = model(*inputs)
    live.peak_bytes     # most bytes alive at once among the storages made inside the block

Every aten op's outputs are looked at; a storage seen for the first time (not one of the op's arguments', so
views and in-place ops add nothing) adds its bytes until it is freed. Storages made before the block are
not counted. Temporaries an op makes inside its own kernel (a convolution's workspace) are not seen.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def _storage(t: torch.Tensor):
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError):  # tensors without a storage (subclasses, nested)
        return None


class LiveBytes(TorchDispatchMode):
    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type
        self.live_bytes = 0
        self.peak_bytes = 0
        self._seen: dict[int, int] = {}

    def reset_peak(self) -> None:
        self.peak_bytes = self.live_bytes

    def _freed(self, key: int) -> None:
        self.live_bytes -= self._seen.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        known = {s._cdata for a in tree_leaves((args, kwargs or {})) if isinstance(a, torch.Tensor)
                 for s in [_storage(a)] if s is not None}
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or t.device.type != self.device_type:
                continue
            storage = _storage(t)
            if storage is None or storage._cdata in known or storage._cdata in self._seen:
                continue
            nbytes = storage.nbytes()
            self._seen[storage._cdata] = nbytes
            self.live_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
            weakref.finalize(storage, self._freed, storage._cdata)
        return out
