"""Baselines once (harness/baselines.py): a spec's eager and torch.compile timings measured once per spec,
device and software version, on disk, shared by every candidate, pool and session."""

from __future__ import annotations

from harness import EvalConfig, WorkerPool, evaluate, load_spec
from harness.baselines import BaselineCache, baseline_key
from tests.harness.harness_helpers import SPECS, candidate

INFO = {"device_name": "NVIDIA H200", "python": "3.12.1", "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0"}


def test_key_follows_spec_device_versions_and_settings():
    spec = load_spec(SPECS / "tiny_softmax.py")
    base = baseline_key(spec, INFO, EvalConfig())
    assert base == baseline_key(spec, dict(INFO), EvalConfig(trials=7))  # checking settings: same baselines
    assert base != baseline_key(spec, {**INFO, "device_name": "NVIDIA H100"}, EvalConfig())
    assert base != baseline_key(spec, {**INFO, "torch": "2.12.0"}, EvalConfig())
    assert base != baseline_key(spec, INFO, EvalConfig(max_timing_s=2.0))
    assert base != baseline_key(load_spec(SPECS / "near_zero.py"), INFO, EvalConfig())


def test_measured_once_then_shared_across_candidates_pools_and_processes(tmp_path):
    config = EvalConfig.for_cpu_tests()
    cache = BaselineCache(tmp_path / "baselines")
    first = evaluate(SPECS / "tiny_softmax.py", candidate("honest_softmax"), device="cpu", config=config,
                     baselines=cache)
    second = evaluate(SPECS / "tiny_softmax.py", candidate("hardcoded_shape"), device="cpu", config=config,
                      baselines=cache)
    assert first.passed and cache.measured == 1 and cache.hits >= 1
    assert first.eager_ms == second.eager_ms  # the same measurement
    # another process's cache (a new session, a pool): read from disk, nothing measured again
    later = BaselineCache(tmp_path / "baselines")
    with WorkerPool(["cpu", "cpu"], config=config, baselines=later) as pool:
        verdicts = pool.evaluate_many([(SPECS / "tiny_softmax.py", candidate("honest_softmax"), "triton")] * 2)
    assert later.measured == 0 and all(v.passed and v.eager_ms == first.eager_ms for v in verdicts)
