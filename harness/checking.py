"""Correctness trials of a candidate against the reference, with the runtime anti-cheat checks.

Usage (in the worker): wrong, rejected, diag = check_candidate(spec, ModelNew, backend, device, config,
                                                              secret, clock)
`wrong` are value/shape/dtype failures, `rejected` are cheats; both are reasons lists (empty = clean).
Order per trial: the candidate runs BEFORE the reference on fresh inputs (so it cannot reuse the reference's
output memory), then the reference on the same inputs, which digests show the candidate left unchanged; the
reference's output is poisoned (NaN) before it is freed.
"""

from __future__ import annotations

import threading

import torch

from harness import guard
from harness.backends.base import Backend
from harness.compare import (
    CHUNK_ELEMENTS,
    centered_relative_error,
    compare_outputs,
    degenerate_reasons,
    error_norm,
    relative_error,
)
from harness.config import EvalConfig, tolerance_for
from harness.profile import derive_seed, sync
from harness.spec import Spec, Variant, build_model, make_inputs
from harness.timing import Clock

DOWNGRADE_RATIO = 0.25  # error above this share of bf16 rounding error, on an fp32 spec = downgrade
# on a reference that is rounding noise, a candidate may be this many times as far from float64 as the
# reference: another summation order's noise differs by a small factor, a real value by orders of magnitude
NOISE_RATIO = 8.0
# a step after rounding-noisy values (a threshold, a comparison) flips the odd element in the candidate or the
# reference: a mismatch is excused at an element whose float64 reference moves past the tolerance when the
# floating inputs move by STEP_ULPS fp32 ulps, where the mismatches are at most STEP_MAX_SHARE of the output
# (at least STEP_MIN_COUNT elements) and every one of them is such an element
STEP_ULPS = 16
STEP_MAX_SHARE = 1e-4
STEP_MIN_COUNT = 16
STEP_MAX_ELEMENTS = 1 << 24  # outputs past this many elements are not re-run (three float64 forwards)
# a reference rounds its intermediates (a bf16 one its scores and probabilities to 16 bits), so a candidate that
# keeps them more precise can differ from it by more than the tolerance at the odd element while being nearer the
# truth: such a mismatch is excused where, at every mismatched element, the output is within the tolerance of the
# float64 reference and nearer to it than the reference is
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def tolerance(spec: Spec, ref_out, inputs=()) -> tuple[float, float]:
    """(atol, rtol) for a spec: its own TOLERANCE, else the table entry of the reference output's dtype, or of
    a floating input's where that is less precise: an fp32 output made from bf16 inputs (a Llama RMSNorm that
    normalizes a bf16 hidden state with an fp32 weight) carries bf16's rounding, which one flip shows."""
    if spec.atol is not None and spec.rtol is not None:
        return spec.atol, spec.rtol
    tensors = guard.tensors_of(ref_out)
    own = tolerance_for(str(tensors[0].dtype)) if tensors else tolerance_for("float32")
    if not (tensors and tensors[0].is_floating_point()):
        return own
    looser = [tolerance_for(str(t.dtype)) for t in guard.tensors_of(list(inputs)) if t.is_floating_point()]
    return max([own, *looser])


def _round_to_bf16_(inputs: list) -> list:
    """The floating inputs rounded to bf16 in place (chunk by chunk: no second copy of a large input);
    inputs of any other dtype stay as they are. The caller owns them and needs their values no more."""
    for t in guard.tensors_of(list(inputs)):
        if t.is_floating_point() and t.dtype != torch.bfloat16:
            flat = t.view(-1) if t.is_contiguous() else None
            if flat is None:
                t.copy_(t.to(torch.bfloat16))
                continue
            for start in range(0, flat.numel(), CHUNK_ELEMENTS):
                part = flat[start:start + CHUNK_ELEMENTS]
                part.copy_(part.to(torch.bfloat16))
    return list(inputs)


