"""harness.peaks: which limit a latency is measured against, and reading peaks given on a command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import HardwarePeaks
from harness.peaks import compute_peak, fraction_of_limit, parse_peak_tflops

H200_FACTS = Path(__file__).resolve().parents[2] / "corpus" / "accelerators" / "h200.yaml"


def test_float32_limit_is_the_faster_of_fp32_and_a_third_of_tf32():
    flops = {"float32": 51e12, "tf32": 406e12, "bfloat16": 796e12}
    assert compute_peak("float32", flops) == pytest.approx(406e12 / 3)
    assert compute_peak("float32", {"float32": 51e12, "tf32": 90e12}) == 51e12  # tf32 / 3 slower: fp32 stays
    assert compute_peak("float32", {"float32": 51e12}) == 51e12
    assert compute_peak("float32", {"tf32": 406e12}) == pytest.approx(406e12 / 3)
    assert compute_peak("bfloat16", flops) == 796e12 and compute_peak("tf32", flops) == 406e12
    assert compute_peak("float16", flops) is None and compute_peak(None, flops) is None


def test_the_higher_share_names_the_limit():
    peaks = HardwarePeaks(4.25e12, {"bfloat16": 796e12})
    # a 4096^3 bf16 GEMM (137 GFLOP, 96 MiB) in 0.199 ms: 87% of the matmul rate, 12% of the copy rate
    frac, kind = fraction_of_limit(3 * 4096 * 4096 * 2, 2 * 4096**3, "bfloat16", 0.199, peaks)
    assert kind == "compute" and frac == pytest.approx(2 * 4096**3 / 0.199e-3 / 796e12)
    frac, kind = fraction_of_limit(2 * 2**30, 2**30, "bfloat16", 1.0, peaks)  # a copy-like kernel
    assert kind == "memory" and frac == pytest.approx(2 * 2**30 / 1e-3 / 4.25e12)
    assert fraction_of_limit(None, None, None, 1.0, HardwarePeaks()) == (None, None)


def test_fp32_tensor_core_gemm_is_not_taken_for_a_timer_escape():
    """The peaks an agent session uses on the H200 (its facts file). Our 3xTF32 fp32 GEMM runs 4096^3 in
    1.796 ms (library-h200-all-20261201T105540Z.json), 76.5 TFLOP/s: 1.5x the SIMT fp32 rate alone, which made
    the escape check (> 1.05 of the limit) reject it; a kernel ten times faster still is rejected."""
    from agent_client.session.evaluator import peaks_for_device
    from kb_server.facts import load_facts_file

    peaks = HardwarePeaks.from_dict(peaks_for_device(load_facts_file(H200_FACTS).peaks(), "cuda:0"))
    flops, nbytes = 2 * 4096**3, 3 * 4096 * 4096 * 4
    frac, kind = fraction_of_limit(nbytes, flops, "float32", 1.7964, peaks)
    assert kind == "compute" and 0.5 < frac < 0.6
    assert fraction_of_limit(nbytes, flops, "float32", 0.17964, peaks)[0] > 1.05


@pytest.mark.parametrize("text", ["bfloat16=796,tf32=406", " bfloat16 = 796 , ", "float32=51.5"])
def test_parse_peak_tflops(text):
    parsed = parse_peak_tflops(text)
    assert parsed and all(v > 1e12 for v in parsed.values())
    assert parse_peak_tflops("bfloat16=796,tf32=406") == {"bfloat16": 796e12, "tf32": 406e12}
    assert parse_peak_tflops("") == {}


@pytest.mark.parametrize("bad", ["bfloat16", "bfloat16=fast", "=796", "tf32=0", "tf32=-3", "tf32=nan"])
def test_parse_peak_tflops_names_the_bad_part(bad):
    with pytest.raises(ValueError, match="DTYPE=TFLOPS") as info:
        parse_peak_tflops(f"bfloat16=796,{bad}")
    assert repr(bad) in str(info.value)
