"""Device memory: a spec's footprint estimated before anything runs, and a per-device budget of bytes.

Usage: footprint = estimate_footprint(spec, config, device)    # shapes from a forward on the meta device
       budget = DeviceBudget("cuda:0", capacity_bytes=...)
       with budget.hold(footprint.evaluation_bytes) as cap_bytes: ...   # waits until it fits (FIFO)
       with budget.hold_all(): ...                                      # alone on the device

Sizes, from the largest variant built and run on the meta device: I inputs, O outputs, P parameters and
buffers of one model, G the most bytes alive while get_inputs() draws the inputs (>= I), and R the most
bytes the reference's forward allocates at once beyond its inputs (its output and its own intermediates,
>= O), counted op by op (harness/live_bytes.py). What one evaluation keeps alive at its peak:
- checks (harness/checking.py): two models, the inputs (candidate and reference both run on them; digests
  show they stayed unchanged), the previous trial's reference output while the candidate runs, the
  candidate's output while the reference runs (the candidate's own workspace taken as the reference's), and
  both outputs while they are compared in chunks (harness/compare.py) and hashed (harness/guard.py):
      I + 3P + O + max(R, O + W)   (3P: the bf16-rounded reference of an fp32 check)
  W the larger of one comparison chunk's float64 temporaries and one digest chunk's. A near-zero
  reference's float64 recheck (checking.py, 2I + 2P + 2R more) is not counted: it runs where the cap has
  room, and where it has none the strict check stands;
- timing (harness/timing.py): the inputs, the fresh clones (two batches of up to `clone_pool_bytes` / 2
  each; inputs larger than half the pool, one clone at a time), the call's output and workspace (R), the
  L2 flush buffer and a model; the guarded call after timing is a check's;
- profile (harness/profile.py, alone on the device): the reference's FLOPs counted on a clone of the
  inputs, then eager and torch.compile timed as above, and a device-copy bandwidth probe. A reference that
  drew random numbers is called once more to compare (I + O + P more): not counted, it is the rare case;
So the peak stays within about 3 x (inputs + outputs) plus the reference's own workspace. The estimate is
the larger of checks and timing, plus `CONTEXT_BYTES` for a CUDA context; a spec fits a device when the
estimate and the profile's both do. The worker reports the peak it measured (`peak_allocated_bytes`,
`peak_reserved_bytes` in a verdict's diagnostics["memory"]); tests bound each by the other
(tests/harness/test_memory.py on the CPU, benchmarks/gpu/harness_fit.py on a GPU).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from harness.config import EvalConfig
from harness.spec import Spec, SpecError, argument_list

CONTEXT_BYTES = 768 * 1024**2  # a CUDA context and the allocator's own blocks, per worker process
SMALL_BYTES = 1 << 16  # scalars and digests' sums: below any real tensor's share
BANDWIDTH_PROBE_BYTES = 1 << 30  # harness/peaks.py's copy of 512 MiB, on a device without a given bandwidth
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
    compile_bytes: int  # a compile stage's first calls: inputs, a model, the forward's allocations, context
    method: str  # "meta" (shapes from a forward on the meta device) | "unknown" (the spec refused it)
    reference_bytes: int = 0  # R: most bytes the reference's forward allocates at once (output included)
    draw_bytes: int = 0  # G: most bytes alive while get_inputs() draws the inputs
    profile_bytes: int = 0  # the baselines' worker (alone on the device), context included
    forward_bytes: int = 0  # the reference's forward alone: inputs, a model, R, context

    @property
    def needed_bytes(self) -> int:
        """What the device must offer one process for this spec to be judged at all."""
        return max(self.evaluation_bytes, self.profile_bytes)

    def to_dict(self) -> dict:
        return asdict(self)


def _bytes(values) -> int:
    from harness.guard import tensors_of

    return sum(t.numel() * t.element_size() for t in tensors_of(values))


@dataclass(frozen=True)
class MetaSizes:
    input_bytes: int
    output_bytes: int
    parameter_bytes: int
    reference_bytes: int  # R
    draw_bytes: int  # G
    largest_output_elements: int = 0  # of one output tensor: the comparison's chunks
    largest_elements: int = 0  # of one input or output tensor: the digests' chunks


def meta_sizes(spec: Spec) -> MetaSizes:
    """Sizes of the largest variant (by inputs, outputs and parameters), from a forward on the meta device."""
    import torch
    from torch.utils._pytree import tree_map

    from harness.guard import tensors_of
    from harness.live_bytes import LiveBytes
    from harness.redirect import model_on_meta, tensors_on
    from harness.spec import make_init_inputs

    dtype = getattr(torch, spec.dtype) if spec.dtype else None
    found: MetaSizes | None = None
    for variant in spec.variants:
        with tensors_on("meta"):
            init = make_init_inputs(spec, variant)
        model = model_on_meta(lambda init=init: spec.module.Model(*init))
        with tensors_on("meta"), torch.no_grad():
            with LiveBytes("meta") as drawing:
                inputs = argument_list(spec.module.get_inputs(**variant.kwargs), "get_inputs")
                if dtype is not None:
                    if isinstance(model, torch.nn.Module):
                        model = model.to(dtype)
                    inputs = tree_map(lambda x: x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point()
                                      else x, inputs)
            with LiveBytes("meta") as forward:
                out = model(*inputs)
        params = 0
        if isinstance(model, torch.nn.Module):
            params = sum(p.numel() * p.element_size() for p in [*model.parameters(), *model.buffers()])
        i, o = _bytes(inputs), _bytes(out)
        numels = lambda v: [t.numel() for t in tensors_of(v)] or [0]
        sizes = MetaSizes(i, o, params, max(forward.peak_bytes, o), max(drawing.peak_bytes, i),
                          max(numels(out)), max(numels(out) + numels(inputs)))
        if found is None or i + o + params > found.input_bytes + found.output_bytes + found.parameter_bytes:
            found = sizes
    assert found is not None  # a spec has its default variant at least
    return found


def _clone_bytes(inputs: int, config: EvalConfig, on_gpu: bool) -> int:
    """Fresh input clones alive at once in a timing loop (harness/timing.py)."""
    if not inputs:
        return 0
    if not on_gpu or 2 * inputs > config.clone_pool_bytes:
        return inputs  # one set at a time
    per_batch = min(max(1, config.clone_pool_bytes // 2 // inputs), 20, max(1, config.max_reps))
    return 2 * per_batch * inputs  # two batches: the one timed and the one queued ahead


def footprint_of(sizes: MetaSizes, config: EvalConfig, device: str) -> Footprint:
    """The footprint of these sizes on `device` (see the module docstring)."""
    from harness.compare import CHUNK_ELEMENTS, WORKSPACE_BYTES_PER_ELEMENT
    from harness.guard import DIGEST_CHUNK, DIGEST_WORKSPACE_BYTES_PER_WORD

    i, o, p, r, g = (sizes.input_bytes, sizes.output_bytes, sizes.parameter_bytes, sizes.reference_bytes,
                     sizes.draw_bytes)
    chunk = min(sizes.largest_output_elements, CHUNK_ELEMENTS) * WORKSPACE_BYTES_PER_ELEMENT  # float64 chunks
    digest = min(sizes.largest_elements, DIGEST_CHUNK) * DIGEST_WORKSPACE_BYTES_PER_WORD
    check = max(i + 3 * p + o + max(r, o + max(chunk, digest)), 2 * p + o + g) + SMALL_BYTES
    on_gpu = device.startswith("cuda")
    flush = config.l2_flush_bytes if on_gpu else 0
    timing = i + _clone_bytes(i, config, on_gpu) + r + flush + p + SMALL_BYTES
    context = CONTEXT_BYTES if on_gpu else 0
    profile = max(2 * i + r + p + SMALL_BYTES, timing, g + p + SMALL_BYTES) + (BANDWIDTH_PROBE_BYTES if on_gpu else 0) + context
    return Footprint(i, o, p, check, timing, max(check, timing) + context, i + p + r + context, "meta",
                     reference_bytes=r, draw_bytes=g, profile_bytes=profile, forward_bytes=i + p + r + context)


def estimate_footprint(spec: Spec, config: EvalConfig, device: str) -> Footprint:
    """Bytes one evaluation of `spec` needs on `device` at its peak (see the module docstring)."""
    try:
        sizes = meta_sizes(spec)
    except SpecError as exc:  # the spec's own form is wrong (get_inputs() returned a tensor): said, not sized
        raise SpecError(f"spec {spec.path}: {exc}") from exc
    except Exception:  # noqa: BLE001 - a spec whose forward the meta device cannot run: size unknown
        return Footprint(0, 0, 0, 0, 0, CONTEXT_BYTES if device.startswith("cuda") else 0, 0, "unknown")
    return footprint_of(sizes, config, device)


def cap_for(footprint_bytes: int, config: EvalConfig, capacity_bytes: int) -> int:
    """The bytes a process is given for an evaluation: the estimate with headroom, within the device."""
    wanted = max(int(footprint_bytes * config.memory_cap_factor), config.memory_cap_min_bytes)
    return min(wanted, capacity_bytes)


# what fits every verb that judges a spec; the suite's own option named as such
_SMALLER = "Write the spec with smaller sizes (`kkb bench --suite` scales every problem with --max-elements N)."


def too_large_message(spec: Spec, footprint: Footprint, device: str, capacity_bytes: int,
                      smaller: str = "") -> str:
    """One message: what the spec needs, what the device offers, and (`smaller`) the sizes that would fit."""
    gib = lambda n: f"{n / GIB:.1f} GiB"
    return (f"spec {spec.path}: estimated footprint {gib(footprint.needed_bytes)} on {device} (inputs "
            f"{footprint.input_bytes / GIB:.2f} GiB, outputs {footprint.output_bytes / GIB:.2f} GiB, parameters "
            f"{footprint.parameter_bytes / GIB:.2f} GiB, the reference's forward alone {gib(footprint.forward_bytes)}; "
            f"checks {gib(footprint.check_bytes)}, timing {gib(footprint.timing_bytes)}, baselines "
            f"{gib(footprint.profile_bytes)}) exceeds the {gib(capacity_bytes)} one evaluation may use there; "
            f"nothing was run. {smaller or _SMALLER}")


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
