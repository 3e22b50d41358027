"""The parts of one evaluation that every executor shares: the job sent to a worker, the checks made before
any worker runs, and the Verdict built from a worker's result.

Usage: early = precheck(spec, source, backend, device, config)      # a Verdict, or None: run it
       job = make_job(spec, source, backend, device, config, "full", profile=profile)
       verdict = build_verdict(result, spec, source, backend, device, config, peaks, profile)
"""

from __future__ import annotations

import hashlib
import os
import uuid

from harness.backends import get_backend
from harness.config import EvalConfig, HardwarePeaks
from harness.measured import verdict_measurements
from harness.peaks import compute_peak, fraction_of_limit
from harness.spec import Spec
from harness.static_checks import run_static_checks
from harness.verdict import Status, Verdict


class BackendUnavailable(ValueError):
    """The backend cannot run on this machine/device; the message says why."""


def default_device() -> str:
    import torch

    return "cuda:0" if torch.cuda.is_available() else "cpu"


def candidate_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def make_job(spec: Spec, source: str | None, backend: str, device: str, config: EvalConfig, mode: str,
             profile: dict | None = None, peaks: HardwarePeaks | None = None) -> dict:
    need_bw = device.startswith("cuda") and (peaks is None or peaks.memory_bandwidth_bytes_per_s is None)
    return {
        "job_id": uuid.uuid4().hex[:12], "mode": mode, "spec_path": str(spec.path), "backend": backend,
        "device": device, "config": config.to_dict(), "candidate_source": source,
        "candidate_hash": candidate_hash(source or ""), "profile": profile, "need_bandwidth": need_bw,
        # never seen by the candidate: only the worker's local variables hold it
        "secret_seed": int.from_bytes(os.urandom(8), "little"),
    }


def _status(name: str) -> tuple[Status, list[str]]:
    if name == "harness_error":
        return Status.crashed, ["(harness error: not the candidate's fault)"]
    return Status(name), []


def limits_used(peaks: HardwarePeaks | None, profile: dict, flops_dtype: str | None,
                config: EvalConfig) -> tuple[HardwarePeaks, dict]:
    """The peaks a verdict is judged by (a measured copy where no bandwidth was given) and what to say of
    them: the card, each limit with its source, and the timer-escape ceiling of each kind."""
    peaks = peaks or HardwarePeaks()
    given_bw = peaks.memory_bandwidth_bytes_per_s
    measured = profile.get("bandwidth_bytes_per_s") if given_bw is None else None
    if measured:
        peaks = HardwarePeaks(measured, peaks.flops_per_s, peaks.card, peaks.source)
    if given_bw:
        memory = f"{given_bw / 1e9:.0f} GB/s nominal"
    elif measured:
        memory = f"{measured / 1e9:.0f} GB/s measured device copy"
    else:
        memory = "unknown"
    rate = compute_peak(flops_dtype, peaks.flops_per_s)
    if rate:
        compute = f"{rate / 1e12:.4g} TFLOP/s nominal {flops_dtype}"
    elif peaks.flops_per_s:
        compute = f"unknown for {flops_dtype} (the card's facts give {', '.join(sorted(peaks.flops_per_s))})"
    else:
        compute = "unknown (no compute peaks for this device)"
    return peaks, {
        "card": peaks.card, "source": peaks.source or ("given" if given_bw or peaks.flops_per_s else "measured"),
        "memory_limit": memory, "compute_limit": compute,
        "ceiling": {"memory": config.max_fraction_of_measured_copy if measured else config.max_fraction_of_limit,
                    "compute": config.max_fraction_of_limit},
    }


