"""benchmarks/bench_library.py's --tunables reader: a sweep file's best configs, or a plain spec -> overrides map."""

from __future__ import annotations

import pytest

from benchmarks.bench_library import tunables_of


def test_sweep_best_gives_the_config_alone():
    sweep = {"best": {"log_softmax_vocab": {"family": "log_softmax", "config": {"COOP_CHUNK": 4096},
                                            "latency_ms": 0.48, "gbps": 3449.7}}}
    assert tunables_of(sweep) == {"log_softmax_vocab": {"COOP_CHUNK": 4096}}


def test_plain_map_is_taken_as_it_is():
    assert tunables_of({"softmax_wide_rows": {"BLOCK_LOOP": 8192}}) == {"softmax_wide_rows": {"BLOCK_LOOP": 8192}}


def test_default_peaks_are_the_cards_nominal_facts(monkeypatch):
    """The library run's limits are the nominal peaks of the card the device is (agent_client/card.py), as for
    sessions and suites; numbers given on the command line replace them."""
    from agent_client import card as card_module
    from benchmarks.bench_library import run_peaks

    monkeypatch.setattr(card_module, "read_device", lambda device: ("NVIDIA H200", 150_109_880_320))
    peaks, card = run_peaks("cuda:0", None, "")
    assert card.short_id == "h200" and peaks.memory_bandwidth_bytes_per_s == 4.8e12
    assert peaks.flops_per_s["bfloat16"] == 989.5e12 and peaks.flops_per_s["tf32"] == 494.5e12
    given, _ = run_peaks("cuda:0", 4250.0, "bfloat16=796")
    assert given.memory_bandwidth_bytes_per_s == 4.25e12 and given.flops_per_s == {"bfloat16": 796e12}
    assert run_peaks("cpu", None, "")[0].memory_bandwidth_bytes_per_s is None


def test_compute_bound_rows_name_their_limit():
    """A GEMM row: its share of the matmul rate, and torch.compile's by the same rule; the table says so."""
    from benchmarks.bench_library import REPO, Task, markdown_table, row_of
    from harness import HardwarePeaks, Status, Verdict

    spec = REPO / "corpus" / "kernels" / "gemm_epilogue" / "specs" / "linear_gelu_bf16_4096.py"
    flops, nbytes = 2 * 4096**3, 4 * 4096 * 4096 * 2
    verdict = Verdict(status=Status.passed, reasons=[], latency_ms=0.2, eager_ms=0.25, compile_ms=0.22,
                      speedup_vs_eager=1.25, speedup_vs_compile=1.1, fraction_of_limit=flops / 0.2e-3 / 796e12,
                      limit_kind="compute", bytes_moved=nbytes, flops=flops,
                      diagnostics={"baselines": {"default": {"flops_dtype": "bfloat16"}}})
    row = row_of(Task("gemm_epilogue", spec, ""), verdict, HardwarePeaks(4.25e12, {"bfloat16": 796e12}))
    assert row["tflops"] == pytest.approx(flops / 0.2e-3 / 1e12)
    assert row["compile_fraction_of_limit"] == pytest.approx(flops / 0.22e-3 / 796e12)
    line = markdown_table([row]).splitlines()[2]
    assert f"{100 * flops / 0.2e-3 / 796e12:.0f}% compute" in line
    assert f"{100 * flops / 0.22e-3 / 796e12:.0f}% compute" in line
