"""The results file a GPU probe script writes: the command that made it, the device, the versions and how it
timed, then its rows (and any fields of its own).

Usage (in a script under benchmarks/gpu, run as python3 benchmarks/gpu/NAME.py, which puts this folder first on
sys.path): from probe_record import write_record; write_record(args.out, __file__, argv, "do_bench ...", rows)
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import triton


def write_record(out: str, script: str, argv: list[str], method: str, rows: list, **extra) -> None:
    """Writes {command, device, versions, method, **extra, rows} to `out` as indented JSON."""
    record = {"command": " ".join(["python3", f"benchmarks/gpu/{Path(script).name}", *argv]),
              "device": torch.cuda.get_device_name(),
              "versions": {"torch": torch.__version__, "triton": triton.__version__},
              "method": method, **extra, "rows": rows}
    Path(out).write_text(json.dumps(record, indent=1))
