"""Device memory: a spec's footprint estimated before anything runs, and a per-device budget of bytes.

Usage: footprint = estimate_footprint(spec, config, device)    # inputs, outputs, parameters on the meta device
       budget = DeviceBudget("cuda:0", capacity_bytes=...)
       with budget.hold(footprint.evaluation_bytes) as cap_bytes: ...   # waits until it fits (FIFO)
       with budget.hold_all(): ...                                      # alone on the device

What one evaluation keeps alive at its peak (harness/checking.py, harness/timing.py):
- checks: the trial's inputs, the candidate's and the reference's clones of them (3 x inputs), the
  candidate's and the reference's outputs and the previous trial's pair kept to catch cached results
  (4 x outputs), two models (2 x parameters), the bf16-rounding reference (1 x parameters, inputs,
  outputs), the reference's own intermediates (taken as max(inputs, outputs)), and the comparison's
  float64 temporaries of one chunk (harness/compare.py);
- timing: the inputs, two batches of fresh clones (each up to half of `clone_pool_bytes`, at least one
  set), the output, the L2 flush buffer, and the late check's reference (2 x parameters).
The estimate is the larger of the two, plus `CONTEXT_BYTES` for the process's CUDA context. The worker
reports the peak it measured (`peak_bytes` in a verdict's diagnostics), against which the estimate is
checked on the GPU.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from harness.config import EvalConfig
from harness.spec import Spec, SpecError

CONTEXT_BYTES = 768 * 1024**2  # a CUDA context and the allocator's own blocks, per worker process
GIB = 1024**3


class SpecTooLarge(SpecError):
    """The spec's estimated footprint exceeds what the device offers one evaluation; nothing was run."""


@dataclass(frozen=True)
class Footprint:
    input_bytes: int  # default inputs after the DTYPE cast (the largest variant's)
    output_bytes: int
    parameter_bytes: int  # parameters and buffers of one model
    check_bytes: int  # peak of the correctness trials
    timing_bytes: int  # peak of the timing loop
    evaluation_bytes: int  # the larger, plus a CUDA context: what one evaluation is given
    compile_bytes: int  # a compile stage's first calls: inputs, output, a model, intermediates, context
    method: str  # "meta" (shapes from a forward on the meta device) | "unknown" (the spec refused it)

    def to_dict(self) -> dict:
        return asdict(self)


def _bytes(values) -> int:
    from harness.guard import tensors_of

    return sum(t.numel() * t.element_size() for t in tensors_of(values))


def _meta_sizes(spec: Spec) -> tuple[int, int, int]:
    """(input, output, parameter) bytes of the largest variant, from a forward on the meta device."""
    import torch
    from torch.utils._pytree import tree_map

    from harness.redirect import model_on_meta, tensors_on
    from harness.spec import make_init_inputs

    dtype = getattr(torch, spec.dtype) if spec.dtype else None
    sizes = (0, 0, 0)
    for variant in spec.variants:
        with tensors_on("meta"):
            init = make_init_inputs(spec, variant)
        model = model_on_meta(lambda init=init: spec.module.Model(*init))
        with tensors_on("meta"), torch.no_grad():
            inputs = list(spec.module.get_inputs(**variant.kwargs))
            if dtype is not None:
                if isinstance(model, torch.nn.Module):
                    model = model.to(dtype)
                inputs = tree_map(lambda x: x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point()
                                  else x, inputs)
            out = model(*inputs)
        params = 0
        if isinstance(model, torch.nn.Module):
            params = sum(p.numel() * p.element_size() for p in [*model.parameters(), *model.buffers()])
        found = (_bytes(inputs), _bytes(out), params)
        if sum(found) > sum(sizes):
            sizes = found
    return sizes


