"""What the benchmark-script tests share: the marks that keep the Gluon probes' tests to an sm_90 GPU, and
loading a benchmarks/gpu script by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
HOPPER_ONLY = [pytest.mark.gpu,
               pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                                  reason="needs an sm_90 (Hopper) GPU")]


def load_probe(name: str):
    """benchmarks/gpu/<name>.py as a module (the benchmarks folder is not a package), with that folder on sys.path
    as when the script is run (its siblings, such as probe_record, import by name)."""
    folder = str(REPO / "benchmarks" / "gpu")
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "gpu" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
