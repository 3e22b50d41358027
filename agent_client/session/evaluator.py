"""The harness as the session sees it: candidate source in, verdict dict out, never an exception.

Usage: evaluate = HarnessEvaluator(spec_path, backend="triton", device="cpu", eval_options={...}, peaks={...})
       verdict = evaluate(code)      # harness Verdict.to_dict(); {"status": "eval_error", ...} if the harness broke
       evaluate.close()              # stops the worker pool

The harness runs each candidate in its own worker process (timeout, memory cap, private channel). `peaks` are
HardwarePeaks fields: a session's target card's nominal peaks (agent_client/target.py), {} to have the
harness measure the copy bandwidth (the compute limit then unknown), or None (the default) for the nominal
peaks of the card the device is (agent_client/card.py).
With `pool=True` (the default) one harness executor serves the whole session: a WorkerPool on this host's
`devices` (one timing worker each), or, given `ray_address`, a RayPool on that cluster. The spec's
baselines (eager, torch.compile) are measured once per device kind and cached on disk, timing is
serialised per device, and `compile_workers` processes compile candidates in parallel; the session's
evaluation threads wait on it. With `pool=False` each call is a one-shot harness.evaluate. When the
harness is stopped (Ctrl-C, SIGTERM) an evaluation raises HarnessStopped, so its node stays pending for
`kkb tune --resume`; `close(kill=True)` stops every worker at once.
"""

from __future__ import annotations

import os
import threading
import traceback
from pathlib import Path

from agent_client.session.records import stand_in_verdict


def card_peaks_of(device: str) -> dict:
    """HardwarePeaks fields of the card `device` is (empty on the CPU, or for a card the facts do not know)."""
    if not device.startswith("cuda"):
        return {}
    from agent_client.card import card_peaks

    return card_peaks(device).hardware_peaks()


class HarnessEvaluator:
    def __init__(self, spec_path: Path | str, backend: str, device: str, eval_options: dict | None = None,
                 peaks: dict | None = None, pool: bool = True, compile_workers: int = 0,
                 devices: list[str] | None = None, ray_address: str | None = None):
        self.spec_path = Path(spec_path)
        self.backend = backend
        self.device = device
        self.devices = list(devices or [device])
        self.ray_address = ray_address
        self.eval_options = dict(eval_options or {})
        self.peaks = dict(peaks) if peaks is not None else card_peaks_of(device)
        self.use_pool = pool
        self.compile_workers = compile_workers
        self._pool = None
        self._lock = threading.Lock()
        if device == "cpu":
            os.environ.setdefault("TRITON_INTERPRET", "1")  # the workers inherit it

    def _get_pool(self):
        from harness import EvalConfig, HardwarePeaks
        from harness.executor import open_executor

        with self._lock:
            if self._pool is None:
                self._pool = open_executor(self.devices, EvalConfig.from_dict(self.eval_options),
                                           HardwarePeaks.from_dict(self.peaks), compile_workers=self.compile_workers,
                                           ray_address=self.ray_address)
            return self._pool

    def open(self) -> None:
        """Make the executor now and check that the spec fits its device: an unreachable Ray cluster
        (ConnectionError) or a spec too large for the device (SpecTooLarge, with the estimate) is an
        error before the session starts."""
        if self.use_pool:
            self._get_pool().check_fits(self.spec_path)

    def __call__(self, code: str) -> dict:
        from harness.process import HarnessStopped

        try:
            from harness import EvalConfig, HardwarePeaks, evaluate

            if self.use_pool:
                return self._get_pool().evaluate(self.spec_path, code, self.backend).to_dict()
            config = EvalConfig.from_dict(self.eval_options)
            peaks = HardwarePeaks.from_dict(self.peaks)
            verdict = evaluate(self.spec_path, code, backend=self.backend, device=self.device,
                               config=config, peaks=peaks)
            return verdict.to_dict()
        except HarnessStopped:
            raise  # no verdict: the node stays pending, and a resumed session evaluates it
        except Exception as exc:  # noqa: BLE001 - the judge itself failed: record it, never kill the session
            tail = traceback.format_exc(limit=3)[-1500:]
            return stand_in_verdict("eval_error", [f"the harness failed on this candidate: {exc!r}", tail])

    def close(self, kill: bool = False) -> None:
        """Stop the pool: after the running evaluations (default), or at once (kill: every worker)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate() if kill else pool.close()


def default_eval_options(device: str) -> dict:
    """Harness settings for a device: the CPU interpreter gets the small CI settings, compile skipped, and
    the time limit derived from the reference (harness/limits.py) as on a GPU."""
    if device.startswith("cuda"):
        return {}
    from harness import EvalConfig

    return {**EvalConfig.for_cpu_tests().to_dict(), "timeout_s": None}