def estimate_footprint(spec: Spec, config: EvalConfig, device: str) -> Footprint:
    """Bytes one evaluation of `spec` needs on `device` at its peak (see the module docstring)."""
    try:
        inputs, outputs, params = _meta_sizes(spec)
        method = "meta"
    except Exception:  # noqa: BLE001 - a spec whose forward the meta device cannot run: size unknown
        inputs, outputs, params, method = 0, 0, 0, "unknown"
    from harness.compare import CHUNK_ELEMENTS, WORKSPACE_BYTES_PER_ELEMENT

    work = max(inputs, outputs)
    compare = min(outputs // 4 + 1, CHUNK_ELEMENTS) * WORKSPACE_BYTES_PER_ELEMENT  # float64 chunks of the check
    check = 4 * inputs + 5 * outputs + 3 * params + work + compare
    on_gpu = device.startswith("cuda")
    clones = max(config.clone_pool_bytes, 2 * inputs) if on_gpu else inputs
    timing = inputs + clones + 2 * outputs + 2 * params + work + (config.l2_flush_bytes if on_gpu else 0)
    context = CONTEXT_BYTES if on_gpu else 0
    return Footprint(inputs, outputs, params, check, timing, max(check, timing) + context,
                     2 * inputs + 2 * outputs + params + work + context, method)


def cap_for(footprint_bytes: int, config: EvalConfig, capacity_bytes: int) -> int:
    """The bytes a process is given for an evaluation: the estimate with headroom, within the device."""
    wanted = max(int(footprint_bytes * config.memory_cap_factor), config.memory_cap_min_bytes)
    return min(wanted, capacity_bytes)


def too_large_message(spec: Spec, footprint: Footprint, device: str, capacity_bytes: int) -> str:
    return (f"spec {spec.path}: estimated footprint {footprint.evaluation_bytes / GIB:.1f} GiB on {device} "
            f"(inputs {footprint.input_bytes / GIB:.2f} GiB, outputs {footprint.output_bytes / GIB:.2f} GiB, "
            f"parameters {footprint.parameter_bytes / GIB:.2f} GiB; checks {footprint.check_bytes / GIB:.1f}, "
            f"timing {footprint.timing_bytes / GIB:.1f} GiB) exceeds the {capacity_bytes / GIB:.1f} GiB one "
            f"evaluation may use there; nothing was run (smaller sizes: `kkb bench --suite DIR --max-elements N`)")


class DeviceBudget:
    """Bytes of one device handed to the processes working on it, first come first served.

    A request waits until it is first in line and fits; `hold_all` takes the whole device (a spec's
    baselines, an out-of-memory retry). Requests larger than the device are clipped to it (alone).
    """

    def __init__(self, device: str, capacity_bytes: int) -> None:
        self.device = device
        self.capacity_bytes = int(capacity_bytes)
        self.in_use_bytes = 0
        self.peak_holders = 0  # most holders at once, for reports and tests
        self._holders = 0
        self._cond = threading.Condition()
        self._line: deque[object] = deque()

    @contextmanager
    def hold(self, nbytes: int) -> Iterator[int]:
        nbytes = min(int(nbytes), self.capacity_bytes)
        ticket = object()
        with self._cond:
            self._line.append(ticket)
            while self._line[0] is not ticket or self.in_use_bytes + nbytes > self.capacity_bytes:
                self._cond.wait()
            self._line.popleft()
            self.in_use_bytes += nbytes
            self._holders += 1
            self.peak_holders = max(self.peak_holders, self._holders)
            self._cond.notify_all()
        try:
            yield nbytes
        finally:
            with self._cond:
                self.in_use_bytes -= nbytes
                self._holders -= 1
                self._cond.notify_all()

    def hold_all(self):
        return self.hold(self.capacity_bytes)


def device_capacity_bytes(info: dict, config: EvalConfig) -> int:
    """What one evaluation may use on a device, from a worker's ready message (harness/worker.py)."""
    if info.get("total_bytes"):  # a GPU: its memory as the per-process fraction allows
        return int(info["total_bytes"] * config.gpu_memory_fraction)
    # CPU: the worker's address-space limit, less what torch and triton map by themselves
    limit = config.cpu_memory_limit_bytes - 2 * GIB
    available = info.get("host_available_bytes") or limit
    return int(max(GIB, min(limit, available)))
