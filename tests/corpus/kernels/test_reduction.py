"""The reduction library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_reduction.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: every op over every dimension of a 3-d tensor, and unknown ops by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "reduction"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons



def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_reduction_kernel")


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dim", [0, 1, 2])  # outer==1 middle path, middle path, last-dim path
def test_every_op_and_dim(op: str, dim: int):
    x = torch.randn(5, 6, 70)
    ref = getattr(torch, op)(x, dim=dim)
    ref = ref.values if op in ("max", "min") else ref
    out = kernel().reduce_dim(x, op, dim)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_unknown_op_is_named():
    with pytest.raises(ValueError, match="'median'"):
        kernel().reduce_dim(torch.randn(3, 4), "median", 1)


def test_auto_column_strategy_follows_inner_alignment(monkeypatch):
    # "auto": "vec" exactly where the inner length is not a multiple of 16 values (Triton cannot prove the rows
    # 16-byte aligned then, even where every row is: 8 fp32), else "tile".
    k = kernel()
    launched = []

    class Recorder:  # stands in for a @triton.jit kernel: records the launch, then runs it
        def __init__(self, jit, name):
            self.jit, self.name = jit, name

        def __getitem__(self, grid):
            launched.append(self.name)
            return self.jit[grid]

    for name in ("_reduce_mid_kernel", "_reduce_mid_vec_kernel"):
        monkeypatch.setattr(k, name, Recorder(getattr(k, name), name))
    cases = (((2, 16, 10), torch.float32), ((2, 16, 8), torch.float32), ((2, 16, 32), torch.float32),
             ((2, 16, 12), torch.bfloat16), ((2, 16, 48), torch.bfloat16))
    for shape, dtype in cases:
        x = torch.randn(*shape).to(dtype)
        torch.testing.assert_close(k.reduce_dim(x, "sum", 1), x.sum(1), atol=1e-2, rtol=1e-2)
    assert launched == ["_reduce_mid_vec_kernel", "_reduce_mid_vec_kernel", "_reduce_mid_kernel",
                        "_reduce_mid_vec_kernel", "_reduce_mid_kernel"]


@pytest.mark.parametrize("op", ["sum", "max", "argmax", "argmin"])
def test_aligned_rows_and_vec_columns(op: str):
    """ALIGN_ROW on rows shorter than a vector, shorter than a block, and ragged; COL_STRATEGY vec with and
    without an R split, on inner lengths with vector widths 1, 2 and 4; ties keep the first index."""
    k = kernel()
    k.TUNABLES.update({"ALIGN_ROW": True, "STAGES": 2, "BLOCK_R_ROW": 32, "ROW_TILE": 128, "COL_STRATEGY": "vec",
                       "VEC_BLOCK_R_COL": 8, "VEC_BLOCK_I": 32, "MIN_PROGRAMS": 512})
    torch.manual_seed(0)
    cases = [((7, 3), 1), ((6, 67), 1), ((3, 130), 1), ((2, 37, 45), 1), ((2, 40, 70), 1), ((2, 16, 8), 1)]
    for split in (1, 3):
        k.TUNABLES["SPLIT_R"] = split
        for shape, dim in cases:
            for x in (torch.randn(*shape), torch.randint(0, 3, shape).float()):
                ref = getattr(torch, op)(x, dim=dim)
                ref = ref.values if op == "max" else ref
                torch.testing.assert_close(k.reduce_dim(x, op, dim), ref, atol=1e-5, rtol=1e-5)