def _bf16_rounding_error(spec: Spec, variant: Variant, inputs: list, ref_out, device: str, seed: int) -> float:
    """Relative error of the reference when its inputs and parameters are rounded to bf16 (rounds `inputs`
    in place)."""
    model = build_model(spec.module.Model, spec, variant, seed, device)
    with torch.no_grad():
        for p in list(model.parameters()) + list(model.buffers()):
            if p.is_floating_point():
                p.copy_(p.to(torch.bfloat16).to(p.dtype))
    rounded_out = model(*_round_to_bf16_(inputs))
    del model
    return relative_error(rounded_out, ref_out)


def _float64_reference(spec: Spec, variant: Variant, inputs: list, device: str, seed: int, nudge: float = 0.0):
    """The reference computed in float64 (its parameters and floating inputs, copied), or None where it cannot
    run so (an op without float64, or no room for the copies). `nudge`: each floating input element scaled by
    1 + nudge * s, s a fixed pattern of signs (+1, -1, ...)."""
    try:
        model = build_model(spec.module.Model, spec, variant, seed, device).double()
        args = [t.to(torch.float64, copy=True) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                for t in inputs]
        if nudge:
            for a in args:
                if isinstance(a, torch.Tensor) and a.is_floating_point():
                    signs = 1.0 - 2.0 * (torch.arange(a.numel(), device=a.device) % 2).to(torch.float64)
                    a.mul_(1.0 + nudge * signs.reshape(a.shape))
        with torch.no_grad():
            return model(*args)
    except (RuntimeError, TypeError, torch.OutOfMemoryError):
        return None


def _mismatched(out, ref_out, atol: float, rtol: float, dtypes: tuple) -> tuple:
    """(output, reference, mask of mismatched elements), both in float64, where the two are tensors of one shape
    and one of `dtypes` and not past STEP_MAX_ELEMENTS; (None, None, None) otherwise. NaN against a number is a
    mismatch, NaN against NaN is not."""
    if not (isinstance(out, torch.Tensor) and isinstance(ref_out, torch.Tensor)) or out.shape != ref_out.shape \
            or out.dtype != ref_out.dtype or ref_out.dtype not in dtypes \
            or ref_out.numel() > STEP_MAX_ELEMENTS or ref_out.numel() == 0:
        return None, None, None
    o, r = out.detach().double(), ref_out.detach().double()
    bad = ~((o - r).abs() <= atol + rtol * r.abs())
    return o, r, bad & ~(torch.isnan(o) & torch.isnan(r))


EXCUSES = {  # rule -> what its diagnostics line says of the excused elements
    "at_steps": f"where a step meets rounding (the float64 reference moves there when the inputs move by {STEP_ULPS} ulps)",
    "nearer_truth": "where the output is within the tolerance of the float64 reference and nearer to it than the "
                    "reference",
}


def _excused_mismatches(spec: Spec, variant: Variant, inputs: list, out, ref_out, atol: float, rtol: float,
                        device: str, seed: int) -> tuple[str, int]:
    """(rule, how many mismatched elements it excuses), or ("", 0) where the mismatch stands. "at_steps": every
    mismatched element is ill-conditioned (see STEP_ULPS) and they are few. "nearer_truth": at every mismatched
    element the output is within the tolerance of the float64 reference and nearer to it than the reference. The
    float64 reference is computed once for both."""
    o, r, bad = _mismatched(out, ref_out, atol, rtol, FLOAT_DTYPES)
    n_bad = int(bad.sum()) if bad is not None else 0
    truth = _float64_reference(spec, variant, inputs, device, seed) if n_bad else None
    if not isinstance(truth, torch.Tensor) or truth.shape != r.shape:
        return "", 0
    truth = truth.detach()
    tol = atol + rtol * truth.abs()
    if n_bad <= max(STEP_MIN_COUNT, STEP_MAX_SHARE * r.numel()):
        ulp = STEP_ULPS * 2.0 ** -24
        views = [_float64_reference(spec, variant, inputs, device, seed, nudge) for nudge in (ulp, -ulp)]
        if all(isinstance(v, torch.Tensor) and v.shape == r.shape for v in views):
            up, down = (v.detach() for v in views)
            moves = ((up - truth).abs() > tol) | ((down - truth).abs() > tol) | ~torch.isfinite(up) \
                | ~torch.isfinite(down)
            if bool(moves[bad].all()):
                return "at_steps", n_bad
    o_err = (o - truth).abs()[bad]
    if bool(((o_err <= tol[bad]) & (o_err <= (r - truth).abs()[bad])).all()):
        return "nearer_truth", n_bad
    return "", 0


