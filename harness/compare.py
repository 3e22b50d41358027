"""Compare a candidate's output with the reference's: reasons (empty = pass) and diagnostics.

Usage: from harness.compare import compare_outputs; reasons, diag = compare_outputs(out, ref, atol, rtol)

Rules: shape and dtype must match exactly; values within |out - ref| <= atol + rtol * |ref|; NaN where the
reference is finite fails, NaN where the reference is NaN is fine; +-Inf must match exactly.
"""

from __future__ import annotations

import torch

MAX_WORST = 5  # worst mismatching elements listed in diagnostics


def _flatten(output) -> list:
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in _flatten(item)]
    return [output]


def _index(flat_idx: int, shape: tuple[int, ...]) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat_idx % dim if dim else 0)
        flat_idx //= dim if dim else 1
    return list(reversed(idx))


def compare_tensor(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, name: str) -> tuple[
        list[str], dict]:
    if type(out) is not torch.Tensor:
        return [(f"{name}: output is a {type(out).__module__}.{type(out).__qualname__}, must be a plain "
                "torch.Tensor (no subclasses, no lazy tensors)")], {}
    if tuple(out.shape) != tuple(ref.shape):
        return [f"{name}: shape {tuple(out.shape)} but the reference has {tuple(ref.shape)}"], {}
    if out.dtype != ref.dtype:
        return [f"{name}: dtype {out.dtype} but the reference has {ref.dtype} (output dtype must match)"], {}
    if out.device != ref.device:
        return [f"{name}: output on {out.device} but the reference is on {ref.device}"], {}
    if out.numel() == 0:
        return [], {}
    o = out.detach().double() if out.is_floating_point() else out.detach().to(torch.float64)
    r = ref.detach().double() if ref.is_floating_point() else ref.detach().to(torch.float64)
    r_nan, o_nan = torch.isnan(r), torch.isnan(o)
    r_inf, o_inf = torch.isinf(r), torch.isinf(o)
    both_nan = r_nan & o_nan
    inf_ok = r_inf & o_inf & (torch.sign(r) == torch.sign(o))
    finite = ~(r_nan | o_nan | r_inf | o_inf)
    diff = torch.where(finite, (o - r).abs(), torch.zeros_like(o))
    bad = (finite & (diff > atol + rtol * r.abs())) | (~finite & ~both_nan & ~inf_ok)
    n_bad = int(bad.sum())
    rel = diff / r.abs().clamp_min(1e-12)
    diag = {
        "max_abs_err": float(diff.max()),
        "max_rel_err": float(torch.where(finite & (r.abs() > atol), rel, torch.zeros_like(rel)).max()),
        "mismatch_count": n_bad,
        "mismatch_fraction": n_bad / out.numel(),
        "numel": out.numel(),
        "nan_where_ref_finite": int((o_nan & ~r_nan).sum()),
    }
    if n_bad == 0:
        return [], diag
    # worst first: non-finite mismatches rank above everything
    score = torch.where(bad, torch.where(finite, diff, torch.full_like(diff, float("inf"))),
                        torch.full_like(diff, -1.0)).flatten()
    top = torch.topk(score, min(MAX_WORST, n_bad)).indices.tolist()
    flat_o, flat_r = o.flatten(), r.flatten()
    worst = [{"index": _index(i, tuple(out.shape)), "output": float(flat_o[i]), "reference": float(flat_r[i])}
             for i in top]
    diag["worst"] = worst
    shown = ", ".join(f"{w['index']}: got {w['output']:.6g}, expected {w['reference']:.6g}" for w in worst[:3])
    reason = (f"{name}: {n_bad} of {out.numel()} elements ({100 * n_bad / out.numel():.3g}%) outside "
              f"atol={atol:g} rtol={rtol:g}; max abs err {diag['max_abs_err']:.3g}, max rel err "
              f"{diag['max_rel_err']:.3g}; worst {shown}")
    if diag["nan_where_ref_finite"]:
        reason += f"; {diag['nan_where_ref_finite']} NaN where the reference is finite"
    return [reason], diag


def compare_outputs(out, ref, atol: float, rtol: float, label: str = "output") -> tuple[list[str], dict]:
    """Compare nested outputs (tensor or tuple/list of tensors) element by element."""
    outs, refs = _flatten(out), _flatten(ref)
    if len(outs) != len(refs):
        return [f"{label}: {len(outs)} output tensors but the reference returns {len(refs)}"], {}
    reasons: list[str] = []
    diags: dict = {}
    for i, (o, r) in enumerate(zip(outs, refs)):
        name = label if len(outs) == 1 else f"{label}[{i}]"
        if not isinstance(r, torch.Tensor):
            if o != r:
                reasons.append(f"{name}: got {o!r}, expected {r!r}")
            continue
        rs, d = compare_tensor(o, r, atol, rtol, name)
        reasons += rs
        diags[name] = d
    return reasons, diags


def relative_error(out, ref) -> float:
    """||out - ref|| / ||ref|| over all output tensors (float64)."""
    num = den = 0.0
    for o, r in zip(_flatten(out), _flatten(ref)):
        if isinstance(r, torch.Tensor) and r.is_floating_point():
            o64, r64 = o.detach().double(), r.detach().double()
            mask = torch.isfinite(r64) & torch.isfinite(o64)
            num += float(((o64 - r64)[mask] ** 2).sum())
            den += float((r64[mask] ** 2).sum())
    return (num ** 0.5) / max(den ** 0.5, 1e-30)


def centered_relative_error(out, ref) -> float:
    """Relative error after removing each tensor's mean: catches constant outputs on flat references."""
    num = den = 0.0
    for o, r in zip(_flatten(out), _flatten(ref)):
        if isinstance(r, torch.Tensor) and r.is_floating_point():
            o64, r64 = o.detach().double(), r.detach().double()
            o64, r64 = o64 - o64.mean(), r64 - r64.mean()
            num += float(((o64 - r64) ** 2).sum())
            den += float((r64 ** 2).sum())
    return (num ** 0.5) / max(den ** 0.5, 1e-30)


def degenerate_reasons(ref, atol: float, rtol: float) -> list[str]:
    """Why this reference output is too weak a test: all-zeros or a constant would pass the tolerance."""
    zeros = [torch.zeros_like(t.detach()) if isinstance(t, torch.Tensor) else t for t in _flatten(ref)]
    means = [torch.full_like(t, float(t.detach().double().mean())) if isinstance(t, torch.Tensor) and t.is_floating_point()
             else t for t in _flatten(ref)]
    out = []
    if not compare_outputs(zeros, _flatten(ref), atol, rtol)[0]:
        out.append("an all-zeros output passes the tolerance (reference is near zero)")
    if not compare_outputs(means, _flatten(ref), atol, rtol)[0]:
        out.append("a constant (mean) output passes the tolerance (reference is near constant)")
    return out
