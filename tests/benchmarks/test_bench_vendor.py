"""benchmarks/bench_vendor.py on CPU: a tiny GEMM spec's kernel against its vendor pieces, in one window."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from benchmarks.bench_library import tiny_copy
from benchmarks.bench_vendor import REPO, measure
from harness import EvalConfig


@pytest.mark.parametrize("family,spec", [("gemm_epilogue", "linear_gelu_bf16_4096")])
def test_measure_times_ours_and_each_vendor_piece_alternately(family, spec, tmp_path: Path):
    path = tiny_copy(REPO / f"corpus/kernels/{family}/specs/{spec}.py", tmp_path)
    row = measure(family, path, "cpu", EvalConfig.for_cpu_tests(), runs=2)
    assert set(row["runs_ms"]) == {"ours", "cublas_linear", "eager_reference", "ours_linear"}
    assert all(len(ts) == 2 and all(t > 0 for t in ts) for ts in row["runs_ms"].values())
    # the speedups are the vendor's median over ours, so a wrong division would show here
    for name, speedup in row["speedup_vs"].items():
        assert speedup == pytest.approx(row["median_ms"][name] / row["median_ms"]["ours"])
    assert set(row["speedup_vs"]) == {"cublas_linear", "eager_reference"}  # our own pieces are not vendors
    assert row["ours_linear_speedup_vs_cublas_linear"] == pytest.approx(
        row["median_ms"]["cublas_linear"] / row["median_ms"]["ours_linear"])
    assert row["max_abs_diff_vs_reference"] < 0.1  # the kernel computed the spec (bf16 tolerance scale)
