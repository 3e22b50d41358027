"""The target of a session against the device that judges it: the harness's peaks come from the target's
facts only when the device is that card.

Usage: peaks = target_peaks(facts, all_facts, device="cuda:0", peaks="facts")

`kkb tune --target h200` on a GPU that is not an H200 would judge every candidate's fraction of the
limit (and the timer-escape check) by the wrong chip's bandwidth and FLOP rates; instead it stops and
says which card the device is (agent_client/card.py reads the device's name and memory and matches them
to the facts). The peaks are the facts' nominal ones, as for suites and benchmarks. With `--peaks
measured` the session keeps the target's prompts and the harness measures the device's copy bandwidth
itself (no compute limit then). On the CPU (the Triton interpreter) the harness measures and no facts apply.
"""

from __future__ import annotations

from agent_client import card
from agent_client.card import card_for, facts_card, identify

PEAKS_CHOICES = ("facts", "measured")


class TargetMismatch(ValueError):
    """The device is not the target accelerator; the message names both and what to do."""


def _plain(facts) -> dict:
    """A facts record (kb_server's AcceleratorFacts, or the YAML's mapping) as the YAML's plain mapping."""
    return facts.model_dump(mode="json") if hasattr(facts, "model_dump") else dict(facts)


def device_matches(facts, device_name: str, memory_bytes: int | None = None) -> bool:
    """Whether a device (torch.cuda.get_device_name, and its memory where known) is this accelerator."""
    plain = _plain(facts)
    return identify(device_name, memory_bytes, {plain["id"]: plain}) == plain["id"]


def target_peaks(facts, all_facts: dict, device: str, peaks: str = "facts", device_name: str | None = None,
                 memory_bytes: int | None = None) -> dict:
    """HardwarePeaks fields for the harness: the target's nominal peaks, or {} to have the harness measure.

    Raises TargetMismatch when the device is a GPU other than the target and `peaks` is "facts".
    """
    if peaks not in PEAKS_CHOICES:
        raise ValueError(f"--peaks {peaks!r}: one of {', '.join(PEAKS_CHOICES)}")
    if not device.startswith("cuda") or peaks == "measured":
        return {}
    target = _plain(facts)
    known = {acc_id: _plain(acc) for acc_id, acc in all_facts.items()}
    known[target["id"]] = target
    if device_name is None:
        device_name, memory_bytes = card.read_device(device)
    if device_name == "cpu":  # no CUDA visible here: the target's facts as they are
        return facts_card(target["id"], target, device).hardware_peaks()
    card_id = identify(device_name, memory_bytes, known)
    if card_id != target["id"]:
        size = f" with {memory_bytes / 1e9:.0f} GB" if memory_bytes else ""
        hint = f"--target {card_id}" if card_id else "a --target whose facts describe this device"
        raise TargetMismatch(
            f"--target {target['id']} ({target['name']}) but {device} is a {device_name!r}{size}: the harness "
            f"would judge by the {target['id']}'s peaks. Use {hint}, or --peaks measured to keep the "
            f"{target['id']} prompts and let the harness measure this device")
    return card_for(device_name, memory_bytes, device, known).hardware_peaks()
