"""The card a device is, and its limits from the knowledge base's facts files: one lookup for every path.

Usage:
    from agent_client.card import card_peaks, card_for
    card = card_peaks("cuda:0")        # reads torch.cuda.get_device_name and the memory size of the device
    card.short_id, card.name           # "h100", "NVIDIA H100 SXM5 80GB"
    HardwarePeaks.from_dict(card.hardware_peaks())   # what the harness is given
    card_for("NVIDIA H100 80GB HBM3", 85_031_714_816)  # the same from a device name and memory size

The one function other code calls: `card_peaks(device: str = "cuda:0", facts_dir: Path | None = None) ->
CardPeaks`, with `name`, `short_id` (a results file's card tag), `card_id` (the facts id, None for a card the
facts do not know), `memory_bandwidth_bytes_per_s` and `flops_per_s` (HardwarePeaks' fields: the facts'
nominal datasheet numbers, never a measured copy), `compute_limit_known`, and `hardware_peaks()`.

A device is a facts file's card when the file's id or an alias is in the device's name, a form factor the
name states (PCIe, NVL, SXM) is the file's, and the device's memory is within 15% of the file's
`memory_size` (an A100 40GB is not the 80 GB file's card, an H100 NVL not the SXM5's). A device that no
file describes gets no peaks: the harness measures its copy bandwidth and the compute limit is unknown.
The CPU has no card: short id "cpu", no peaks.

Needs only pyyaml, the standard library and kb_server/units.py (torch only inside `card_peaks`, to read the device), so
benchmarks and `kkb bench` use it on a bare CUDA machine; the harness itself only receives the numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from kb_server.units import to_si

FORM_FACTORS = ("pcie", "nvl", "sxm")  # words in device names that tell variants of one chip apart
MEMORY_TOLERANCE = 0.15  # a device's memory within this share of the facts' memory_size is the same card
# facts' dtype keys -> the harness's dtype names (harness/peaks.py)
DTYPE_NAMES = {"fp64": "float64", "fp32": "float32", "tf32": "tf32", "bf16": "bfloat16", "fp16": "float16",
               "fp8": "float8_e4m3fn", "int8": "int8"}
_VENDOR_WORDS = {"nvidia", "amd", "instinct", "tesla", "geforce", "radeon", "intel"}


@dataclass(frozen=True)
class CardPeaks:
    """What a device is and the limits a result on it is measured against (plain numbers, SI units)."""

    device: str  # "cuda:0", "cpu"
    device_name: str  # torch.cuda.get_device_name, or "cpu"
    memory_bytes: int | None  # the device's memory as torch reports it; None on CPU
    card_id: str | None  # the facts file's id ("h100"); None where no facts file describes the device
    short_id: str  # a results file's card tag: the facts id, else a slug of the device name ("l40s"), or "cpu"
    name: str  # the facts' name, else the device name
    memory_bandwidth_bytes_per_s: float | None = None  # nominal (datasheet), from the facts
    flops_per_s: dict[str, float] = field(default_factory=dict)  # nominal dense rates, harness dtype names
    facts_path: str | None = None
    note: str = ""  # where the numbers come from, or why there are none

    @property
    def compute_limit_known(self) -> bool:
        return bool(self.flops_per_s)

    def hardware_peaks(self) -> dict:
        """HardwarePeaks fields (harness/config.py): empty numbers make the harness measure the bandwidth."""
        return {"memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
                "flops_per_s": dict(self.flops_per_s), "card": self.name, "source": self.note}

    def to_dict(self) -> dict:
        return {"device": self.device, "device_name": self.device_name, "memory_bytes": self.memory_bytes,
                "card_id": self.card_id, "short_id": self.short_id, "name": self.name,
                "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
                "flops_per_s": dict(self.flops_per_s), "compute_limit_known": self.compute_limit_known,
                "facts_path": self.facts_path, "note": self.note}


def default_facts_dir() -> Path:
    """The checkout's corpus/accelerators, or the installed corpus package's."""
    here = Path(__file__).resolve().parents[1] / "corpus" / "accelerators"
    if here.is_dir():
        return here
    from kernelkb_corpus import CORPUS_DIR

    return Path(CORPUS_DIR) / "accelerators"


@lru_cache(maxsize=8)
def _load(facts_dir: Path) -> dict[str, dict]:
    out = {}
    for path in sorted(facts_dir.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and raw.get("id"):
            out[str(raw["id"]).lower()] = {**raw, "_path": str(path)}
    return out


def load_facts(facts_dir: Path | None = None) -> dict[str, dict]:
    """Every facts file of a folder as its plain mapping (id -> the YAML), read once per folder."""
    return _load(Path(facts_dir or default_facts_dir()).resolve())


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _value(fact: object, dimension: str, what: str) -> float | None:
    """A fact of the YAML in SI units (kb_server/units.py: the one table ingest validates against)."""
    if not isinstance(fact, Mapping) or fact.get("value") is None:
        return None
    try:
        return to_si(fact["value"], str(fact.get("unit")), dimension)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from exc


def nominal_peaks(facts: Mapping) -> tuple[float | None, dict[str, float]]:
    """(bytes/s, {harness dtype: FLOP/s}) of a facts mapping: the datasheet's numbers, never the measured ones
    (a measured copy is no ceiling: a read-only kernel passes it)."""
    where = facts.get("_path") or facts.get("id")
    bandwidth = _value(facts.get("memory_bandwidth"), "bandwidth", f"{where}: memory_bandwidth")
    flops = {}
    for dtype, fact in (facts.get("peak_tflops") or {}).items():
        rate = _value(fact, "rate", f"{where}: peak_tflops.{dtype}")
        if rate:
            flops[DTYPE_NAMES.get(dtype, dtype)] = rate
    return bandwidth, flops


def _forms(text: str) -> set[str]:
    return {form for form in FORM_FACTORS if form in _squash(text)}


def identify(device_name: str, memory_bytes: int | None, facts: Mapping[str, Mapping]) -> str | None:
    """The id of the facts file that describes this device, or None (see the module docstring)."""
    name = _squash(device_name)
    found: list[tuple[int, str]] = []
    for card_id, entry in facts.items():
        keys = [_squash(k) for k in (card_id, *(entry.get("aliases") or []))]
        hits = [k for k in keys if len(k) >= 3 and k in name]
        if not hits:
            continue
        stated = _forms(device_name)
        if stated and not stated <= _forms(" ".join([str(entry.get("name", "")), *map(str, entry.get("aliases")
                                                                                    or [])])):
            continue  # "H100 PCIe" is not the SXM5 card
        size = _value(entry.get("memory_size"), "size", f"{card_id}: memory_size")
        if memory_bytes and size and abs(memory_bytes / size - 1) > MEMORY_TOLERANCE:
            continue  # "A100 40GB" is not the 80 GB card
        found.append((max(map(len, hits)), card_id))
    return max(found)[1] if found else None


def slug(device_name: str) -> str:
    """A short tag for a device no facts file describes: "NVIDIA L40S" -> "l40s", "NVIDIA H100 PCIe" ->
    "h100-pcie"."""
    words = [w for w in re.split(r"[^a-z0-9]+", device_name.lower()) if w and w not in _VENDOR_WORDS]
    return "-".join(words) or "unknown"


def card_for(device_name: str, memory_bytes: int | None, device: str = "cuda:0",
             facts: Mapping[str, Mapping] | None = None) -> CardPeaks:
    """The card and its nominal peaks for a device name and memory size (what `card_peaks` reads)."""
    if not device.startswith("cuda") or device_name == "cpu":
        return CardPeaks(device, "cpu", None, None, "cpu", "cpu", note="CPU: no card; the harness measures")
    facts = load_facts() if facts is None else facts
    card_id = identify(device_name, memory_bytes, facts)
    if card_id is None:
        size = f", {memory_bytes / 1e9:.0f} GB" if memory_bytes else ""
        return CardPeaks(device, device_name, memory_bytes, None, slug(device_name), device_name,
                         note=f"no facts file describes {device_name!r}{size}: the harness measures the copy "
                              "bandwidth; the compute limit is unknown")
    return facts_card(card_id, facts[card_id], device, device_name, memory_bytes)


def facts_card(card_id: str, entry: Mapping, device: str = "cuda:0", device_name: str | None = None,
               memory_bytes: int | None = None) -> CardPeaks:
    """The card a facts mapping describes, with its nominal peaks (the device already matched to it)."""
    bandwidth, flops = nominal_peaks(entry)
    path = entry.get("_path")
    where = f"corpus/accelerators/{Path(path).name}" if path else f"the {card_id} facts"
    name = str(entry.get("name") or card_id)
    return CardPeaks(device, device_name or name, memory_bytes, card_id, card_id, name, bandwidth, flops, path,
                     note=f"nominal peaks of {where}")


def read_device(device: str) -> tuple[str, int | None]:
    """(torch.cuda.get_device_name, total memory in bytes) of a CUDA device; ("cpu", None) elsewhere."""
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        return "cpu", None
    props = torch.cuda.get_device_properties(torch.device(device))
    return props.name, int(props.total_memory)


def card_peaks(device: str = "cuda:0", facts_dir: Path | None = None) -> CardPeaks:
    """The card `device` is (read from the device) and its nominal peaks from the facts files."""
    name, memory = read_device(device)
    if name == "cpu":
        return card_for("cpu", None, "cpu")
    return card_for(name, memory, device, load_facts(facts_dir))
