"""The target of a session against the device that judges it: the harness's peaks come from the target's
facts only when the device is that accelerator.

Usage: name, peaks = target_peaks(facts, all_facts, device="cuda:0", peaks="facts")

`kkb tune --target h200` on a GPU that is not an H200 would judge every candidate's fraction of the
limit (and the timer-escape check) by the wrong chip's bandwidth and FLOP rates; instead it stops and
says which chip the device is. With `--peaks measured` the session keeps the target's prompts and the
harness measures the device's copy bandwidth itself (no compute peak then). On the CPU (the Triton
interpreter) the harness measures and no facts apply.
"""

from __future__ import annotations

import re

from agent_client.session.evaluator import peaks_for_device

PEAKS_CHOICES = ("facts", "measured")


class TargetMismatch(ValueError):
    """The device is not the target accelerator; the message names both and what to do."""


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def device_matches(facts, device_name: str) -> bool:
    """Whether a device name (torch.cuda.get_device_name) is this accelerator: its id or an alias in the name."""
    name = _squash(device_name)
    keys = {_squash(k) for k in (facts.id, *facts.aliases)}
    return any(len(k) >= 3 and k in name for k in keys)


def cuda_device_name(device: str) -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(torch.device(device)) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001  no usable CUDA: no name to check
        return None


def target_peaks(facts, all_facts: dict, device: str, peaks: str = "facts", device_name: str | None = None) -> dict:
    """HardwarePeaks fields for the harness: the target's facts, or {} to have the harness measure.

    Raises TargetMismatch when the device is a GPU other than the target and `peaks` is "facts".
    """
    if peaks not in PEAKS_CHOICES:
        raise ValueError(f"--peaks {peaks!r}: one of {', '.join(PEAKS_CHOICES)}")
    if not device.startswith("cuda") or peaks == "measured":
        return {}
    name = device_name if device_name is not None else cuda_device_name(device)
    if name is not None and not device_matches(facts, name):
        matching = sorted(acc_id for acc_id, acc in all_facts.items() if device_matches(acc, name))
        hint = f"--target {matching[0]}" if matching else "a --target whose facts describe this device"
        raise TargetMismatch(
            f"--target {facts.id} ({facts.name}) but {device} is a {name!r}: the harness would judge by the "
            f"{facts.id}'s peaks. Use {hint}, or --peaks measured to keep the {facts.id} prompts and let the "
            "harness measure this device")
    return peaks_for_device(facts.peaks(), device)
