"""Runtime anti-cheat checks around a candidate's forward. Each returns reasons (empty = clean).

Usage (in the worker):
    with OpRecorder() as rec: out = model(*inputs)
    reasons = forbidden_op_reasons(rec.ops, backend.allowed_ops) + mutation_reasons(saved, inputs) + ...
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import ClassVar

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map


class OpRecorder(TorchDispatchMode):
    """Records every aten op (overload packet name, e.g. "aten.mm") run while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def tensors_of(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_of(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_of(item)]
    return []


def clone_inputs(inputs: list) -> list:
    """The inputs with every tensor cloned, nested ones (a list of feature maps, a dict) too."""
    return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, list(inputs))


def forbidden_op_reasons(ops: Counter, allowed: frozenset[str] | None, backend: str) -> list[str]:
    if allowed is None:
        return []
    bad = sorted(op for op in ops if op not in allowed)
    if not bad:
        return []
    return [(f"{backend} backend: the forward ran PyTorch compute ops {bad}; the output must be computed by "
            f"the candidate's own kernels (allowed: allocation, views, copies; see harness/backends/base.py)")]


def snapshot_bytes(inputs: list) -> list[torch.Tensor | None]:
    """Bitwise copies of the inputs' leaves (tensors; None for other values), to detect mutation."""
    return [x.detach().clone() if isinstance(x, torch.Tensor) else None for x in tree_leaves(list(inputs))]


DIGEST_CHUNK = 1 << 23  # words hashed at once
DIGEST_WORKSPACE_BYTES_PER_WORD = 5 * 8  # int64 temporaries of a chunk at their peak (harness/memory.py)
_WORDS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


class Digest:
    """A keyed hash of tensors' bytes, computed on their device in chunks: what a bitwise copy would tell
    (changed or not) for a few hundred MB of temporaries instead of a copy of every tensor.

    Each word w_i (the widest integer the element size allows) adds w_i * (a*i + b) and (w_i ^ c) * (d*i + e)
    to two int64 sums that wrap; a, b, c, d, e come from a secret key and the multipliers are odd, so
    changing one word always changes the sums and a forward that does not know the key cannot change
    several words so that they cancel. `queue` leaves the sums on the device, in stream order (no sync).
    """

    def __init__(self, key: int) -> None:
        parts = [(key >> (13 * i)) & ((1 << 61) - 1) for i in range(5)]
        self.a, self.b, self.c, self.d, self.e = (p | 1 for p in parts)

    def _words(self, t: torch.Tensor) -> torch.Tensor:
        t = t.detach()
        if not t.is_contiguous():
            t = t.contiguous()  # one tensor's copy, freed after hashing; inputs are contiguous as a rule
        flat = t.reshape(-1)
        if flat.dtype == torch.bool:
            flat = flat.view(torch.uint8)
        return flat.view(_WORDS[flat.element_size()]) if flat.element_size() in _WORDS else flat.view(torch.uint8)

    def queue(self, value) -> list[torch.Tensor]:
        """Per tensor of `value` (nested too) its (sum, sum, words) on its device, queued on the current
        stream (nothing waits for the device here)."""
        sums = []
        for t in tensors_of(value):
            if t.is_meta:
                continue
            words = self._words(t)
            h1 = torch.zeros((), dtype=torch.int64, device=t.device)
            h2 = torch.zeros((), dtype=torch.int64, device=t.device)
            for start in range(0, words.numel(), DIGEST_CHUNK):
                w = words[start:start + DIGEST_CHUNK].to(torch.int64)
                idx = torch.arange(start, start + w.numel(), dtype=torch.int64, device=t.device)
                h1 += (w * (idx * self.a + self.b)).sum()
                h2 += ((w ^ self.c) * (idx * self.d + self.e)).sum()
                del w, idx
            sums.append(torch.stack([h1, h2, torch.full((), words.numel(), dtype=torch.int64, device=t.device)]))
        return sums

    def of(self, value) -> tuple[int, ...]:
        """The digest as Python ints (one wait for the device per device the tensors are on)."""
        return tuple(x for s in self.queue(value) for x in s.tolist())


def leaves(inputs: list) -> list:
    """The inputs' leaves in order (tensors and other values), as the checks number them."""
    return tree_leaves(list(inputs))


def input_digests(digest: Digest, inputs: list) -> list[tuple[int, ...] | None]:
    """One digest per leaf of the inputs (None for values that are not tensors), to detect mutation."""
    return [digest.of(x) if isinstance(x, torch.Tensor) else None for x in leaves(inputs)]


