"""harness.evaluate end to end on CPU: a fresh worker per call, the Triton interpreter, the Verdict fields."""

from __future__ import annotations

import pytest

from harness import EvalConfig, Status, Verdict, WorkerPool, evaluate, profile_spec
from tests.harness.harness_helpers import SPECS, candidate


@pytest.fixture(scope="module")
def honest():
    return evaluate(SPECS / "tiny_softmax.py", candidate("honest_softmax"), backend="triton", device="cpu",
                    config=EvalConfig.for_cpu_tests())


def test_honest_triton_passes_on_every_variant(honest):
    assert honest.status is Status.passed and honest.reasons == []
    assert set(honest.diagnostics["check"]) == {"default", "odd", "wide"}
    assert honest.diagnostics["check"]["odd"]["trials"][0]["output"]["mismatch_count"] == 0


def test_check_diagnostics_per_variant(honest):
    """What the next prompt reads about the check: the variant's arguments, tolerance and the aten ops."""
    from harness.backends.base import KERNEL_ALLOWED_OPS

    default, odd = honest.diagnostics["check"]["default"], honest.diagnostics["check"]["odd"]
    assert default["kwargs"] == {} and odd["kwargs"] == {"rows": 3, "cols": 37}
    assert default["atol"] == default["rtol"] == 1e-4  # float32's entry of the table
    assert "aten.empty_like" in default["aten_ops"] and set(default["aten_ops"]) <= KERNEL_ALLOWED_OPS
    assert len(default["trials"]) == 2 and "spec_warnings" not in default


def test_verdict_carries_timing_and_baselines(honest):
    assert honest.diagnostics["timing_method"] == "wall_clock"  # marked as CPU wall-clock
    assert 0 < honest.latency_p20_ms <= honest.latency_ms <= honest.latency_p80_ms
    assert honest.n_timed >= 3 and honest.eager_ms > 0
    assert honest.speedup_vs_eager == pytest.approx(honest.eager_ms / honest.latency_ms)
    assert honest.bytes_moved == 2 * 4 * 100 * 4  # input + output of the timed (default) variant, fp32
    assert honest.compile_ms is None  # switched off for CPU tests
    assert honest.fraction_of_limit is None  # no peaks given and no measurement on CPU
    again = Verdict.from_dict(honest.to_dict())
    assert again == honest


def test_fraction_of_limit_from_given_peaks():
    from harness.config import HardwarePeaks

    verdict = evaluate(SPECS / "tiny_softmax.py", candidate("honest_softmax"), device="cpu",
                       config=EvalConfig.for_cpu_tests(check_variants=False, trials=1),
                       peaks=HardwarePeaks(memory_bandwidth_bytes_per_s=1e3))  # absurdly low peak
    assert verdict.status is Status.rejected and "implausible" in verdict.reasons[0]
    assert verdict.fraction_of_limit > 1.05 and verdict.limit_kind == "memory"


def test_static_rejection_needs_no_worker():
    verdict = evaluate(SPECS / "tiny_softmax.py", candidate("side_stream"), device="cpu",
                       config=EvalConfig.for_cpu_tests())
    assert verdict.status is Status.rejected and verdict.diagnostics["stage"] == "static_checks"


def test_syntax_error_is_compile_error():
    verdict = evaluate(SPECS / "tiny_softmax.py", "def broken(:\n", device="cpu")
    assert verdict.status is Status.compile_error and "syntax error" in verdict.reasons[0]


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        evaluate(SPECS / "tiny_softmax.py", candidate("honest_softmax"), backend="nope", device="cpu")


def test_cuda_backend_unavailable_on_cpu():
    with pytest.raises(ValueError, match="cuda backend needs"):
        evaluate(SPECS / "tiny_softmax.py", "x = 1", backend="cuda", device="cpu")


def test_compile_stage_in_its_own_process():
    config = EvalConfig.for_cpu_tests(trials=1, check_variants=False)
    with WorkerPool(["cpu"], config=config, compile_workers=1) as pool:
        bad, good = pool.evaluate_many([(SPECS / "tiny_softmax.py", candidate("triton_compile_error"), "triton"),
                                        (SPECS / "tiny_softmax.py", candidate("honest_softmax"), "triton")])
    assert bad.status is Status.compile_error and bad.diagnostics["stage"] == "compile"
    assert good.status is Status.passed


