"""The harness as the session sees it: candidate source in, verdict dict out, never an exception.

Usage: evaluate = HarnessEvaluator(spec_path, backend="triton", device="cpu", eval_options={...}, peaks={...})
       verdict = evaluate(code)      # harness Verdict.to_dict(); {"status": "eval_error", ...} if the harness broke

The harness runs each candidate in its own worker process (timeout, memory cap, private channel),
so calling it from several threads evaluates candidates concurrently.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path

from agent_client.session.records import stand_in_verdict

# AcceleratorFacts.peaks() keys -> the harness's dtype names
_DTYPE_NAMES = {"fp64": "float64", "fp32": "float32", "tf32": "tf32", "bf16": "bfloat16", "fp16": "float16",
                "fp8": "float8_e4m3fn", "int8": "int8"}


def peaks_for_device(facts_peaks: dict | None, device: str) -> dict:
    """HardwarePeaks fields from the target's facts on a GPU; empty on CPU (the harness measures then)."""
    if not facts_peaks or not device.startswith("cuda"):
        return {}
    flops = {}
    for key, value in facts_peaks.items():
        if key.endswith("_flops_per_s"):
            dtype = key.removesuffix("_flops_per_s")
            flops[_DTYPE_NAMES.get(dtype, dtype)] = value
    return {"memory_bandwidth_bytes_per_s": facts_peaks.get("memory_bandwidth_bytes_per_s"), "flops_per_s": flops}


class HarnessEvaluator:
    def __init__(self, spec_path: Path | str, backend: str, device: str, eval_options: dict | None = None,
                 peaks: dict | None = None):
        self.spec_path = Path(spec_path)
        self.backend = backend
        self.device = device
        self.eval_options = dict(eval_options or {})
        self.peaks = dict(peaks or {})
        if device == "cpu":
            os.environ.setdefault("TRITON_INTERPRET", "1")  # the workers inherit it

    def __call__(self, code: str) -> dict:
        try:
            from harness import EvalConfig, HardwarePeaks, evaluate

            config = EvalConfig.from_dict(self.eval_options)
            peaks = HardwarePeaks.from_dict(self.peaks)
            verdict = evaluate(self.spec_path, code, backend=self.backend, device=self.device,
                               config=config, peaks=peaks)
            return verdict.to_dict()
        except Exception as exc:  # noqa: BLE001 - the judge itself failed: record it, never kill the session
            tail = traceback.format_exc(limit=3)[-1500:]
            return stand_in_verdict("eval_error", [f"the harness failed on this candidate: {exc!r}", tail])


def default_eval_options(device: str) -> dict:
    """Harness settings for a device: the CPU interpreter gets the small CI settings, compile skipped."""
    if device.startswith("cuda"):
        return {}
    from harness import EvalConfig

    return EvalConfig.for_cpu_tests().to_dict()
