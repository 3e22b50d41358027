"""GPU checks of the harness (marker gpu; skipped without CUDA). Run on a CUDA machine:
    python3 -m pytest -m gpu tests/harness -q                 (all, ~1 min)
    python3 -m pytest -m "gpu and not slow" tests/harness -q  (what benchmarks/gpu/harness.sh runs)
"""

from __future__ import annotations

import statistics

import pytest
import torch

from harness import EvalConfig, HardwarePeaks, Status, WorkerPool, evaluate
from harness.memory import CONTEXT_BYTES
from harness.peaks import fraction_of_limit
from tests.harness.harness_helpers import REPO, SPECS, candidate

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


LIBRARY = REPO / "corpus" / "kernels"


def card_peaks() -> HardwarePeaks:
    """The nominal peaks of the card this GPU is (agent_client/card.py), as every path hands them over."""
    from agent_client.card import card_peaks as lookup

    card = lookup("cuda:0")
    if not card.compute_limit_known:
        pytest.skip(f"no facts file describes {card.device_name!r}: its compute limit is unknown")
    return HardwarePeaks.from_dict(card.hardware_peaks())


def test_fp32_tensor_core_gemm_is_judged_against_a_third_of_tf32():
    """Our 3xTF32 GEMM (fp32-accurate) passes against the card's peaks at a share of tf32 / 3 (compute-bound);
    judged by the SIMT fp32 rate alone its share would be tf32 / 3 / fp32 times larger (2.5x on an H100)."""
    peaks = card_peaks()
    spec = LIBRARY / "gemm_epilogue" / "specs" / "linear_gelu_fp32_4096.py"
    source = (LIBRARY / "gemm_epilogue" / "kernel.py").read_text()
    config = EvalConfig(max_timing_s=0.3, time_compile_baseline=False, timeout_s=240, trials=1)
    judged = evaluate(spec, source, device="cuda:0", config=config, peaks=peaks)
    assert judged.status is Status.passed, judged.reasons
    assert judged.limit_kind == "compute" and 0.3 < judged.fraction_of_limit < 1.0
    simt, _ = fraction_of_limit(judged.bytes_moved, judged.flops, "float32", judged.latency_ms,
                                HardwarePeaks(peaks.memory_bandwidth_bytes_per_s, {"float32": peaks.flops_per_s["float32"]}))
    assert simt == pytest.approx(judged.fraction_of_limit * peaks.flops_per_s["tf32"] / 3 / peaks.flops_per_s["float32"])


def test_causal_attention_is_judged_on_the_flops_it_needs():
    """The causal spec's get_flops counts the keys each query sees; the reference's count (every masked score)
    would put a flash kernel that skips the masked blocks above the bf16 limit."""
    spec = LIBRARY / "attention" / "specs" / "attention_causal_bf16_d128.py"
    source = (LIBRARY / "attention" / "kernel.py").read_text()
    config = EvalConfig(max_timing_s=0.3, time_compile_baseline=False, timeout_s=240, trials=1)
    peaks = card_peaks()
    verdict = evaluate(spec, source, device="cuda:0", config=config, peaks=peaks)
    assert verdict.status is Status.passed, verdict.reasons
    assert verdict.limit_kind == "compute" and 0.3 < verdict.fraction_of_limit < 1.0
    dense = 4 * 4 * 16 * 4096 * 4096 * 128  # what FlopCounterMode counts on the reference
    assert verdict.flops < dense / 2 + dense / 4096


BIG_RELU = """import torch
from torch import nn

N = 1 << 30  # 4 GiB of fp32 input


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(N) - 0.5]


def get_init_inputs():
    return []
"""


def test_memory_returned_after_a_big_evaluation_and_estimate_bounds_the_peak(tmp_path):
    path = tmp_path / "big_relu.py"
    path.write_text(BIG_RELU)
    source = (REPO / "tests" / "harness" / "candidates" / "suite" / "1_TinyRelu.py").read_text()
    derived = EvalConfig(max_timing_s=0.3, time_compile_baseline=False)  # its time limit from the reference
    with WorkerPool(["cuda:0"], config=derived) as pool:
        verdict = pool.evaluate(path, source)
        again = pool.evaluate(path, source)  # the same worker: the first one's gigabytes were returned
    assert verdict.passed and again.passed, verdict.reasons + again.reasons
    memory = verdict.diagnostics["memory"]
    assert memory["reserved_after_bytes"] < 1 << 30  # not the tens of GB the evaluation used
    assert 4 << 30 < memory["peak_reserved_bytes"] <= memory["evaluation_bytes"]  # the estimate bounds the peak
    # and the peak bounds the estimate: no copy counted that the checks do not make (the context aside)
    assert memory["evaluation_bytes"] - CONTEXT_BYTES <= 1.2 * memory["peak_allocated_bytes"]
    assert verdict.diagnostics["time_limit_s"] < 120  # floor, compile allowance and the reference's share