def changed_input_reasons(before: list, digest: Digest, inputs: list) -> list[str]:
    """`mutation_reasons` by digests: the inputs a forward changed."""
    out = []
    for i, (was, x) in enumerate(zip(before, leaves(inputs))):
        if was is not None and isinstance(x, torch.Tensor) and digest.of(x) != was:
            out.append(f"input {i} was modified by the forward (inputs must stay unchanged)")
    return out


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.contiguous(), b.contiguous()
    if a.numel() == 0:
        return True
    return torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8))


def mutation_reasons(saved: list, inputs: list) -> list[str]:
    out = []
    for i, (before, x) in enumerate(zip(saved, tree_leaves(list(inputs)))):
        if before is not None and isinstance(x, torch.Tensor) and not _same_bits(before, x):
            out.append(f"input {i} was modified by the forward (inputs must stay unchanged)")
    return out


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def aliasing_reasons(output, inputs: list) -> list[str]:
    out = []
    in_spans = [(i, _span(x)) for i, x in enumerate(tree_leaves(list(inputs)))
                if isinstance(x, torch.Tensor) and x.numel()]
    for j, o in enumerate(tensors_of(output)):
        if not o.numel():
            continue
        lo, hi = _span(o)
        for i, (ilo, ihi) in in_spans:
            if lo < ihi and ilo < hi:
                out.append(f"output {j} shares memory with input {i} (outputs must not alias inputs)")
    return out


class StreamTracker:
    """Wraps torch.cuda.Stream / stream / set_stream (before the candidate is imported) to see their use."""

    used: ClassVar[list[str]] = []

    @classmethod
    def install(cls) -> None:
        import torch.cuda as tc

        if getattr(tc.Stream, "_kkb_tracked", False):
            return
        base_stream, base_ctx, base_set = tc.Stream, tc.stream, tc.set_stream

        class TrackedStream(base_stream):
            _kkb_tracked = True

            def __new__(klass, *args, **kwargs):
                # torch wraps existing streams as Stream(stream_id=...) (current_stream, default_stream):
                # only a new stream is a side stream
                if "stream_id" not in kwargs:
                    cls.used.append("torch.cuda.Stream()")
                return super().__new__(klass, *args, **kwargs)

        def stream(s):
            cls.used.append("torch.cuda.stream()")
            return base_ctx(s)

        def set_stream(s):
            cls.used.append("torch.cuda.set_stream()")
            return base_set(s)

        tc.Stream, tc.stream, tc.set_stream = TrackedStream, stream, set_stream
        torch.cuda.Stream, torch.cuda.stream, torch.cuda.set_stream = TrackedStream, stream, set_stream


def stream_reasons(device: str) -> list[str]:
    out = []
    if StreamTracker.used:
        out.append(f"the candidate used side streams ({sorted(set(StreamTracker.used))}); work on other "
                   "streams escapes the timer")
    if device.startswith("cuda"):
        dev = torch.device(device)
        if torch.cuda.current_stream(dev) != torch.cuda.default_stream(dev):
            out.append("the forward left a non-default CUDA stream current (side streams escape the timer)")
    return out


def thread_reasons(threads_before: int) -> list[str]:
    now = threading.active_count()
    if now > threads_before:
        return [(f"the candidate started {now - threads_before} Python thread(s); work on other threads "
                "escapes the timer")]
    return []


def output_type_reasons(output) -> list[str]:
    items = output if isinstance(output, (list, tuple)) else [output]
    out = []
    for i, o in enumerate(items):
        if isinstance(o, torch.Tensor) and type(o) is not torch.Tensor:
            out.append(f"output {i} is a {type(o).__qualname__} (a Tensor subclass); outputs must be plain "
                       "torch.Tensor, materialised when forward returns")
    return out


def late_digest_reasons(queued: list[torch.Tensor], digest: Digest, output) -> list[str]:
    """`late_write_reasons` by digests: `queued` was queued on the current stream right after forward."""
    now = digest.queue(output)
    for i, (before, after) in enumerate(zip(queued, now)):
        if before.tolist() != after.tolist():
            return [f"output {i} changed after forward returned (work continued on a side stream or thread)"]
    return []


def late_write_reasons(snapshot: list, output) -> list[str]:
    """The output read on the current stream right after forward must equal the output after a full sync."""
    for i, (snap, o) in enumerate(zip(snapshot, tensors_of(output))):
        if not _same_bits(snap, o):
            return [f"output {i} changed after forward returned (work continued on a side stream or thread)"]
    return []
