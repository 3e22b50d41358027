"""Correctness trials of a candidate against the reference, with the runtime anti-cheat checks.

Usage (in the worker): wrong, rejected, diag = check_candidate(spec, ModelNew, backend, device, config,
                                                              secret, clock)
`wrong` are value/shape/dtype failures, `rejected` are cheats; both are reasons lists (empty = clean).
Order per trial: the candidate runs BEFORE the reference on its own clone of fresh inputs (so it cannot
reuse the reference's output memory), the reference's output is poisoned (NaN) before it is freed.
"""

from __future__ import annotations

import threading

import torch
from torch.utils._pytree import tree_map

from harness import guard
from harness.backends.base import Backend
from harness.compare import centered_relative_error, compare_outputs, degenerate_reasons, relative_error
from harness.config import EvalConfig, tolerance_for
from harness.profile import derive_seed, sync
from harness.spec import Spec, Variant, build_model, make_inputs
from harness.timing import Clock

DOWNGRADE_RATIO = 0.25  # error above this share of bf16 rounding error, on an fp32 spec = downgrade


def tolerance(spec: Spec, ref_out) -> tuple[float, float]:
    """(atol, rtol) for a spec: its own TOLERANCE, else the table entry of the reference output's dtype."""
    if spec.atol is not None and spec.rtol is not None:
        return spec.atol, spec.rtol
    tensors = guard.tensors_of(ref_out)
    return tolerance_for(str(tensors[0].dtype)) if tensors else tolerance_for("float32")


def _bf16_rounding_error(spec: Spec, variant: Variant, inputs: list, ref_out, device: str, seed: int) -> float:
    """Relative error of the reference when its inputs and parameters are rounded to bf16."""
    model = build_model(spec.module.Model, spec, variant, seed, device)
    with torch.no_grad():
        for p in list(model.parameters()) + list(model.buffers()):
            if p.is_floating_point():
                p.copy_(p.to(torch.bfloat16).to(p.dtype))
    rounded = tree_map(lambda x: x.to(torch.bfloat16).to(x.dtype)
                       if isinstance(x, torch.Tensor) and x.is_floating_point() else x, list(inputs))
    return relative_error(model(*rounded), ref_out)


def _poison(value) -> None:
    for t in guard.tensors_of(value):
        if t.is_floating_point():
            t.fill_(float("nan"))


def _run_candidate(model, inputs: list, backend: Backend, device: str, clock: Clock) -> tuple[object, list, dict]:
    """One guarded forward: returns (output, cheat reasons)."""
    saved = guard.snapshot_bytes(inputs)
    threads_before = threading.active_count()
    with guard.OpRecorder() as rec:
        out = model(*inputs)
    snapshot = [t.clone() for t in guard.tensors_of(out) if type(t) is torch.Tensor]  # current stream only
    sync(device, clock)
    reasons = guard.output_type_reasons(out)
    tampered = clock.tampered()
    if tampered:
        reasons.append(f"timer or synchronisation replaced: {tampered} (monkey-patching)")
    reasons += guard.forbidden_op_reasons(rec.ops, backend.allowed_ops, backend.name)
    reasons += guard.stream_reasons(device) + guard.thread_reasons(threads_before)
    reasons += guard.mutation_reasons(saved, inputs) + guard.aliasing_reasons(out, inputs)
    if not reasons:
        reasons += guard.late_write_reasons(snapshot, out)
    return out, reasons, dict(rec.ops)


def check_variant(spec: Spec, cand_cls: type, variant: Variant, backend: Backend, device: str,
                  config: EvalConfig, secret: int, clock: Clock) -> tuple[list[str], list[str], dict]:
    init_seed = derive_seed(secret, variant.name, "init")
    ref_model = build_model(spec.module.Model, spec, variant, init_seed, device)
    cand_model = build_model(cand_cls, spec, variant, init_seed, device)
    wrong: list[str] = []
    cheats: list[str] = []
    diag: dict = {"kwargs": variant.kwargs, "trials": []}
    prev_out = prev_ref = None
    for trial in range(config.trials):
        inputs = make_inputs(spec, variant, derive_seed(secret, variant.name, trial), device,
                             config.inputs_on_device)
        cand_inputs, ref_inputs = guard.clone_inputs(inputs), guard.clone_inputs(inputs)
        out, cheat, ops = _run_candidate(cand_model, cand_inputs, backend, device, clock)
        diag["aten_ops"] = ops
        if prev_ref is not None and guard.aliasing_reasons(out, guard.tensors_of(prev_ref)):
            cheat.append("the output shares memory with the reference's output (reusing the reference's result)")
        if cheat:
            cheats += [f"variant {variant.name!r} trial {trial}: {r}" for r in cheat]
            break
        ref_out = ref_model(*ref_inputs)
        sync(device, clock)
        atol, rtol = tolerance(spec, ref_out)
        reasons, tdiag = compare_outputs(out, ref_out, atol, rtol)
        diag["trials"].append(tdiag)
        diag["atol"], diag["rtol"] = atol, rtol
        if not reasons and trial == 0:
            degenerate = degenerate_reasons(ref_out, atol, rtol)
            if degenerate:
                diag["spec_warnings"] = degenerate
                rel, cen = relative_error(out, ref_out), centered_relative_error(out, ref_out)
                diag["strict_rel_err"], diag["strict_centered_err"] = rel, cen
                if rel > config.degenerate_strict_rel or cen > config.degenerate_strict_rel:
                    reasons.append(
                        f"the reference of variant {variant.name!r} is near zero or constant, so the "
                        f"strict check applies: relative error {rel:.3g}, error after removing the mean "
                        f"{cen:.3g}; both must be <= {config.degenerate_strict_rel:g}")
            ref_tensors = guard.tensors_of(ref_out)
            if not reasons and ref_tensors and ref_tensors[0].dtype == torch.float32:
                err = relative_error(out, ref_out)
                bf16_err = _bf16_rounding_error(spec, variant, inputs, ref_out, device, init_seed)
                diag["rel_err"], diag["bf16_rounding_rel_err"] = err, bf16_err
                if bf16_err > 0 and err > DOWNGRADE_RATIO * bf16_err and err > 1e-5:
                    cheats.append(
                        f"variant {variant.name!r}: precision downgrade: relative error {err:.3g} on an "
                        f"fp32 spec is near bf16 rounding ({bf16_err:.3g}); compute in fp32")
        if reasons and prev_out is not None and not compare_outputs(out, prev_out, 0.0, 0.0)[0] \
                and compare_outputs(ref_out, prev_ref, 0.0, 0.0)[0]:
            cheats.append(f"variant {variant.name!r} trial {trial}: the output did not change when the "
                          "inputs changed (results cached across calls)")
        wrong += [f"variant {variant.name!r} (get_inputs(**{variant.kwargs})) trial {trial}: {r}"
                  for r in reasons]
        if reasons or cheats:
            break
        _poison(prev_ref)
        prev_out, prev_ref = out, ref_out
    _poison(prev_ref)
    return wrong, cheats, diag


def check_candidate(spec: Spec, cand_cls: type, backend: Backend, device: str, config: EvalConfig,
                    secret: int, clock: Clock) -> tuple[list[str], list[str], dict]:
    wrong: list[str] = []
    cheats: list[str] = []
    diag: dict = {}
    variants = spec.variants if config.check_variants else spec.variants[:1]
    for variant in variants:
        w, c, d = check_variant(spec, cand_cls, variant, backend, device, config, secret, clock)
        wrong += w
        cheats += c
        diag[variant.name] = d
        if w or c:
            break
    return wrong, cheats, diag
