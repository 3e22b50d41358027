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
    assert set(row["runs_ms"]) == {"ours", "cublas_linear", "cublaslt_bias_gelu", "eager_reference", "ours_linear"}
    assert all(len(ts) == 2 and all(t > 0 for t in ts) for ts in row["runs_ms"].values())
    # the speedups are the vendor's median over ours, so a wrong division would show here
    for name, speedup in row["speedup_vs"].items():
        assert speedup == pytest.approx(row["median_ms"][name] / row["median_ms"]["ours"])
    assert set(row["speedup_vs"]) == {"cublas_linear", "cublaslt_bias_gelu", "eager_reference"}  # ours are not vendors
    assert row["ours_linear_speedup_vs_cublas_linear"] == pytest.approx(
        row["median_ms"]["cublas_linear"] / row["median_ms"]["ours_linear"])
    assert row["max_abs_diff_vs_reference"] < 0.1  # the kernel computed the spec (bf16 tolerance scale)


def test_each_callable_takes_fresh_clones_of_the_inputs(monkeypatch, tmp_path: Path):
    # As the harness times a candidate: every repetition on its own copies (a shared input set let a kernel with a
    # slow launch be timed partly on the host, nothing queued ahead of it)
    import types

    import torch

    from benchmarks import bench_vendor

    sets = []

    def record(fn, make_args, device, config):
        first, second = make_args(), make_args()
        fn(*first)  # each callable runs on the arguments it is given
        sets.append((first, second))
        return types.SimpleNamespace(median_ms=1.0)

    monkeypatch.setattr(bench_vendor, "time_callable", record)
    path = tiny_copy(REPO / "corpus/kernels/gemm_epilogue/specs/linear_gelu_bf16_4096.py", tmp_path)
    bench_vendor.measure("gemm_epilogue", path, "cpu", EvalConfig.for_cpu_tests(), runs=1)
    assert len(sets) == 5  # ours, cuBLAS alone, cuBLASLt bias + GELU, eager, ours_linear
    for first, second in sets:
        assert all(a.data_ptr() != b.data_ptr() and torch.equal(a, b) for a, b in zip(first, second))
