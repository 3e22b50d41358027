"""Time limits that fit the spec: a candidate's limit follows from what its reference was measured to cost.

Usage: seconds, how = candidate_timeout_s(config, profile, device, first_calls=True)

An evaluation asks of the candidate `trials` calls per checked variant and, per timed variant, the warm-up
calls and a timing loop that stops after `max_timing_s` (with at most two batches of 20 repetitions
queued past it); of the harness, per variant, model builds, fresh inputs per trial, the reference's calls,
and per timed variant the timing loop itself. The profile measured each of these for the reference
(harness/profile.py: build_s, inputs_s, the eager timing's 20th percentile). The limit is

    floor + [compile allowance] + 3 x (the harness's own work) + slack x (the candidate's calls x the
    reference's time per call)

with slack `timeout_slack` on a GPU and `interpreter_slack` on CPU (Triton's interpreter), the compile
allowance where the candidate's first calls run on a GPU (JIT compiles, autotuning), and the whole capped
at `timeout_max_s`. A hang on a spec whose reference runs in microseconds is caught after about the floor.
`EvalConfig.timeout_s` (`kkb bench --timeout`) overrides all of it.
"""

from __future__ import annotations

from harness.config import EvalConfig

HARNESS_SLACK = 3.0  # the harness's own work was measured: a busy machine may take this much longer
QUEUED_REPS = 40  # repetitions a timing loop may issue past its time cap (two batches of 20)


def _ref_s(entry: dict) -> float:
    """The reference's time per call: the 20th percentile of its eager or torch.compile timing, whichever is
    less. A busy machine inflates a 20th percentile far less than a median, and the faster form bounds what
    the work costs: on a loaded CPU eager's OpenMP threads wait on each other and a tiny op can read 10 ms,
    where its compiled form reads microseconds. Its first call where neither was timed."""
    times = [t.get("p20_ms") or t.get("median_ms") for t in (entry.get("eager") or {}, entry.get("compile") or {})]
    times = [t for t in times if t]
    return min(times) / 1e3 if times else float(entry.get("first_call_s") or 0.0)


def candidate_timeout_s(config: EvalConfig, profile: dict | None, device: str,
                        first_calls: bool = True) -> tuple[float, str]:
    """(seconds, how it was set) for one candidate's evaluation in its worker."""
    if config.timeout_s is not None:
        return float(config.timeout_s), "given (EvalConfig.timeout_s / --timeout)"
    on_gpu = device.startswith("cuda")
    floor = config.timeout_floor_s + (config.compile_allowance_s if first_calls and on_gpu else 0.0)
    timed = (profile or {}).get("timed") or {}
    checked = (profile or {}).get("checked") or {}
    if not timed:
        return floor, f"floor {floor:.0f} s (no profile of the reference)"
    slack = config.timeout_slack if on_gpu else config.interpreter_slack
    default = next(iter(timed.values()))
    ref_default = _ref_s(default)
    harness_s = calls_s = 0.0
    trials = max(1, config.trials)
    variants = list(timed.items()) + (list(checked.items()) if config.check_variants else [])
    for name, entry in variants:
        ref = _ref_s(entry) if name in timed else ref_default
        build, inputs = float(entry.get("build_s") or 0.0), float(entry.get("inputs_s") or 0.0)
        # checks: two models and the bf16-rounded reference; per trial fresh inputs, two clones, the reference
        harness_s += 3 * build + (trials + 1) * (2 * inputs + ref)
        calls_s += trials * ref
        if name in timed:
            harness_s += 2 * build + 2 * inputs + config.max_timing_s + config.warmup_ms / 1e3 + ref
            calls_s += (config.warmup + QUEUED_REPS + 1) * ref  # the settle loop counts calls by GPU time
    seconds = min(config.timeout_max_s, floor + HARNESS_SLACK * harness_s + slack * calls_s)
    return seconds, (f"{seconds:.0f} s = floor {floor:.0f} s + {HARNESS_SLACK:g} x {harness_s:.2f} s of the "
                     f"harness's work + {slack:g} x {calls_s:.3f} s of the reference's calls")


def compile_stage_timeout_s(config: EvalConfig, profile: dict | None, device: str) -> tuple[float, str]:
    """A pool's compile stage (import and one call per variant): the same rule, first calls included."""
    return candidate_timeout_s(config, profile, device, first_calls=True)
