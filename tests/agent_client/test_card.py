"""agent_client/card.py: the card a device is, from its name and memory, and its nominal peaks from the facts
files; every path (a session, `kkb bench`, a benchmark) gets them from a device name fed through it."""

from __future__ import annotations

import pytest

from agent_client import card as card_module
from agent_client.card import card_for, identify, load_facts, slug
from harness import HardwarePeaks

FACTS = load_facts()
GB = 1e9

# (device name as torch reports it, total memory in bytes, the facts id or None)
DEVICES = [
    ("NVIDIA H100 80GB HBM3", 85.0 * GB, "h100"),
    ("NVIDIA H200", 150.1 * GB, "h200"),
    ("NVIDIA A100-SXM4-80GB", 85.1 * GB, "a100"),
    ("AMD Instinct MI300X", 205.8 * GB, "mi300x"),
    ("NVIDIA A100-SXM4-40GB", 42.4 * GB, None),  # half the memory of the 80 GB card the facts describe
    ("NVIDIA H100 PCIe", 85.0 * GB, None),  # another form factor: 2.0 TB/s, not the SXM5's 3.35
    ("NVIDIA H100 NVL", 100.0 * GB, None),  # 94 GB and NVL
    ("NVIDIA H200 NVL", 150.1 * GB, None),
    ("NVIDIA L40S", 48.3 * GB, None),  # no facts file at all
]


@pytest.mark.parametrize(("name", "memory", "expected"), DEVICES, ids=[d[0] for d in DEVICES])
def test_a_device_is_the_card_its_name_form_and_memory_say(name, memory, expected):
    assert identify(name, int(memory), FACTS) == expected


def test_known_cards_get_the_nominal_peaks_never_a_measured_copy():
    h100 = card_for("NVIDIA H100 80GB HBM3", int(85.0 * GB))
    assert (h100.card_id, h100.short_id, h100.name) == ("h100", "h100", "NVIDIA H100 SXM5 80GB")
    assert h100.memory_bandwidth_bytes_per_s == 3.35e12 and h100.compute_limit_known
    assert h100.flops_per_s["float32"] == 67e12 and h100.flops_per_s["tf32"] == 494.5e12
    h200 = card_for("NVIDIA H200", int(150.1 * GB))
    # the facts also hold the H200's measured copy (4.25 TB/s): a read-only kernel passes that, so it is no limit
    assert h200.memory_bandwidth_bytes_per_s == 4.8e12 and "extra" in FACTS["h200"]
    assert h200.hardware_peaks()["source"] == "nominal peaks of corpus/accelerators/h200.yaml"


def test_an_unknown_card_measures_and_says_its_compute_limit_is_unknown():
    l40s = card_for("NVIDIA L40S", int(48.3 * GB))
    assert l40s.card_id is None and l40s.short_id == "l40s" and not l40s.compute_limit_known
    assert l40s.memory_bandwidth_bytes_per_s is None and "compute limit is unknown" in l40s.note
    assert slug("NVIDIA H100 PCIe") == "h100-pcie"
    cpu = card_for("cpu", None, "cpu")
    assert cpu.short_id == "cpu" and cpu.hardware_peaks()["memory_bandwidth_bytes_per_s"] is None


@pytest.fixture
def an_h100(monkeypatch):
    """The device this machine reads is an H100: its name string and memory fed through the identity."""
    monkeypatch.setattr(card_module, "read_device", lambda device: ("NVIDIA H100 80GB HBM3", 85_031_714_816))


def _is_h100(peaks: HardwarePeaks) -> None:
    assert peaks.memory_bandwidth_bytes_per_s == 3.35e12 and peaks.flops_per_s["tf32"] == 494.5e12
    assert peaks.card == "NVIDIA H100 SXM5 80GB" and "h100.yaml" in peaks.source


def test_every_path_gets_a_known_cards_peaks(an_h100):
    # `kkb bench` and `kkb bench --suite` (kernelkb_cli hands the harness CLI this lookup)
    import kernelkb_cli
    from harness.cli import _peaks

    _is_h100(_peaks(kernelkb_cli._card_lookup(), "cuda:0", None, {}))
    given = _peaks(kernelkb_cli._card_lookup(), "cuda:0", 3000.0, {})  # a number given replaces the card's
    assert given.memory_bandwidth_bytes_per_s == 3e12 and given.flops_per_s["tf32"] == 494.5e12
    # a tuning session: the target's facts on its own card, and an evaluator left to find the card itself
    from agent_client.session.evaluator import HarnessEvaluator
    from agent_client.target import target_peaks

    _is_h100(HardwarePeaks.from_dict(target_peaks(FACTS["h100"], FACTS, "cuda:0")))
    _is_h100(HardwarePeaks.from_dict(HarnessEvaluator("spec.py", "triton", "cuda:0").peaks))
    # benchmarks: the library runner, and results files named by the card
    from benchmarks.bench_library import run_peaks
    from benchmarks.common import results_name

    peaks, card = run_peaks("cuda:0", None, "")
    _is_h100(peaks)
    assert card.short_id == "h100" and results_name("export_kernel", "cuda:0").startswith("export_kernel-h100-")
