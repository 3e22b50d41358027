"""The card a benchmark runs on: its name as the driver gives it, a short id for file names, and its peaks
from the facts in corpus/accelerators (PyYAML only: a bare CUDA machine has no pydantic).

Usage: card = card_of("cuda:0")      # Card(name="NVIDIA H100 80GB HBM3", id="h100", peaks=HardwarePeaks(...))
       card_of("cpu")                # Card(name="cpu", id="cpu", peaks=None): the harness measures there

The peaks are the facts' nominal ones (the datasheet's bandwidth and dense FLOP rates), not measured rates:
a read-only kernel may pass a measured copy rate, and the harness rejects a candidate above its limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FACTS_DIR = Path(__file__).resolve().parents[1] / "corpus" / "accelerators"
_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "tf32", "bf16": "bfloat16", "fp16": "float16",
           "fp8": "float8_e4m3fn"}
_BANDWIDTH_UNITS = {"TB/s": 1e12, "GB/s": 1e9}


@dataclass(frozen=True)
class Card:
    name: str  # torch.cuda.get_device_name(), or "cpu"
    id: str  # the facts' id ("h100"), else the name squashed: for file names
    peaks: object | None  # harness.HardwarePeaks from the facts; None where none match (the harness measures)


def card_of(device: str) -> Card:
    if not device.startswith("cuda"):
        return Card("cpu", "cpu", None)
    import torch

    name = torch.cuda.get_device_name(torch.device(device))
    facts = _facts_for(name)
    if facts is None:
        return Card(name, _squash(name.removeprefix("NVIDIA "))[:24] or "gpu", None)
    return Card(name, str(facts["id"]), _peaks(facts))


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _facts_for(device_name: str) -> dict | None:
    """The facts whose id or alias (3 characters or more) the device name holds; the longest match wins."""
    import yaml

    name, best = _squash(device_name), (0, None)
    for path in sorted(FACTS_DIR.glob("*.yaml")):
        facts = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        keys = [_squash(str(k)) for k in (facts.get("id", ""), *(facts.get("aliases") or []))]
        found = max((len(k) for k in keys if len(k) >= 3 and k in name), default=0)
        if found > best[0]:
            best = (found, facts)
    return best[1]


def _peaks(facts: dict):
    from harness import HardwarePeaks

    bw = facts.get("memory_bandwidth") or {}
    unit = _BANDWIDTH_UNITS.get(bw.get("unit"))
    bandwidth = float(bw["value"]) * unit if unit else None
    flops = {_DTYPES.get(k, k): float(v["value"]) * 1e12 for k, v in (facts.get("peak_tflops") or {}).items()
             if isinstance(v, dict) and v.get("unit") == "TFLOP/s"}
    return HardwarePeaks(bandwidth, flops)
