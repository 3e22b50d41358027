"""The harness as the session sees it: candidate source in, verdict dict out, never an exception.

Usage: evaluate = HarnessEvaluator(spec_path, backend="triton", device="cpu", eval_options={...}, peaks={...})
       verdict = evaluate(code)      # harness Verdict.to_dict(); {"status": "eval_error", ...} if the harness broke
       evaluate.close()              # stops the worker pool

The harness runs each candidate in its own worker process (timeout, memory cap, private channel).
With `pool=True` (the default) one harness.WorkerPool serves the whole session: the spec's baselines
(eager, torch.compile) are measured once, timing is serialised per device, and `compile_workers`
processes compile candidates in parallel; the session's evaluation threads wait on it. With
`pool=False` each call is a one-shot harness.evaluate.
"""

from __future__ import annotations

import os
import threading
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
                 peaks: dict | None = None, pool: bool = True, compile_workers: int = 0):
        self.spec_path = Path(spec_path)
        self.backend = backend
        self.device = device
        self.eval_options = dict(eval_options or {})
        self.peaks = dict(peaks or {})
        self.use_pool = pool
        self.compile_workers = compile_workers
        self._pool = None
        self._lock = threading.Lock()
        if device == "cpu":
            os.environ.setdefault("TRITON_INTERPRET", "1")  # the workers inherit it

    def _get_pool(self):
        from harness import EvalConfig, HardwarePeaks, WorkerPool

        with self._lock:
            if self._pool is None:
                self._pool = WorkerPool([self.device], config=EvalConfig.from_dict(self.eval_options),
                                        peaks=HardwarePeaks.from_dict(self.peaks),
                                        compile_workers=self.compile_workers)
            return self._pool

    def __call__(self, code: str) -> dict:
        try:
            from harness import EvalConfig, HardwarePeaks, evaluate

            if self.use_pool:
                return self._get_pool().evaluate(self.spec_path, code, self.backend).to_dict()
            config = EvalConfig.from_dict(self.eval_options)
            peaks = HardwarePeaks.from_dict(self.peaks)
            verdict = evaluate(self.spec_path, code, backend=self.backend, device=self.device,
                               config=config, peaks=peaks)
            return verdict.to_dict()
        except Exception as exc:  # noqa: BLE001 - the judge itself failed: record it, never kill the session
            tail = traceback.format_exc(limit=3)[-1500:]
            return stand_in_verdict("eval_error", [f"the harness failed on this candidate: {exc!r}", tail])

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def default_eval_options(device: str) -> dict:
    """Harness settings for a device: the CPU interpreter gets the small CI settings, compile skipped."""
    if device.startswith("cuda"):
        return {}
    from harness import EvalConfig

    return EvalConfig.for_cpu_tests().to_dict()
