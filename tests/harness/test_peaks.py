"""harness.peaks: which limit a latency is measured against, and reading peaks given on a command line."""

from __future__ import annotations

import pytest

from harness.config import HardwarePeaks
from harness.peaks import compute_peak, fraction_of_limit, parse_peak_tflops


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


def _h100() -> HardwarePeaks:
    """The peaks every path hands the harness on an H100: its name string through the card identity."""
    from agent_client.card import card_for

    return HardwarePeaks.from_dict(card_for("NVIDIA H100 80GB HBM3", 85_031_714_816).hardware_peaks())


def test_fp32_matmul_is_compute_bound():
    """KernelBench's fp32 4096^3 matmul (1/1) at 1.84 ms on an H100: 75 TFLOP/s against a float32 limit of
    max(67, 494.5 / 3) TFLOP/s, 45% of the compute limit; its 192 MiB move at 2% of the memory limit."""
    flops, nbytes = 2 * 4096**3, 3 * 4096 * 4096 * 4
    frac, kind = fraction_of_limit(nbytes, flops, "float32", 1.84, _h100())
    assert kind == "compute" and frac == pytest.approx(flops / 1.84e-3 / (494.5e12 / 3))
    # a 3xTF32 kernel ten times faster still is a timer escape
    assert fraction_of_limit(nbytes, flops, "float32", 0.184, _h100())[0] > 1.05


def _verdict(tmp_path, latency_ms: float, bytes_moved: int, peaks: HardwarePeaks | None, measured_bw=None,
             flops: int = 0):
    """The verdict the harness builds from a worker's passing result with this timing (harness/jobs.py)."""
    from harness import EvalConfig, load_spec
    from harness.jobs import build_verdict

    path = tmp_path / "94_MSELoss.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
                    "        return torch.mean((a - b) ** 2)\n\n\ndef get_inputs():\n    return [torch.rand(8), "
                    "torch.rand(8)]\n\n\ndef get_init_inputs():\n    return []\n")
    timed = {"bytes_moved": bytes_moved, "flops": flops, "flops_dtype": "float32", "eager": {"median_ms": 3.0}}
    result = {"status": "passed", "timing": {"default": {"median_ms": latency_ms, "p20_ms": latency_ms,
                                                          "p80_ms": latency_ms, "n": 10}}}
    profile = {"timed": {"default": timed}, "bandwidth_bytes_per_s": measured_bw}
    return build_verdict(result, load_spec(path), "", "triton", "cuda:0", EvalConfig(), peaks, profile)


def test_the_plausibility_ceiling_is_the_nominal_peak(tmp_path):
    """KernelBench's MSELoss (1/94) at its published size: 8.59 GB read in 2.74 ms, 3.13 TB/s on an H100 whose
    copy measures ~3.0 TB/s. Against the card's nominal 3.35 TB/s it is 94% of the limit and passes; a kernel
    faster than 1.05 x the nominal peak is a timer escape."""
    nbytes = 8589934596
    honest = _verdict(tmp_path, 2.74, nbytes, _h100())
    assert honest.passed and honest.limit_kind == "memory" and honest.fraction_of_limit == pytest.approx(0.936, abs=1e-3)
    limits = honest.diagnostics["limits"]
    assert limits["memory_limit"] == "3350 GB/s nominal" and limits["ceiling"]["memory"] == 1.05
    assert limits["card"] == "NVIDIA H100 SXM5 80GB" and "h100.yaml" in limits["source"]
    escaped = _verdict(tmp_path, 2.74 / 1.2, nbytes, _h100())
    assert escaped.status.value == "rejected" and "at most 1.05x is plausible" in escaped.reasons[0]


def test_fewer_flops_than_the_reference_is_judged_by_bytes(tmp_path):
    """KernelBench 2/18 (a linear layer summed over its outputs) at its published size: the reference counts
    137 GFLOPs, the lowering multiplies x by the weight's column sums instead and moves 33.6 MB in 0.194 ms. Past
    the compute peak at the reference's FLOPs it is honest; the bytes, which every candidate moves, still catch a
    timer escape."""
    nbytes, flops = 33558528, 137438953472
    honest = _verdict(tmp_path, 0.1942, nbytes, _h100(), flops=flops)
    assert honest.passed and honest.limit_kind == "memory"
    assert honest.fraction_of_limit == pytest.approx(nbytes / 0.1942e-3 / 3.35e12, rel=1e-3)
    assert "algebraic rewrite" in honest.diagnostics["fewer_flops_than_reference"]
    escaped = _verdict(tmp_path, 0.005, nbytes, _h100(), flops=flops)
    assert escaped.status.value == "rejected" and "memory limit" in escaped.reasons[0]
    within = _verdict(tmp_path, 2.0, nbytes, _h100(), flops=flops)  # under the compute peak: judged by FLOPs
    assert within.passed and within.limit_kind == "compute" and "fewer_flops_than_reference" not in within.diagnostics


def test_a_device_without_facts_is_judged_by_a_measured_copy_with_a_wider_margin(tmp_path):
    """No facts for the card: the measured copy is the memory limit, passed by honest read-only kernels, so the
    ceiling above it is wider; the compute limit is said to be unknown."""
    honest = _verdict(tmp_path, 2.74, 8589934596, HardwarePeaks(), measured_bw=2.97e12)
    assert honest.passed and honest.fraction_of_limit == pytest.approx(1.0556, abs=1e-3)  # over 1.05 of a copy
    limits = honest.diagnostics["limits"]
    assert limits["memory_limit"] == "2970 GB/s measured device copy" and limits["ceiling"]["memory"] == 1.25
    assert limits["compute_limit"].startswith("unknown")
    assert _verdict(tmp_path, 2.74 / 1.5, 8589934596, HardwarePeaks(), measured_bw=2.97e12).status.value == "rejected"


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
