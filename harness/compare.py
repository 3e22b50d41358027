"""Compare a candidate's output with the reference's: reasons (empty = pass) and diagnostics.

Usage: from harness.compare import compare_outputs; reasons, diag = compare_outputs(out, ref, atol, rtol)

Rules: shape and dtype must match exactly; values within |out - ref| <= atol + rtol * |ref|; NaN where the
reference is finite fails, NaN where the reference is NaN is fine; +-Inf must match exactly.

Large tensors are compared in chunks of `CHUNK_ELEMENTS` (float64 temporaries of one chunk at a time, under
1 GB, rather than ten times a 6 GB output); counts, maxima and the worst elements are the same.
"""

from __future__ import annotations

import torch

MAX_WORST = 5  # worst mismatching elements listed in diagnostics
CHUNK_ELEMENTS = 1 << 24  # elements compared at once: 128 MB per float64 temporary
# the comparison's temporaries at their peak, per element of a chunk: the two float64 copies, two float64
# working arrays and six masks (harness/memory.py counts them; tests/harness/test_memory.py measures them)
WORKSPACE_BYTES_PER_ELEMENT = 4 * 8 + 6


def _pieces(t: torch.Tensor, rows: int | None):
    """Views of `t` in row-major order: flat slices of CHUNK_ELEMENTS, or (rows) slabs along dim 0."""
    t = t.detach()
    if t.numel() == 0:
        return
    if rows is None:
        flat = t.view(-1)
        for start in range(0, flat.numel(), CHUNK_ELEMENTS):
            yield flat[start:start + CHUNK_ELEMENTS]
        return
    for start in range(0, t.shape[0], rows):
        yield t[start:start + rows]


def _rows(*tensors: torch.Tensor) -> int | None:
    """None where every tensor is contiguous (flat slices), else the rows of one slab."""
    first = tensors[0]
    if all(t.is_contiguous() for t in tensors) or first.dim() == 0 or first.numel() == 0:
        return None
    return max(1, CHUNK_ELEMENTS // max(1, first[0].numel()))


def _chunks(out: torch.Tensor, ref: torch.Tensor):
    """(offset, float64 copy of a chunk of out, float64 copy of the same chunk of ref), in row-major order.
    Contiguous tensors are cut in flat slices; otherwise in slabs of whole rows (a slab's copy, not the
    tensor's). The copies are the caller's to change in place."""
    rows = _rows(out, ref)
    start = 0
    for o, r in zip(_pieces(out, rows), _pieces(ref, rows)):
        o64 = o.reshape(-1).to(torch.float64, copy=True)
        yield start, o64, r.reshape(-1).to(torch.float64, copy=True)
        start += o64.numel()


def _chunks_of(t: torch.Tensor):
    """float64 copies of `t`'s chunks, as `_chunks` cuts them."""
    for piece in _pieces(t, _rows(t)):
        yield piece.reshape(-1).to(torch.float64, copy=True)


def _compare_chunk(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float) -> dict:
    """Counts, maxima and the worst elements of one chunk (float64 copies, changed in place)."""
    finite = torch.isfinite(o)
    finite &= torch.isfinite(r)
    r_nan = torch.isnan(r)
    o_nan = torch.isnan(o)
    nan_where_ref_finite = int((o_nan & ~r_nan).sum())
    # a non-finite pair is right when both are NaN or both the same infinity
    r_nan &= o_nan
    wrong = o != r
    wrong &= ~r_nan
    wrong &= ~finite
    del r_nan, o_nan
    diff = o.sub(r).abs_().masked_fill_(~finite, 0.0)
    work = r.abs().mul_(rtol).add_(atol)  # the tolerance, then |ref|, then the relative error
    wrong |= (diff > work) & finite
    n_bad = int(wrong.sum())
    out = {"n_bad": n_bad, "max_abs": float(diff.max()), "nan_where_ref_finite": nan_where_ref_finite, "top": []}
    torch.abs(r, out=work)
    rel_mask = work > atol
    rel_mask &= finite
    torch.div(diff, work.clamp_min_(1e-12), out=work)
    out["max_rel"] = float(work.masked_fill_(~rel_mask, 0.0).max())
    del rel_mask
    if n_bad:
        # worst first: non-finite mismatches rank above everything
        score = work.copy_(diff).masked_fill_(~finite, float("inf")).masked_fill_(~wrong, -1.0)
        values, idx = torch.topk(score, min(MAX_WORST, n_bad))
        out["top"] = [(float(v), int(i), float(o[i]), float(r[i])) for v, i in zip(values, idx)]
    return out


def _flatten(output) -> list:
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in _flatten(item)]
    if isinstance(output, dict):
        return [t for item in output.values() for t in _flatten(item)]
    return [output]


