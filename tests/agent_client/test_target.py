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


def test_the_target_on_its_own_device_gives_its_peaks():
    peaks = target_peaks(FACTS["h200"], FACTS, "cuda:0", device_name="NVIDIA H200")
    assert peaks["memory_bandwidth_bytes_per_s"] == FACTS["h200"].peaks()["memory_bandwidth_bytes_per_s"]
    assert peaks["flops_per_s"]["bfloat16"] > 0


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
