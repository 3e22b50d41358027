"""The harness judges by the target's peaks only on the target itself; otherwise the session says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client.target import TargetMismatch, device_matches, target_peaks
from kb_server.facts import load_all_facts

FACTS = load_all_facts(Path(__file__).resolve().parents[2] / "corpus" / "accelerators")


@pytest.mark.parametrize(("accelerator", "device_name", "match"), [
    ("h200", "NVIDIA H200", True),
    ("h100", "NVIDIA H100 80GB HBM3", True),
    ("a100", "NVIDIA A100-SXM4-80GB", True),
    ("mi300x", "AMD Instinct MI300X", True),
    ("h200", "NVIDIA H100 80GB HBM3", False),
    ("h100", "NVIDIA H200", False),
    ("mi325x", "AMD Instinct MI300X", False),
])
def test_device_names_match_their_accelerator_only(accelerator, device_name, match):
    assert device_matches(FACTS[accelerator], device_name) is match


def test_the_target_on_its_own_device_gives_its_nominal_peaks():
    peaks = target_peaks(FACTS["h200"], FACTS, "cuda:0", device_name="NVIDIA H200")
    # the datasheet's 4.8 TB/s, not the measured copy the facts also hold (a read-only kernel passes a copy)
    assert peaks["memory_bandwidth_bytes_per_s"] == FACTS["h200"].memory_bandwidth.value * 1e12 == 4.8e12
    assert peaks["flops_per_s"]["bfloat16"] == FACTS["h200"].peak_tflops["bf16"].value * 1e12
    assert peaks["card"] == "NVIDIA H200 SXM 141GB"


def test_a_device_of_the_same_name_but_another_memory_is_not_the_target():
    with pytest.raises(TargetMismatch, match="'NVIDIA A100-SXM4-40GB' with 42 GB"):  # not the 80 GB card's bandwidth
        target_peaks(FACTS["a100"], FACTS, "cuda:0", device_name="NVIDIA A100-SXM4-40GB", memory_bytes=42_400_000_000)


def test_another_device_is_named_instead_of_judged_by_the_wrong_peaks():
    with pytest.raises(TargetMismatch) as info:
        target_peaks(FACTS["h200"], FACTS, "cuda:0", device_name="NVIDIA H100 80GB HBM3")
    assert "'NVIDIA H100 80GB HBM3'" in str(info.value) and "--target h100" in str(info.value)
    assert "--peaks measured" in str(info.value)


def test_measured_peaks_and_the_cpu_leave_the_peaks_to_the_harness():
    assert target_peaks(FACTS["h200"], FACTS, "cuda:0", peaks="measured", device_name="NVIDIA H100") == {}
    assert target_peaks(FACTS["h200"], FACTS, "cpu") == {}
    with pytest.raises(ValueError, match="--peaks 'guess'"):
        target_peaks(FACTS["h200"], FACTS, "cuda:0", peaks="guess", device_name="NVIDIA H200")
