"""The sizes at which a spec too large for a device would fit: its size constants scaled down by powers of two.

Usage: sentence = sizes_that_fit(spec, config, "cuda:0", capacity_bytes)

Part of the one message a spec too large for the device gets (harness/memory.py too_large_message): the
mildest scaling of its module-level size constants (harness/scaling.py) whose estimated footprint fits,
with the constants it changes; the advice fits every verb (tune, bench), the `--max-elements` that gives it
being named as `kkb bench --suite`'s. Shapes only: every estimate is a forward on the meta device, nothing
is allocated.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.config import EvalConfig
from harness.memory import GIB, estimate_footprint
from harness.spec import Spec, argument_list, load_spec

MAX_HALVINGS = 12  # 1/4096 of the sizes at most


def _elements(spec: Spec) -> int:
    import torch

    from harness.redirect import tensors_on

    with tensors_on("meta"):
        inputs = argument_list(spec.module.get_inputs(), "get_inputs")
    return sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))


def sizes_that_fit(spec: Spec, config: EvalConfig, device: str, capacity_bytes: int) -> str:
    """A sentence naming the sizes that fit `capacity_bytes`, or saying that no scaling of the constants does."""
    from harness.scaling import scaled_source

    with tempfile.TemporaryDirectory(prefix="kkb_fit_") as folder:
        previous: dict | None = None
        for k in range(1, MAX_HALVINGS + 1):
            text, changes = scaled_source(spec.source, 2.0 ** -k)
            if not changes or changes == previous:
                break  # nothing left to scale
            previous = changes
            path = Path(folder) / f"{spec.name}_{k}.py"
            path.write_text(text)
            try:
                scaled = load_spec(path)
                footprint = estimate_footprint(scaled, config, device)
            except Exception:  # noqa: BLE001, S112 - a shape rule broken at this factor: try the next one
                continue
            if footprint.method == "meta" and footprint.needed_bytes <= capacity_bytes:
                shown = ", ".join(f"{name} {old} -> {new}" for name, (old, new) in list(changes.items())[:6])
                # advice for every verb that judges a spec (tune, bench); the suite's option named as its own
                return (f"At 1/{2 ** k} of its sizes ({shown}) it needs {footprint.needed_bytes / GIB:.1f} GiB "
                        f"and fits: a copy of the spec with those sizes runs here (in `kkb bench --suite`, "
                        f"--max-elements {_elements(scaled)} scales every problem so).")
    return ("No power-of-two scaling of its module-level size constants fits; write it with smaller sizes "
            "(its inputs and outputs are what the device must hold about three times).")