def _keys(output) -> list:
    """The keys of every dict in the output, in order: a result must name its values as the reference does."""
    if isinstance(output, (list, tuple)):
        return [k for item in output for k in _keys(item)]
    if isinstance(output, dict):
        return [list(output)] + [k for item in output.values() for k in _keys(item)]
    return []


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
    n_bad = nan_where = 0
    max_abs = max_rel = 0.0
    top: list[tuple[float, int, float, float]] = []
    for start, o, r in _chunks(out, ref):
        part = _compare_chunk(o, r, atol, rtol)
        del o, r
        n_bad += part["n_bad"]
        nan_where += part["nan_where_ref_finite"]
        max_abs, max_rel = max(max_abs, part["max_abs"]), max(max_rel, part["max_rel"])
        found = [(v, start + i, ov, rv) for v, i, ov, rv in part["top"]]
        top = sorted(top + found, key=lambda t: (-t[0], t[1]))[:MAX_WORST]  # ties: the first index first
    diag = {
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "mismatch_count": n_bad,
        "mismatch_fraction": n_bad / out.numel(),
        "numel": out.numel(),
        "nan_where_ref_finite": nan_where,
    }
    if n_bad == 0:
        return [], diag
    worst = [{"index": _index(i, tuple(out.shape)), "output": ov, "reference": rv} for _, i, ov, rv in top]
    diag["worst"] = worst
    shown = ", ".join(f"{w['index']}: got {w['output']:.6g}, expected {w['reference']:.6g}" for w in worst[:3])
    nan = diag["nan_where_ref_finite"]
    # NaN has no error to measure: said first, so the finite elements' maxima below are not read as its
    nans = f"{nan} NaN where the reference is finite (never written, or 0/0); among the finite, " if nan else ""
    reason = (f"{name}: {n_bad} of {out.numel()} elements ({100 * n_bad / out.numel():.3g}%) outside "
              f"atol={atol:g} rtol={rtol:g}; {nans}max abs err {diag['max_abs_err']:.3g}, max rel err "
              f"{diag['max_rel_err']:.3g}; worst {shown}")
    return [reason], diag


def compare_outputs(out, ref, atol: float, rtol: float, label: str = "output") -> tuple[list[str], dict]:
    """Compare nested outputs (a tensor, or tuples, lists and dicts of them) element by element."""
    if _keys(out) != _keys(ref):
        return [f"{label}: the keys {_keys(out)} differ from the reference's {_keys(ref)}"], {}
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


def _norms(out, ref) -> tuple[float, float]:
    """(||out - ref||, ||ref||) over all floating output tensors (float64, in chunks; non-finite pairs left
    out)."""
    num = den = 0.0
    for o, r in zip(_flatten(out), _flatten(ref)):
        if isinstance(r, torch.Tensor) and r.is_floating_point():
            for _, o64, r64 in _chunks(o, r):
                mask = torch.isfinite(r64)
                mask &= torch.isfinite(o64)
                o64.sub_(r64).masked_fill_(~mask, 0.0)
                r64.masked_fill_(~mask, 0.0)
                num += float(o64.square_().sum())
                den += float(r64.square_().sum())
    return num ** 0.5, den ** 0.5


def error_norm(out, ref) -> float:
    """||out - ref|| over all floating output tensors."""
    return _norms(out, ref)[0]


def relative_error(out, ref) -> float:
    """||out - ref|| / ||ref|| over all output tensors (float64, in chunks; non-finite pairs left out)."""
    num, den = _norms(out, ref)
    return num / max(den, 1e-30)


def _mean(t: torch.Tensor) -> float:
    total = 0.0
    for chunk in _chunks_of(t):
        total += float(chunk.sum())
    return total / max(1, t.numel())


def centered_relative_error(out, ref) -> float:
    """Relative error after removing each tensor's mean: catches constant outputs on flat references."""
    num = den = 0.0
    for o, r in zip(_flatten(out), _flatten(ref)):
        if isinstance(r, torch.Tensor) and r.is_floating_point():
            o_mean, r_mean = _mean(o), _mean(r)
            for _, o64, r64 in _chunks(o, r):
                o64.sub_(o_mean)
                r64.sub_(r_mean)
                o64.sub_(r64)
                num += float(o64.square_().sum())
                den += float(r64.square_().sum())
    return (num ** 0.5) / max(den ** 0.5, 1e-30)


def _constant_passes(ref: torch.Tensor, value: float, atol: float, rtol: float) -> bool:
    """Would an output filled with `value` pass the tolerance against `ref`? (chunk by chunk)"""
    if ref.numel() == 0:
        return True
    for r in _chunks_of(ref):
        if _compare_chunk(torch.full_like(r, value), r, atol, rtol)["n_bad"]:
            return False
    return True


def degenerate_reasons(ref, atol: float, rtol: float) -> list[str]:
    """Why this reference output is too weak a test: all-zeros or a constant would pass the tolerance."""
    tensors = [t for t in _flatten(ref) if isinstance(t, torch.Tensor)]
    out = []
    if all(_constant_passes(t, 0.0, atol, rtol) for t in tensors):
        out.append("an all-zeros output passes the tolerance (reference is near zero)")
    if all(_constant_passes(t, _mean(t), atol, rtol) for t in tensors if t.is_floating_point()):
        out.append("a constant (mean) output passes the tolerance (reference is near constant)")
    return out
