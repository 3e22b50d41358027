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


def test_default_peaks_are_the_h200_facts():
    """The library run's limits are the measured rates in the H200's facts file, which agent sessions use."""
    from agent_client.session.evaluator import peaks_for_device
    from benchmarks.bench_library import H200_COPY_BANDWIDTH_GBPS, H200_PEAK_TFLOPS, REPO
    from harness.peaks import parse_peak_tflops
    from kb_server.facts import load_facts_file

    facts = peaks_for_device(load_facts_file(REPO / "corpus" / "accelerators" / "h200.yaml").peaks(), "cuda:0")
    parsed = parse_peak_tflops(H200_PEAK_TFLOPS)
    assert parsed and parsed == {k: facts["flops_per_s"][k] for k in parsed}
    assert H200_COPY_BANDWIDTH_GBPS * 1e9 == facts["memory_bandwidth_bytes_per_s"]


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
