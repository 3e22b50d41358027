"""The pointwise library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_pointwise.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: every op of the chain vocabulary on its own, and unknown ops rejected by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "pointwise"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons



def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_pointwise_kernel")


OPS = [("relu",), ("gelu",), ("gelu_tanh",), ("silu",), ("mish",), ("softplus",), ("sigmoid",), ("tanh",),
       ("hardswish",), ("leaky_relu", 0.2), ("clamp", -0.5, 0.7), ("mul", -3.0), ("add", 0.125)]
TORCH = {
    "relu": torch.relu, "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "silu": torch.nn.functional.silu,
    "mish": torch.nn.functional.mish, "softplus": torch.nn.functional.softplus, "sigmoid": torch.sigmoid,
    "tanh": torch.tanh, "hardswish": torch.nn.functional.hardswish,
    "leaky_relu": torch.nn.functional.leaky_relu, "clamp": torch.clamp, "mul": torch.mul, "add": torch.add,
}


@pytest.mark.parametrize("fast", [0, 1], ids=["original", "fewer_transcendentals"])
@pytest.mark.parametrize("op", OPS, ids=lambda op: op[0])
def test_each_op_matches_torch(op, fast):
    x = torch.linspace(-30.0, 30.0, 1999)  # both tails: overflow-prone exp, softplus threshold
    k = kernel()
    k.TUNABLES["FAST"] = fast
    out = k.pointwise_chain(x, [op])
    torch.testing.assert_close(out, TORCH[op[0]](x, *op[1:]), atol=1e-5, rtol=1e-5)


def test_unknown_op_is_named():
    with pytest.raises(ValueError, match="'swish'"):
        kernel().ModelNew([("swish",)])
    with pytest.raises(ValueError, match="at most 8"):
        kernel().ModelNew([("relu",)] * 9)
