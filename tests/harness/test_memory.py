"""Memory-aware scheduling (harness/memory.py, harness/device.py): the footprint estimated on the meta
device, a spec too large refused before anything runs, the per-device budget, and out-of-memory errors
retried once alone with their owner named."""

from __future__ import annotations

import threading
import time

import pytest

from harness import EvalConfig, Status, WorkerPool, evaluate, load_spec
from harness.baselines import BaselineCache
from harness.memory import DeviceBudget, SpecTooLarge, estimate_footprint
from harness.worker import oom_owner
from tests.harness.harness_helpers import SPECS, candidate

# KernelBench level 1's Softmax at its published size: 4096 x 393216 fp32, 6.4 GB of input
BIG_SOFTMAX = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
"""


def test_footprint_from_the_meta_device():
    spec = load_spec(SPECS / "tiny_softmax.py")  # variants 4x100, 3x37, 2x300: the largest is 2x300
    fp = estimate_footprint(spec, EvalConfig(), "cpu")
    assert fp.method == "meta" and (fp.input_bytes, fp.output_bytes, fp.parameter_bytes) == (2400, 2400, 0)
    assert fp.evaluation_bytes == max(fp.check_bytes, fp.timing_bytes)  # no CUDA context on CPU
    linear = estimate_footprint(load_spec(SPECS / "scaled_linear.py"), EvalConfig(), "cuda:0")
    assert linear.parameter_bytes > 0
    # on a GPU: the L2 flush buffer, the clone pool and a CUDA context
    assert linear.timing_bytes >= EvalConfig().l2_flush_bytes + EvalConfig().clone_pool_bytes


def test_published_softmax_estimated_without_allocating(tmp_path):
    path = tmp_path / "23_Softmax.py"
    path.write_text(BIG_SOFTMAX)
    t0 = time.monotonic()
    fp = estimate_footprint(load_spec(path), EvalConfig(), "cuda:0")
    assert time.monotonic() - t0 < 5  # shapes only: 6.4 GB are never drawn
    assert fp.input_bytes == fp.output_bytes == 4096 * 393216 * 4
    assert 40 * 1024**3 < fp.evaluation_bytes < 80 * 1024**3  # fits an H200 (one evaluation at a time)



def test_a_spec_written_for_a_gpu_is_estimated_too(tmp_path):
    # .cuda() and device="cuda" land on the meta device: the estimate needs no GPU and copies nothing to one
    path = tmp_path / "gpu_written.py"
    path.write_text(BIG_SOFTMAX.replace("torch.rand(batch_size, dim)", "torch.rand(batch_size, dim).cuda()")
                    .replace("torch.softmax(x, dim=1)", "torch.softmax(x, dim=1) * torch.ones(1, device='cuda')"))
    assert ".cuda()" in path.read_text() and "device='cuda'" in path.read_text()
    fp = estimate_footprint(load_spec(path), EvalConfig(), "cuda:0")
    assert fp.method == "meta" and fp.input_bytes == 4096 * 393216 * 4

def test_spec_too_large_for_the_device_is_refused_before_running(tmp_path):
    path = tmp_path / "23_Softmax.py"
    path.write_text(BIG_SOFTMAX)
    cache = BaselineCache(tmp_path / "baselines")
    with pytest.raises(SpecTooLarge) as info:
        evaluate(path, candidate("honest_softmax"), device="cpu", config=EvalConfig.for_cpu_tests(),
                 baselines=cache)
    message = str(info.value)
    assert "23_Softmax.py" in message and "estimated footprint" in message and "GiB" in message
    assert "nothing was run" in message and cache.measured == 0  # not even the reference's baselines


def test_budget_holds_bytes_first_come_first_served():
    budget = DeviceBudget("cuda:0", capacity_bytes=100)
    order: list[str] = []
    with budget.hold(60):
        def take(name: str, nbytes: int) -> None:
            with budget.hold(nbytes):
                order.append(name)
                time.sleep(0.05)

        big = threading.Thread(target=take, args=("whole", 100))  # waits for the 60 to be returned
        big.start()
        time.sleep(0.05)
        small = threading.Thread(target=take, args=("small", 10))  # would fit now, but waits its turn
        small.start()
        time.sleep(0.1)
        assert order == [] and budget.in_use_bytes == 60
    big.join(5)
    small.join(5)
    assert order == ["whole", "small"] and budget.in_use_bytes == 0
    with budget.hold(10 ** 9) as granted:  # larger than the device: clipped, and alone
        assert granted == 100


def test_two_small_evaluations_share_a_device():
    budget = DeviceBudget("cuda:0", capacity_bytes=100)
    inside = threading.Barrier(2, timeout=5)

    def both(nbytes: int) -> None:
        with budget.hold(nbytes):
            inside.wait()  # both are inside at once

    threads = [threading.Thread(target=both, args=(40,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert budget.peak_holders == 2


def _raise_oom():
    raise MemoryError("can't allocate memory")


def test_oom_owner_follows_the_failed_allocation(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text("def forward(f):\n    f()\n")
    namespace: dict = {}
    exec(compile(cand.read_text(), str(cand), "exec"), namespace)  # noqa: S102 - a frame from a named file
    try:
        namespace["forward"](_raise_oom)
    except MemoryError as exc:
        assert oom_owner(exc, str(cand)) == "candidate"  # the candidate's frame was on the stack
        assert oom_owner(exc, str(tmp_path / "other.py")) == "harness"
    try:
        _raise_oom()
    except MemoryError as exc:
        assert oom_owner(exc, str(cand)) == "harness"  # e.g. drawing inputs or cloning them
    assert oom_owner(ValueError("shape mismatch"), str(cand)) is None


def test_candidate_oom_retried_alone_then_named(tmp_path):
    config = EvalConfig.for_cpu_tests(static_checks=False, timeout_s=90.0, cpu_memory_limit_bytes=5 * 1024**3)
    with WorkerPool(["cpu"], config=config, baselines=BaselineCache(tmp_path / "b")) as pool:
        verdict = pool.evaluate(SPECS / "tiny_softmax.py", candidate("memory_blowup"), "triton")
        after = pool.evaluate(SPECS / "tiny_softmax.py", candidate("honest_softmax"), "triton")
    assert verdict.status is Status.runtime_error
    assert verdict.diagnostics["oom"] == {"owner": "candidate", "attempts": 2}
    assert "the candidate's allocation failed" in " ".join(verdict.reasons)
    assert after.passed  # the pool carries on


@pytest.mark.parametrize(("room", "together"), [
    (3.0, 2),  # room for two evaluations: both run at once
    (1.5, 1),  # room for one: the second waits for the first's memory
])
def test_pool_runs_as_many_evaluations_at_once_as_fit(tmp_path, room, together):
    spec = SPECS / "suite" / "1_TinyRelu.py"
    config = EvalConfig.for_cpu_tests()
    with WorkerPool(["cpu", "cpu"], config=config, baselines=BaselineCache(tmp_path / "b")) as pool:
        share = pool.runners[0].share_for(load_spec(spec))  # this spec's bytes per evaluation
        budget = DeviceBudget("cpu", int(room * share))
        pool.runners[0].use_budget(budget)  # the second runner shares the first's budget
        verdicts = pool.evaluate_many([(spec, candidate("slow_first_call"), "triton")] * 2)  # ~6 s each
    assert all(v.passed for v in verdicts), [v.reasons for v in verdicts]
    assert budget.peak_holders == together