def build_verdict(result: dict, spec: Spec, source: str, backend: str, device: str, config: EvalConfig,
                  peaks: HardwarePeaks | None, profile: dict | None) -> Verdict:
    status, extra = _status(result.get("status", "crashed"))
    reasons = list(result.get("reasons") or []) + (extra if status is not Status.passed else [])
    diagnostics = dict(result.get("diagnostics") or {})
    profile = profile or result.get("profile") or {}
    timed = profile.get("timed", {}).get("default", {})
    eager = (timed.get("eager") or {}).get("median_ms")
    compiled = (timed.get("compile") or {}).get("median_ms")
    if timed.get("compile_error"):
        diagnostics["compile_baseline_error"] = timed["compile_error"]
    timing = (result.get("timing") or {}).get("default") or {}
    latency = timing.get("median_ms")
    diagnostics["timing"] = result.get("timing") or {}
    diagnostics["timing_method"] = timing.get("method") or (timed.get("eager") or {}).get("method")
    diagnostics["baselines"] = {k: v for k, v in profile.get("timed", {}).items()}
    peaks, limits = limits_used(peaks, profile, timed.get("flops_dtype"), config)
    diagnostics["limits"] = limits
    frac, kind = fraction_of_limit(timed.get("bytes_moved"), timed.get("flops"), timed.get("flops_dtype"),
                                   latency, peaks)
    ceiling = limits["ceiling"].get(kind or "", config.max_fraction_of_limit)
    if kind == "compute" and frac is not None and frac > ceiling:
        # The FLOPs are the reference's; a candidate may need fewer (sum(x @ W^T) is x @ W summed, a product by a
        # vector), so past the compute peak the bytes, which every candidate must move, judge an escape where the
        # memory limit is known; with none known the FLOPs are all the evidence there is.
        mem_frac, mem_kind = fraction_of_limit(timed.get("bytes_moved"), None, None, latency, peaks)
        if mem_frac is not None:
            diagnostics["fewer_flops_than_reference"] = (
                f"{frac:.2f}x the compute limit at the reference's {timed.get('flops')} FLOPs: the candidate "
                "computes less than the reference does (an algebraic rewrite); judged by its bytes")
            frac, kind = mem_frac, mem_kind
            ceiling = limits["ceiling"].get(kind or "", config.max_fraction_of_limit)
    if status is Status.passed and frac is not None and frac > ceiling:
        status = Status.rejected
        reasons.append(f"implausible: {frac:.2f}x the {kind} limit ({limits[f'{kind}_limit']}; at most "
                       f"{ceiling:g}x is plausible) with {timed.get('bytes_moved')} bytes and {timed.get('flops')} "
                       f"FLOPs in {latency:.4g} ms; the timer was likely escaped")
    if status is not Status.passed and not reasons:
        reasons = [f"{status.value} (no detail from the worker)"]
    return Verdict(
        status=status, reasons=[] if status is Status.passed else reasons,
        latency_ms=latency, latency_p20_ms=timing.get("p20_ms"), latency_p80_ms=timing.get("p80_ms"),
        n_timed=int(timing.get("n") or 0), host_launch_ms=timing.get("host_ms"), eager_ms=eager, compile_ms=compiled,
        speedup_vs_eager=(eager / latency) if eager and latency else None,
        speedup_vs_compile=(compiled / latency) if compiled and latency else None,
        fraction_of_limit=frac, limit_kind=kind, bytes_moved=timed.get("bytes_moved"),
        flops=timed.get("flops"), diagnostics=diagnostics, backend=backend, device=device,
        spec_name=spec.name, candidate_hash=candidate_hash(source),
        **verdict_measurements(result, profile, status is Status.passed),
    )


def precheck(spec: Spec, source: str, backend: str, device: str, config: EvalConfig) -> Verdict | None:
    """Backend availability and static checks: a Verdict when the candidate need not run at all."""
    be = get_backend(backend)
    why = be.available(device)
    if why:
        raise BackendUnavailable(f"backend {backend!r} on {device}: {why}")
    if not config.static_checks:
        return None
    reasons, syntax_ok = run_static_checks(source, be)
    if not reasons:
        return None
    status = Status.rejected if syntax_ok else Status.compile_error
    return Verdict(status=status, reasons=reasons, backend=backend, device=device, spec_name=spec.name,
                   candidate_hash=candidate_hash(source), diagnostics={"stage": "static_checks"})
