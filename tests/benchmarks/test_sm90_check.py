"""benchmarks/sm90_check.py: a dry run keeps each launch whole and says why it stopped; compiled for sm_90, a
kernel that fits is reported with its registers, one past the shared-memory limit and one the compiler rejects
are failures with their reasons, and pointer alignment is bound as a real launch binds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_client.offline.reads import LaunchProbe
from benchmarks.sm90_check import stop_kind

REPO = Path(__file__).resolve().parents[2]

SPEC = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []
"""

CANDIDATE = """import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK": 1024, "STOP": False}


@triton.jit
def _double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)


@triton.jit
def _wide_dot_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m, n, k = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + m[:, None] * BK + k[None, :])
    b = tl.load(b_ptr + k[:, None] * BN + n[None, :])
    tl.store(c_ptr + m[:, None] * BN + n[None, :], tl.dot(a, b))


@triton.jit
def _odd_kernel(x_ptr, n):
    i = tl.arange(0, 96)  # not a power of 2: the compiler refuses it
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        n = x.numel()
        y = torch.empty(n + 1, device=x.device, dtype=x.dtype).narrow(0, 1, n)  # 4 bytes past an aligned start
        _double_kernel[(triton.cdiv(n, TUNABLES["BLOCK"]),)](x, y, n, BLOCK=TUNABLES["BLOCK"])
        if TUNABLES["STOP"]:
            float(y.sum().item())  # needs real data: a dry run ends here
        # two fp32 tiles of 256 x 128 in shared memory: 256 KB, past the 227 KB of a block
        _wide_dot_kernel[(1,)](x, x, y, BM=256, BN=256, BK=128, num_warps=8)
        _odd_kernel[(1,)](x, n)
        return y.view_as(x)
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    spec, candidate = tmp_path / "spec_double.py", tmp_path / "cand_double.py"
    spec.write_text(SPEC)
    candidate.write_text(CANDIDATE)
    return spec, candidate


def test_a_dry_run_keeps_each_launch_and_its_arguments(files):
    spec, candidate = files
    run = LaunchProbe(candidate.read_text(), spec, "cpu").dry_run({"BLOCK": 2048})
    assert run.error is None and run.trace is not None
    assert [c.name for c in run.calls] == ["_double_kernel", "_wide_dot_kernel", "_odd_kernel"]
    double = run.calls[0]
    assert getattr(double.fn, "fn", double.fn).__name__ == "_double_kernel"  # the kernel object, not a name
    assert double.grid == (32,) and double.kwargs == {"BLOCK": 2048}
    x, y, n = double.args
    assert (x.dtype, tuple(x.shape), y.storage_offset(), n) == (x.dtype, (256, 256), 1, 65536)
    assert run.calls[1].kwargs["num_warps"] == 8


def test_a_dry_run_that_needs_real_data_says_where_it_stopped_and_keeps_the_launches_before(files):
    spec, candidate = files
    run = LaunchProbe(candidate.read_text(), spec, "cpu").dry_run({"STOP": True})
    assert run.trace is None
    assert [c.name for c in run.calls] == ["_double_kernel"]
    assert "in forward" in run.error and "candidate line" in run.error, run.error
    assert stop_kind(run) == "needs_data" and not run.refused


@pytest.mark.slow  # three kernels compiled for sm_90 by the installed triton: ~10-20 s on 2 cores
def test_compiled_for_sm90_each_launch_gets_its_verdict_and_reasons(files, tmp_path):
    spec, candidate = files
    out = tmp_path / "sm90.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "sm90_check.py"), "--candidate", str(candidate),
                           "--spec", str(spec), "--cache", "", "--out", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    problem = json.loads(out.read_text())["problems"][0]
    assert problem["verdict"] == "fail"
    by_kernel = {launch["kernel"]: launch for launch in problem["launches"]}
    double = by_kernel["_double_kernel"]
    assert double["status"] == "compiled" and double["reasons"] == []
    assert 0 < double["registers"] <= 255 and double["spill_stores_bytes"] == 0
    # bound as a real launch: x from an aligned allocation, y 4 bytes past one, n = 65536 divisible by 16
    assert "x_ptr:*fp32[D] y_ptr:*fp32 n:i32[D] BLOCK=1024" in double["signature"]
    wide = by_kernel["_wide_dot_kernel"]
    assert wide["status"] == "out_of_resources" and wide["shared_bytes"] > 232448
    assert wide["reasons"] == [f"shared memory {wide['shared_bytes']} B > 232448 B per block"]
    # the instructions the cubins hold: a multiply-by-two loop body against a 256 x 256 x 128 dot's main loop
    assert 8 < double["sass_instructions"] < 200 < wide["sass_instructions"], (double, wide)
    odd = by_kernel["_odd_kernel"]
    assert odd["status"] == "compile_error" and "power of 2" in odd["reasons"][0], odd
    assert len(problem["failures"]) == 2
    assert "summary: ok 0, fail 1, incomplete 0, no_routes 0" in done.stdout  # the table, printed last
