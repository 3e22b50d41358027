"""The spec profile: what is measured of the reference alone, before any candidate is imported.

Usage (in the worker): profile = build_profile(spec, device, config, clock, secret_seed, need_bandwidth)

For each timed variant: bytes moved (sum of input and output tensor sizes), FLOPs (the spec's get_flops, else
FlopCounterMode on the reference), and the eager and torch.compile baselines timed with the same method as candidates.
"""

from __future__ import annotations

import hashlib

import torch
from torch.utils.flop_counter import FlopCounterMode

from harness.compare import compare_outputs
from harness.config import EvalConfig, tolerance_for
from harness.guard import clone_inputs, tensors_of
from harness.peaks import measured_bandwidth
from harness.spec import Spec, SpecError, Variant, build_model, make_inputs
from harness.timing import Clock, time_callable


def derive_seed(secret: int, *parts) -> int:
    """A seed for one (variant, trial, purpose) from the run's secret seed."""
    digest = hashlib.sha256(repr((secret, *parts)).encode()).digest()
    return int.from_bytes(digest[:7], "little")


def bytes_of(values) -> int:
    return sum(t.numel() * t.element_size() for t in tensors_of(values))


def sync(device: str, clock: Clock) -> None:
    if device.startswith("cuda"):
        clock.synchronize()


def flops_of(spec: Spec, inputs: list, counted: int) -> int:
    """The spec's own FLOP count (get_flops) where it has one, else what FlopCounterMode counted."""
    get_flops = getattr(spec.module, "get_flops", None)
    if get_flops is None:
        return counted
    value = get_flops(*inputs)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"spec {spec.path}: get_flops returned {value!r}, not a non-negative int")
    return value


def _rng_states(device: str) -> list[bytes]:
    """The random generators a forward can draw from: the CPU's, and the device's."""
    states = [torch.random.get_rng_state().numpy().tobytes()]
    if device.startswith("cuda"):
        states.append(torch.cuda.get_rng_state(torch.device(device)).numpy().tobytes())
    return states


def _same_again(spec: Spec, variant: Variant, seed: int, inputs: list, out, device: str, clock: Clock) -> None:
    """The reference built again (the same parameters) and called on the same inputs must give the same
    output within the tolerance: otherwise it draws random numbers (dropout in training mode, torch.rand in
    forward) and no candidate can be judged against it (SpecError). A fresh module, so a reference that keeps
    state between calls (an RNN's hidden state) starts where the first did, as each candidate's does."""
    outs = tensors_of(out)
    if not outs:
        return
    again = build_model(spec.module.Model, spec, variant, seed, device)(*clone_inputs(inputs))
    sync(device, clock)
    if spec.atol is not None and spec.rtol is not None:
        atol, rtol = spec.atol, spec.rtol
    else:
        atol, rtol = tolerance_for(str(outs[0].dtype))
    reasons, _ = compare_outputs(again, out, atol, rtol)
    if reasons:
        raise SpecError(f"the reference gives another output when called again on the same inputs, so no "
                        f"candidate can match it (random numbers in forward, such as dropout in training "
                        f"mode): {reasons[0]}")


def _profile_variant(spec: Spec, variant: Variant, device: str, config: EvalConfig, clock: Clock,
                     secret: int) -> dict:
    t0 = clock.perf_counter()
    model = build_model(spec.module.Model, spec, variant, derive_seed(secret, variant.name, "init"), device)
    sync(device, clock)
    t1 = clock.perf_counter()
    inputs = make_inputs(spec, variant, derive_seed(secret, variant.name, "time"), device, config.inputs_on_device)
    sync(device, clock)
    t2 = clock.perf_counter()
    rng_before = _rng_states(device)
    with FlopCounterMode(display=False) as counter:
        out = model(*clone_inputs(inputs))
    sync(device, clock)
    drew_random = _rng_states(device) != rng_before
    outs = tensors_of(out)
    entry: dict = {
        "bytes_moved": bytes_of(inputs) + bytes_of(outs),
        "flops": flops_of(spec, inputs, int(counter.get_total_flops())),
        "flops_dtype": str(outs[0].dtype).removeprefix("torch.") if outs else None,
        # the harness's own work per evaluation, for the candidate's time limit (harness/limits.py)
        "build_s": round(t1 - t0, 6), "inputs_s": round(t2 - t1, 6),
        "first_call_s": round(clock.perf_counter() - t2, 6),
        "eager": None, "compile": None, "compile_error": None,
    }
    if drew_random:  # confirmed by a second call (its memory only then): a seeded draw can be deterministic
        _same_again(spec, variant, derive_seed(secret, variant.name, "init"), inputs, out, device, clock)
    del out, outs
    make_args = lambda: clone_inputs(inputs)
    if config.time_eager_baseline:
        entry["eager"] = time_callable(model, make_args, device, config, clock).to_dict()
    if config.time_compile_baseline:
        try:
            compiled = torch.compile(model)
            entry["compile"] = time_callable(compiled, make_args, device, config, clock).to_dict()
        except Exception as exc:  # noqa: BLE001 - a baseline failing must not sink the candidate's verdict
            entry["compile_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    return entry


def build_profile(spec: Spec, device: str, config: EvalConfig, clock: Clock, secret: int,
                  need_bandwidth: bool) -> dict:
    timed = {v.name: _profile_variant(spec, v, device, config, clock, secret)
             for v in spec.variants if v.time}
    # the variants that are only checked: what building and drawing their inputs costs
    checked = {}
    for v in spec.variants:
        if v.time:
            continue
        t0 = clock.perf_counter()
        build_model(spec.module.Model, spec, v, derive_seed(secret, v.name, "init"), device)
        t1 = clock.perf_counter()
        make_inputs(spec, v, derive_seed(secret, v.name, "time"), device, config.inputs_on_device)
        sync(device, clock)
        checked[v.name] = {"build_s": round(t1 - t0, 6), "inputs_s": round(clock.perf_counter() - t1, 6)}
    return {
        "spec_sha": spec.sha256,
        "device": device,
        "timed": timed,
        "checked": checked,
        "bandwidth_bytes_per_s": measured_bandwidth(device) if need_bandwidth else None,
    }