def _strict_reasons(spec: Spec, variant: Variant, inputs: list, out, ref_out, device: str, seed: int,
                    bound: float, rel: float, cen: float, diag: dict) -> list[str]:
    """Why a candidate that passed the tolerance fails the strict check on a near-zero or near-constant
    reference (empty: it does not). Where the reference itself is rounding noise (its own error against the
    float64 reference is above the bound: a value zero by algebra, such as the mean of a group norm's output),
    the candidate is held to NOISE_RATIO times that noise instead, so a different summation order passes and
    a value that is not there still fails."""
    truth = _float64_reference(spec, variant, inputs, device, seed)
    if truth is not None and guard.tensors_of(truth):
        ref_rel, ref_cen = relative_error(ref_out, truth), centered_relative_error(ref_out, truth)
        if ref_rel > bound or ref_cen > bound:
            noise, err = error_norm(ref_out, truth), error_norm(out, truth)
            diag["float64_ref_err"], diag["float64_cand_err"] = noise, err
            del truth
            if err <= NOISE_RATIO * noise:
                return []
            return [(f"the reference of variant {variant.name!r} is rounding noise (its error against float64 is "
                    f"{noise:.3g}); the output's error against float64 is {err:.3g}, more than {NOISE_RATIO:g} "
                    "times that")]
    return [(f"the reference of variant {variant.name!r} is near zero or constant, so the strict check applies: "
            f"relative error {rel:.3g}, error after removing the mean {cen:.3g}; both must be <= {bound:g}")]


def _poison(value) -> None:
    for t in guard.tensors_of(value):
        if t.is_floating_point():
            t.fill_(float("nan"))


def _run_candidate(model, inputs: list, backend: Backend, device: str, clock: Clock, digest: guard.Digest,
                   before: list | None = None) -> tuple[object, list, dict]:
    """One guarded forward on `inputs` themselves (no copy): returns (output, cheat reasons, aten ops). That
    the inputs stayed unchanged (`before`: their digests, taken here if not given) and the output was
    complete when forward returned is checked by digests."""
    before = guard.input_digests(digest, inputs) if before is None else before
    threads_before = threading.active_count()
    with guard.OpRecorder() as rec:
        out = model(*inputs)
    queued = digest.queue([t for t in guard.tensors_of(out) if type(t) is torch.Tensor])  # current stream only
    sync(device, clock)
    reasons = guard.output_type_reasons(out)
    tampered = clock.tampered()
    if tampered:
        reasons.append(f"timer or synchronisation replaced: {tampered} (monkey-patching)")
    reasons += guard.forbidden_op_reasons(rec.ops, backend.allowed_ops, backend.name)
    reasons += guard.stream_reasons(device) + guard.thread_reasons(threads_before)
    reasons += guard.changed_input_reasons(before, digest, inputs) + guard.aliasing_reasons(out, inputs)
    if not reasons:
        reasons += guard.late_digest_reasons(queued, digest,
                                             [t for t in guard.tensors_of(out) if type(t) is torch.Tensor])
    return out, reasons, dict(rec.ops)