@pytest.mark.slow
def test_torch_compile_baseline_on_cpu():
    profile = profile_spec(SPECS / "suite" / "1_TinyRelu.py", device="cpu",
                           config=EvalConfig.for_cpu_tests(time_compile_baseline=True))
    timed = profile["timed"]["default"]
    assert timed["compile_error"] is None, timed["compile_error"]
    assert timed["compile"]["median_ms"] > 0 and timed["eager"]["method"] == "wall_clock"


def test_torch_backend_allows_pytorch_ops():
    source = candidate("calls_torch_softmax")  # rejected as a triton candidate, fine as a torch one
    config = EvalConfig.for_cpu_tests(trials=1)
    assert evaluate(SPECS / "tiny_softmax.py", source, backend="torch", device="cpu", config=config).passed


SPEC_TAIL = "\n\ndef get_init_inputs():\n    return []\n"


@pytest.mark.parametrize(("forward", "inputs", "said"), [
    ("return torch.nn.functional.dropout(x, 0.1, training=True)", "[torch.randn(64, 32)]",
     "gives another output when called again on the same inputs"),
    ("raise ValueError('this width is not supported')", "[torch.randn(64, 32)]",
     "the spec's own code failed, not the candidate's: faulty.py line 7 (`raise ValueError("),
    ("return x", "torch.randn(64, 32)", "get_inputs() returned a Tensor, not a list"),
])
def test_a_faulty_spec_is_named_as_the_spec_s_fault(tmp_path, forward, inputs, said):
    """A reference that cannot be judged against (random, raising, a tensor for an argument list) is the
    spec's fault, said with its file before any candidate runs; never a candidate's verdict, never a
    "harness error"."""
    spec = tmp_path / "faulty.py"
    spec.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    f"        {forward}\n\n\ndef get_inputs():\n    return {inputs}\n" + SPEC_TAIL)
    with pytest.raises((ValueError, RuntimeError)) as caught:  # a SpecError, or the profile's error naming it
        profile_spec(spec, device="cpu", config=EvalConfig.for_cpu_tests())
    assert said in str(caught.value) and str(spec) in str(caught.value), caught.value
    assert "harness error" not in str(caught.value)


def test_a_reference_with_state_between_calls_is_no_random_one(tmp_path):
    """An RNN cell that keeps its hidden state between calls gives another output on its second call, but
    built again it starts where it did: it is profiled, not refused."""
    spec = tmp_path / "stateful.py"
    spec.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                    "        super().__init__()\n        self.hidden = torch.zeros(8, 16)\n"
                    "        self.lin = nn.Linear(32, 16)\n\n    def forward(self, x):\n"
                    "        self.hidden = torch.tanh(self.lin(torch.cat((x, self.hidden), dim=1)))\n"
                    "        return self.hidden\n\n\ndef get_inputs():\n    return [torch.randn(8, 16)]\n" + SPEC_TAIL)
    profile = profile_spec(spec, device="cpu", config=EvalConfig.for_cpu_tests())
    assert profile["timed"]["default"]["eager"]["median_ms"] > 0


def test_a_cpu_worker_runs_one_torch_thread(tmp_path):
    """CPU workers side by side with a thread per core each spin against each other (eager baselines up to
    1000x slow): each runs one torch thread, and its device name says so (baselines are keyed by it)."""
    from harness.worker import device_info

    spec = tmp_path / "threads.py"
    spec.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    "        if torch.get_num_threads() != 1:\n"
                    "            raise RuntimeError(f'{torch.get_num_threads()} threads')\n"
                    "        return x * 2\n\n\ndef get_inputs():\n    return [torch.randn(8)]\n" + SPEC_TAIL)
    profile_spec(spec, device="cpu", config=EvalConfig.for_cpu_tests())
    assert device_info("cpu")["device_name"].endswith("1 thread)")


def test_a_seeded_draw_is_no_random_reference(tmp_path):
    """A forward that draws random numbers after seeding them itself moves the generator but gives the same
    output every call: the second call confirms it, and it is profiled."""
    spec = tmp_path / "seeded.py"
    spec.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    "        torch.manual_seed(7)\n        return x + torch.rand_like(x)\n\n\n"
                    "def get_inputs():\n    return [torch.randn(8)]\n" + SPEC_TAIL)
    assert profile_spec(spec, device="cpu", config=EvalConfig.for_cpu_tests())["timed"]["default"]["eager"]
