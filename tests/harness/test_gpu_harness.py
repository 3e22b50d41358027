"""GPU checks of the harness (marker gpu; skipped without CUDA). Run on the GPU box:
    python3 -m pytest -m gpu tests/harness -q                 (all, ~1 min)
    python3 -m pytest -m "gpu and not slow" tests/harness -q  (what benchmarks/gpu/harness.sh runs)
"""

from __future__ import annotations

import statistics

import pytest
import torch
from harness_helpers import REPO, SPECS, candidate

from harness import EvalConfig, Status, WorkerPool, evaluate

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

ROW_SOFTMAX = REPO / "examples" / "specs" / "row_softmax.py"
FAST = EvalConfig(max_timing_s=0.3, time_compile_baseline=False, timeout_s=180)


def test_honest_triton_on_gpu():
    verdict = evaluate(ROW_SOFTMAX, candidate("honest_softmax"), device="cuda:0", config=FAST)
    assert verdict.status is Status.passed, verdict.reasons
    assert verdict.diagnostics["timing_method"] == "cuda_events"
    assert 0 < verdict.latency_p20_ms <= verdict.latency_ms <= verdict.latency_p80_ms
    assert verdict.eager_ms > 0 and verdict.speedup_vs_eager == pytest.approx(verdict.eager_ms / verdict.latency_ms)
    assert verdict.limit_kind == "memory" and 0 < verdict.fraction_of_limit <= 1.05


@pytest.mark.slow
def test_torch_compile_baseline_on_gpu():
    verdict = evaluate(ROW_SOFTMAX, candidate("honest_softmax"), device="cuda:0",
                       config=EvalConfig(max_timing_s=0.3, timeout_s=240))
    assert verdict.status is Status.passed, verdict.reasons
    assert verdict.compile_ms > 0, verdict.diagnostics.get("compile_baseline_error")
    assert verdict.speedup_vs_compile == pytest.approx(verdict.compile_ms / verdict.latency_ms)


def test_illegal_address_then_pass_in_one_pool():
    with WorkerPool(["cuda:0"], config=FAST) as pool:
        crash = pool.evaluate(SPECS / "tiny_softmax.py", candidate("oob_write"))
        after = pool.evaluate(SPECS / "tiny_softmax.py", candidate("honest_softmax"))
    assert crash.status in (Status.illegal_memory_access, Status.crashed), crash.reasons
    assert after.status is Status.passed, after.reasons


@pytest.mark.parametrize(("name", "word"), [
    ("side_stream", "side stream"),  # caught at run time too, static checks off
    ("monkeypatch_event", "monkey-patching"),
    ("calls_torch_softmax", "aten._softmax"),
    ("mutates_input", "modified"),
])
def test_runtime_checks_on_gpu(name, word):
    config = EvalConfig(max_timing_s=0.3, time_compile_baseline=False, timeout_s=180, static_checks=False)
    verdict = evaluate(SPECS / "tiny_softmax.py", candidate(name), device="cuda:0", config=config)
    assert verdict.status is Status.rejected and word in " ".join(verdict.reasons), verdict.reasons


def test_timing_close_to_do_bench():
    import triton.testing

    from harness.timing import time_callable

    x = torch.randn(1 << 26, device="cuda:0")
    fn = lambda t: t.clone()
    config = EvalConfig(warmup=10, min_reps=30, max_timing_s=0.5, target_rse=0.002)
    ours = statistics.median(time_callable(fn, lambda: [x.clone()], "cuda:0", config).median_ms for _ in range(3))
    ref = triton.testing.do_bench(lambda: fn(x), warmup=25, rep=100, return_mode="median")
    assert abs(ours / ref - 1) < 0.05, (ours, ref)
