"""The Ray executor (harness/ray_pool.py) on a local Ray cluster of CPU workers, through Triton's interpreter:
the same verdicts as the local pool (two workers each) on a small suite with each spec's baselines measured
once, a worker killed mid-candidate recovered (the candidate run again elsewhere, its verdict given once),
and an unreachable address named in one message."""

from __future__ import annotations

import os
import signal
import time

import pytest
import typer
from typer.testing import CliRunner

from harness import EvalConfig, WorkerPool
from harness.cli import bench
from harness.suite import run_suite, suite_problems
from tests.harness.harness_helpers import CANDIDATES, SPECS, candidate

ray = pytest.importorskip("ray")
from harness.ray_pool import ClusterUnreachable, RayPool

CONFIG = EvalConfig.for_cpu_tests(timeout_s=120.0)


@pytest.fixture(scope="module")
def ray_pool():
    # a local cluster of four CPU slots (Ray's accounting, not cores): two for this pool's actors, two for
    # the tuning session's pool below
    pool = RayPool("local", config=CONFIG, workers=2, local_cpus=4, compile_ahead=True)  # as on GPUs
    yield pool
    pool.close()
    ray.shutdown()


def _run(executor, tmp_path, name: str) -> list[dict]:
    return run_suite(suite_problems(SPECS / "suite"), executor, tmp_path / f"{name}.json", {"executor": name},
                     candidates=CANDIDATES / "suite_many", max_inflight=2 * executor.parallelism).rows


def _statuses(rows: list[dict]) -> dict:
    return {(r["spec"], r["candidate"]): (r["status"], r.get("timing_method")) for r in rows}


def test_same_verdicts_as_the_local_pool(ray_pool, tmp_path):
    on_ray = _run(ray_pool, tmp_path, "ray")
    with WorkerPool(["cpu", "cpu"], config=CONFIG, compile_workers=1) as local:
        here = _run(local, tmp_path, "local")
    assert _statuses(on_ray) == _statuses(here) and len(here) == 4
    assert sorted(s for s, _ in _statuses(here).values()) == ["passed", "passed", "rejected", "wrong"]
    assert ray_pool.baseline_requests == 2  # two specs, each profiled by one actor for both
    assert {r["where"]["executor"] for r in on_ray} == {"ray"} and {r["where"]["device"] for r in on_ray} == {"cpu"}
    # each actor compiled a candidate while it timed another (the local pool's compile stage, on Ray)
    assert any(r["where"]["compiled_ahead"] for r in on_ray) and any(r["where"]["compiled_ahead"] for r in here)


def test_killed_worker_recovered(ray_pool):
    future = ray_pool.submit(SPECS / "suite" / "1_TinyRelu.py", candidate("slow_first_call"), "triton")
    deadline = time.monotonic() + 240
    busy = []
    while not busy:
        assert time.monotonic() < deadline and not future.done(), "the candidate never started on an actor"
        busy = [s for s in ray_pool.slots() if s["busy"] == "1_TinyRelu"]
        time.sleep(0.2)
    time.sleep(1.0)  # inside the candidate's slow first call
    os.kill(busy[0]["pid"], signal.SIGKILL)  # the Ray worker process dies mid-candidate
    verdict = future.result(timeout=300)
    assert verdict.passed, verdict.reasons
    assert verdict.diagnostics["ray"]["attempts"] == 2 and verdict.diagnostics["ray"]["pid"] != busy[0]["pid"]
    assert ray_pool.lost_actors == 1
    while len(ray_pool.slots()) < 2:  # the pool is whole again: two actors answer, the replacement included
        assert time.monotonic() < deadline + 60, "the lost actor was not replaced"
        time.sleep(0.2)


def test_tuning_session_evaluates_on_ray(ray_pool):
    # what `kkb tune --ray ADDRESS` builds: the session's evaluator on a RayPool of the cluster's free CPUs
    from agent_client.session.evaluator import HarnessEvaluator

    evaluate = HarnessEvaluator(SPECS / "tiny_softmax.py", "triton", "cpu", CONFIG.to_dict(), ray_address="local")
    try:
        evaluate.open()
        good, bad = evaluate(candidate("honest_softmax")), evaluate(candidate("calls_torch_softmax"))
        evaluate._pool.warm_up(120)  # the second actor may still be starting: both answer once it is up
        assert evaluate._pool.device == "cpu" and len(evaluate._pool.slots()) == 2
    finally:
        evaluate.close()
    assert good["status"] == "passed" and good["diagnostics"]["ray"]["attempts"] == 1
    assert bad["status"] == "rejected" and "aten._softmax" in " ".join(bad["reasons"])


def test_unreachable_address_is_named():
    with pytest.raises(ClusterUnreachable, match="127.0.0.1:9"):
        RayPool("127.0.0.1:9")
    app = typer.Typer()
    app.command()(bench)
    result = CliRunner().invoke(app, ["--suite", str(SPECS / "suite"), "--ray", "127.0.0.1:9"])
    assert result.exit_code == 2 and "cannot reach the Ray cluster at '127.0.0.1:9'" in result.output
    assert "Traceback" not in result.output and result.output.count("error") == 1, result.output
