"""benchmarks/bench_kernelbench.py on the CPU: problems named by a sample file, routes and the search recorded
per candidate, the summary's counts against torch.compile, and a run continued with --resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.kernelbench_rows import problem_row, summary, table

REPO = Path(__file__).resolve().parents[2]

RELU = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4
dim = 300


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
"""
SOFTMAX = RELU.replace("torch.relu(x)", "torch.softmax(x, dim=1)")
SUM = RELU.replace("torch.relu(x)", "torch.sum(x, dim=1, keepdim=True)")


def _candidate(cid, route, status, latency, compile_ms, eager_ms=None):
    speedup = compile_ms / latency if status == "passed" and compile_ms else None
    return {"id": cid, "route": route, "status": status, "latency_ms": latency, "eager_ms": eager_ms,
            "compile_ms": compile_ms, "speedup_vs_eager": None, "speedup_vs_compile": speedup,
            "fraction_of_limit": 0.5, "limit_kind": "memory", "tunables": {}, "reasons": []}


def test_a_problem_row_has_the_best_the_spread_and_both_times():
    row = problem_row([_candidate("c1", "lowering", "passed", 2.0, 1.0),
                       _candidate("c2", "library:k", "passed", 1.25, 1.0),
                       _candidate("c3", "library:k", "wrong", None, 1.0),
                       _candidate("c4", "lowering", "passed", 4.0, 1.0)])
    assert row["status"] == "passed" and row["passed"] == 3
    assert row["best"]["id"] == "c2" and row["best"]["route"] == "library:k"
    assert row["spread_ms"] == {"min": 1.25, "median": 2.0, "max": 4.0, "of": 3}
    assert row["against_compile"].startswith("torch.compile is faster: 1 ms against")  # never a silent loss
    assert "1.25 ms" in row["against_compile"] and "library:k" in row["against_compile"]


def test_the_summary_counts_losses_against_torch_compile():
    rows = [{"problem": f"1/{i}", **problem_row([_candidate("c1", "lowering", "passed", lat, 1.0)])}
            for i, lat in enumerate((0.5, 1.0, 1.1, 2.0))]
    rows.append({"problem": "1/9", **problem_row([_candidate("c1", "lowering", "wrong", None, 1.0)])})
    s = summary(rows, not_reached=["2/1"])
    assert s["problems"] == 5 and s["passed"] == 4 and s["not_reached"] == ["2/1"]
    assert s["below_0.97_vs_compile"] == ["1/2", "1/3"]  # 1.0/1.1 and 1.0/2.0
    assert s["geomean_vs_compile"] == pytest.approx((2.0 * 1.0 / 1.1 * 0.5) ** 0.25, rel=1e-3)
    assert "1/9" in s["failed"] and "| 1/9 | wrong |" in table(rows)
    assert sorted(s["torch_compile_faster"]) == ["1/2", "1/3"]  # both times said where compile wins
    assert "1 ms against the best candidate (lowering)'s 2 ms" in s["torch_compile_faster"]["1/3"]


def _run(tmp_path: Path, sample: list[str], *extra: str) -> dict:
    (tmp_path / "sample.txt").write_text("# problems\n" + "\n".join(sample) + "\n")
    out = tmp_path / f"out-{len(sample)}"
    env = {**os.environ, "TRITON_INTERPRET": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "benchmarks/bench_kernelbench.py", "--device", "cpu",
                           "--kernelbench", str(tmp_path / "kb"), "--sample", str(tmp_path / "sample.txt"),
                           "--search", "2",
                           "--cache-dir", str(tmp_path / "cache"), "--out-dir", str(out), *extra],
                          check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    last = done.stdout.rstrip().splitlines()[-1]
    assert "passed; geometric mean vs torch.compile" in last  # the table comes last
    [path] = list(out.glob("kernelbench-cpu-*.json"))
    return json.loads(path.read_text()) | {"_path": str(path)}


@pytest.mark.slow
def test_a_sample_runs_and_resumes_on_the_cpu(tmp_path):
    for level, name, source in ((1, "23_Softmax", SOFTMAX), (1, "19_ReLU", RELU), (2, "1_Sum", SUM)):
        (tmp_path / "kb" / f"level{level}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "kb" / f"level{level}" / f"{name}.py").write_text(source)
    first = _run(tmp_path, ["1/23_Softmax", "1/19_ReLU"])
    assert first["card"]["short_id"] == "cpu" and first["search"] == 2
    rows = {r["problem"]: r for r in first["problems"]}
    assert set(rows) == {"1/23_Softmax", "1/19_ReLU"}
    softmax = rows["1/23_Softmax"]
    assert softmax["status"] == "passed" and softmax["routes"] == ["lowering", "library:softmax_rows_triton"]
    assert [c["route"] for c in softmax["candidates"]] == softmax["routes"]  # each route's default first
    assert softmax["spread_ms"]["of"] == softmax["passed"] and softmax["best"]["route"] in softmax["routes"]
    second = _run(tmp_path, ["1/23_Softmax", "1/19_ReLU", "2/1_Sum"], "--resume", first["_path"])
    again = {r["problem"]: r for r in second["problems"]}
    assert again["1/23_Softmax"] == softmax  # kept, not judged again
    assert again["2/1_Sum"]["status"] == "passed" and second["summary"]["problems"] == 3


SLOW = """import time
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=offs < n), 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        end = time.perf_counter() + 60  # far slower than any share of a run
        while time.perf_counter() < end:
            pass
        y = torch.empty_like(x)
        _relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""


def test_a_problem_past_its_cap_is_left_and_the_run_deadline_ends_the_run(tmp_path):
    from types import SimpleNamespace

    from benchmarks.bench_kernelbench import Deadline, ProblemCut, judge
    from harness import EvalConfig, WorkerPool

    spec = tmp_path / "relu.py"
    spec.write_text(RELU)
    slow = [SimpleNamespace(code=SLOW)]
    config = EvalConfig.for_cpu_tests(time_candidate=False, time_eager_baseline=False, timeout_s=120)
    with WorkerPool(["cpu"], config=config) as pool:
        now = __import__("time").monotonic()
        with pytest.raises(ProblemCut):
            judge(pool, spec, slow, deadline=now + 600, cap=now + 3)
        pool.terminate()
    with WorkerPool(["cpu"], config=config) as pool:
        now = __import__("time").monotonic()
        with pytest.raises(Deadline):
            judge(pool, spec, slow, deadline=now + 3, cap=now + 600)
        pool.terminate()