def check_variant(spec: Spec, cand_cls: type, variant: Variant, backend: Backend, device: str,
                  config: EvalConfig, secret: int, clock: Clock) -> tuple[list[str], list[str], dict]:
    """`config.trials` trials of one variant. What a trial keeps alive at once (harness/memory.py counts it):
    the inputs (the candidate and then the reference run on them; digests show they stayed unchanged), the
    candidate's output, the reference's output, and while the candidate runs the previous trial's reference
    output (an output sharing its memory is a reused result; it is poisoned and freed before the reference
    runs again). Results cached across calls are found by digests of the previous trial's outputs."""
    init_seed = derive_seed(secret, variant.name, "init")
    ref_model = build_model(spec.module.Model, spec, variant, init_seed, device)
    cand_model = build_model(cand_cls, spec, variant, init_seed, device)
    digest = guard.Digest(derive_seed(secret, variant.name, "digest"))
    wrong: list[str] = []
    cheats: list[str] = []
    diag: dict = {"kwargs": variant.kwargs, "trials": []}
    prev_ref = prev_digests = None
    for trial in range(config.trials):
        input_seed = derive_seed(secret, variant.name, trial)
        inputs = make_inputs(spec, variant, input_seed, device, config.inputs_on_device)
        before = guard.input_digests(digest, inputs)  # the candidate must leave them so for the reference
        out, cheat, ops = _run_candidate(cand_model, inputs, backend, device, clock, digest, before)
        diag["aten_ops"] = ops
        if prev_ref is not None and guard.aliasing_reasons(out, guard.tensors_of(prev_ref)):
            cheat.append("the output shares memory with the reference's output (reusing the reference's result)")
        _poison(prev_ref)
        prev_ref = None
        if cheat:
            cheats += [f"variant {variant.name!r} trial {trial}: {r}" for r in cheat]
            break
        ref_out = ref_model(*inputs)
        sync(device, clock)
        atol, rtol = tolerance(spec, ref_out, inputs)
        reasons, tdiag = compare_outputs(out, ref_out, atol, rtol)
        if reasons:
            rule, excused = _excused_mismatches(spec, variant, inputs, out, ref_out, atol, rtol, device, init_seed)
            if excused:
                tdiag[f"mismatches_{rule}"] = excused
                diag.setdefault("excused", []).append(
                    f"variant {variant.name!r} trial {trial}: {excused} element(s) differ from the reference "
                    f"{EXCUSES[rule]}; excused")
                reasons = []
        diag["trials"].append(tdiag)
        diag["atol"], diag["rtol"] = atol, rtol
        digests = (digest.of(out), digest.of(ref_out))
        if not reasons and trial == 0:
            degenerate = degenerate_reasons(ref_out, atol, rtol)
            if degenerate:
                diag["spec_warnings"] = degenerate
                rel, cen = relative_error(out, ref_out), centered_relative_error(out, ref_out)
                diag["strict_rel_err"], diag["strict_centered_err"] = rel, cen
                if rel > config.degenerate_strict_rel or cen > config.degenerate_strict_rel:
                    reasons += _strict_reasons(spec, variant, inputs, out, ref_out, device, init_seed,
                                               config.degenerate_strict_rel, rel, cen, diag)
            first = next(iter(guard.tensors_of(ref_out)), None)
            fp32 = first is not None and first.dtype == torch.float32
            del first  # no reference to this trial's output may outlive it
            # a reference that is rounding noise has no relative error to compare with bf16's: the output was
            # held to float64 instead, which a bf16 computation does not meet
            if not reasons and fp32 and "float64_ref_err" not in diag:
                err = relative_error(out, ref_out)
                del out  # its digest is kept: the bf16-rounded reference's output takes its place
                if guard.changed_input_reasons(before, digest, inputs):  # the reference wrote to its inputs
                    inputs = make_inputs(spec, variant, input_seed, device, config.inputs_on_device)
                bf16_err = _bf16_rounding_error(spec, variant, inputs, ref_out, device, init_seed)
                diag["rel_err"], diag["bf16_rounding_rel_err"] = err, bf16_err
                if bf16_err > 0 and err > DOWNGRADE_RATIO * bf16_err and err > 1e-5:
                    cheats.append(
                        f"variant {variant.name!r}: precision downgrade (or a small error in the math): "
                        f"relative error {err:.3g} on an fp32 spec is near what rounding the inputs to bf16 "
                        f"gives ({bf16_err:.3g}); compute in fp32 (3xTF32 on tensor cores qualifies, TF32 "
                        "alone does not) and check the formula")
        if reasons and prev_digests is not None and digests[0] == prev_digests[0] \
                and digests[1] != prev_digests[1]:
            cheats.append(f"variant {variant.name!r} trial {trial}: the output did not change when the "
                          "inputs changed (results cached across calls)")
        wrong += [f"variant {variant.name!r} (get_inputs(**{variant.kwargs})) trial {trial}: {r}"
                  for r in reasons]
        if reasons or cheats:
            _poison(ref_out)
            break
        out = inputs = None  # freed before the next trial draws its inputs
        prev_ref, prev_digests = ref_out, digests
        ref_out = None
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
