"""The local pool (harness/pool.py) with several workers on the CPU (`cpu,cpu`), through Triton's interpreter:
a suite's verdicts as on one worker, each spec's baselines measured once for both workers, every verdict
saying where it ran, nothing left running after close; and a worker killed mid-candidate costing that
candidate only."""

from __future__ import annotations

import json
import os
import signal
import time

from harness import EvalConfig, WorkerPool
from harness.baselines import BaselineCache
from harness.held_memory import harness_processes, held_after, snapshot
from harness.suite import run_suite, suite_problems
from tests.harness.harness_helpers import CANDIDATES, SPECS, candidate

CONFIG = EvalConfig.for_cpu_tests(timeout_s=120.0)
EXPECTED = {("1_TinyRelu", "1_TinyRelu.py"): "passed", ("2_TinySum", "2_TinySum/honest_sum.py"): "passed",
            ("2_TinySum", "2_TinySum/wrong_sum.py"): "wrong", ("2_TinySum", "2_TinySum/calls_torch_sum.py"): "rejected"}


def test_two_workers_share_baselines_and_say_where(tmp_path):
    before = snapshot()
    cache = BaselineCache(tmp_path / "baselines")
    out = tmp_path / "two.json"
    with WorkerPool(["cpu", "cpu"], config=CONFIG, baselines=cache) as pool:
        run = run_suite(suite_problems(SPECS / "suite"), pool, out, {"executor": "cpu,cpu"},
                        candidates=CANDIDATES / "suite_many", max_inflight=2 * pool.parallelism)
        workers = [p for p in harness_processes() if not p["fork_server"]]
        assert len(workers) >= 2  # each device thread's worker (and spares), found under this process
    assert {(r["spec"], r["candidate"]): r["status"] for r in run.rows} == EXPECTED
    assert cache.measured == 2 and cache.hits >= 2  # two specs, each profiled once for both workers
    assert {r["where"]["worker"] for r in run.rows} == {0, 1}  # both workers judged candidates
    data = json.loads(out.read_text())
    assert data["run"]["candidates"] == 4 and data["run"]["candidates_per_minute"] > 0
    assert data["run"]["by_device"]["cpu"]["statuses"] == {"passed": 2, "wrong": 1, "rejected": 1}
    left = held_after(before)
    assert not left["held"] and left["harness_processes_left"] == [], left


def test_killed_worker_costs_only_its_candidate():
    spec = SPECS / "suite" / "1_TinyRelu.py"
    with WorkerPool(["cpu", "cpu"], config=CONFIG, baselines=BaselineCache(use_disk=False)) as pool:
        pool.profile(spec)  # baselines first: the kill below must land inside the candidate
        doomed = pool.submit(spec, candidate("slow_first_call"), "triton")
        deadline = time.monotonic() + 120
        busy: list[dict] = []
        while not busy:
            assert time.monotonic() < deadline and not doomed.done(), "the candidate never started"
            busy = [s for s in pool.slots() if s["busy"] == "1_TinyRelu"]
            time.sleep(0.1)
        time.sleep(2.0)  # inside the candidate's slow first call (6 s)
        os.kill(busy[0]["pid"], signal.SIGKILL)
        others = [pool.submit(spec, (CANDIDATES / "suite_many" / "1_TinyRelu.py").read_text(), "triton")
                  for _ in range(3)]
        verdict = doomed.result(timeout=120)
        after = [f.result(timeout=240) for f in others]
        replaced = pool.slots()[busy[0]["worker"]]["pid"]
    assert verdict.status.value == "crashed", verdict.reasons  # the killed worker's candidate only
    assert verdict.diagnostics["where"]["worker"] == busy[0]["worker"]
    assert all(v.passed for v in after), [v.reasons for v in after]  # the next ones, on both workers
    assert replaced != busy[0]["pid"]  # the killed worker was replaced
