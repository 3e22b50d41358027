"""Adversarial candidates through a real WorkerPool on CPU (Triton interpreter), static checks OFF so each
cheat is caught by what it does at run time; crashes, exits and memory blow-ups are contained, and an
honest candidate still passes afterwards in the same pool.
"""

from __future__ import annotations

import os
import time

import pytest

from harness import EvalConfig, Status, WorkerPool, evaluate
from tests.harness.harness_helpers import SPECS, candidate

SOFTMAX, NEAR_ZERO, LOOSE, LINEAR, SOFTMAX_BF16, GATHER, RELU, NESTED = (SPECS / f"{n}.py" for n in (
    "tiny_softmax", "near_zero", "fp32_loose", "scaled_linear", "tiny_softmax_bf16", "gather_loose",
    "relu_nonneg", "nested_relu"))
# (candidate, spec, accepted statuses, a word the reasons must contain)
CASES = [
    ("calls_reference", SOFTMAX, {Status.rejected}, "triton backend: the forward ran PyTorch compute ops"),
    ("calls_torch_softmax", SOFTMAX, {Status.rejected}, "aten._softmax"),
    ("caches_output", SOFTMAX, {Status.rejected}, "cached"),
    # right while checked, cheap once timed: the guarded call after timing catches both
    ("switches_after_n_calls", SOFTMAX, {Status.rejected}, "after timing, the output is no longer right"),
    ("switches_when_timed", SOFTMAX, {Status.rejected}, "after timing, the output is no longer right"),
    # the reference's output of the previous trial, found through the garbage collector (plainly, then
    # through the builtins' dict), filled with the right answer and returned
    ("reuses_reference_output", SOFTMAX, {Status.rejected}, "shares memory with the reference's output"),
    ("reference_via_builtins", SOFTMAX, {Status.rejected}, "shares memory with the reference's output"),
    # the reference Model reached without importing the spec: its PyTorch ops give it away
    ("reference_via_sys_dict", SOFTMAX, {Status.rejected}, "aten._softmax"),
    ("reference_via_subclasses", SOFTMAX, {Status.rejected}, "aten._softmax"),
    ("side_stream_attempt", SOFTMAX, {Status.rejected}, "side streams"),  # seen on CPU as well
    ("aliases_input", SOFTMAX, {Status.rejected}, "input 0"),
    ("returns_input", RELU, {Status.rejected}, "output 0 shares memory with input 0"),  # values all right
    ("mutates_input", SOFTMAX, {Status.rejected}, "modified"),
    # tensors inside a list argument are guarded as top-level ones are
    ("mutates_nested_input", NESTED, {Status.rejected}, "input 1 was modified"),
    ("returns_nested_input", NESTED, {Status.rejected}, "output 1 shares memory with input 1"),
    ("honest_nested", NESTED, {Status.passed}, ""),
    ("side_thread", SOFTMAX, {Status.rejected}, "thread"),
    ("monkeypatch_event", SOFTMAX, {Status.rejected}, "monkey-patching"),
    ("lazy_subclass", SOFTMAX, {Status.rejected}, "subclass"),
    ("hardcoded_shape", SOFTMAX, {Status.wrong}, "wide"),  # right on 4x100, wrong on the 2x300 variant
    ("sys_exit", SOFTMAX, {Status.runtime_error}, "sys.exit"),
    ("fake_json_stdout", SOFTMAX, {Status.wrong}, "outside atol"),  # stdout is never read as a result
    ("segfault_ctypes", SOFTMAX, {Status.crashed}, "SIGSEGV"),
    ("memory_blowup", SOFTMAX, {Status.runtime_error, Status.crashed}, "memory"),
    ("triton_compile_error", SOFTMAX, {Status.compile_error}, "power of 2"),
    ("zeros_near_zero", NEAR_ZERO, {Status.wrong}, "near zero or constant"),
    ("precision_downgrade", LOOSE, {Status.rejected}, "precision downgrade"),
    # only the parameters carry precision here: the check must round them (and leave integer inputs alone)
    ("precision_downgrade_gather", GATHER, {Status.rejected}, "precision downgrade"),
    ("honest_gather", GATHER, {Status.passed}, ""),
    ("honest_scale", NEAR_ZERO, {Status.passed}, ""),
    ("honest_fma", LOOSE, {Status.passed}, ""),
    ("honest_scaled_linear", LINEAR, {Status.passed}, ""),
    ("honest_softmax@bf16", SOFTMAX_BF16, {Status.passed}, ""),  # judged by bf16's tolerance, not float32's
    # twice in one worker: the second run's inputs must differ from the first's (the secret seed)
    ("predicts_inputs@1", SOFTMAX, {Status.passed}, ""),
    ("predicts_inputs@2", SOFTMAX, {Status.passed}, ""),
    ("honest_softmax", SOFTMAX, {Status.passed}, ""),  # last: the pool is still healthy after all this
]


@pytest.fixture(scope="module")
def verdicts():
    # trials=2: switches_after_n_calls is right for 3 calls on the timed shape, so it switches while timed
    config = EvalConfig.for_cpu_tests(static_checks=False, trials=2, timeout_s=90.0,
                                      cpu_memory_limit_bytes=5 * 1024**3)
    with WorkerPool(["cpu"], config=config) as pool:
        jobs = [(spec, candidate(name.split("@")[0]), "triton") for name, spec, _, _ in CASES]  # name@variant
        results = pool.evaluate_many(jobs)
        restarts = pool.restarts
    return dict(zip([c[0] for c in CASES], results)), restarts


@pytest.mark.parametrize(("name", "spec", "statuses", "word"), CASES, ids=[c[0] for c in CASES])
def test_classified(verdicts, name, spec, statuses, word):
    verdict = verdicts[0][name]
    assert verdict.status in statuses, (verdict.status, verdict.reasons)
    assert word in " ".join(verdict.reasons), verdict.reasons
    if verdict.status is Status.passed:
        assert verdict.reasons == [] and verdict.latency_ms and verdict.n_timed >= 3


def test_diagnostics_carry_the_spec_warning(verdicts):
    """A near-zero reference is named in the diagnostics (the strict check applied); a plain one is not."""
    scaled = verdicts[0]["honest_scale"].diagnostics["check"]["default"]
    assert any("near zero" in w for w in scaled["spec_warnings"])
    assert "spec_warnings" not in verdicts[0]["honest_softmax"].diagnostics["check"]["default"]


def test_worker_replaced_after_each_failure(verdicts):
    failures = sum(v.status is not Status.passed for v in verdicts[0].values())
    assert verdicts[1] == failures


def test_hang_and_forked_children_are_killed(tmp_path, monkeypatch):
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("KKB_TEST_PIDFILE", str(pidfile))  # inherited by the worker
    # a directly spawned worker (no fork server): it inherits this test's environment, and covers that path
    config = EvalConfig.for_cpu_tests(static_checks=False, timeout_s=25.0, fork_server=False)
    verdict = evaluate(SOFTMAX, candidate("hang_fork"), device="cpu", config=config)
    assert verdict.status is Status.timeout and "25 s" in verdict.reasons[0]
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.monotonic() + 60  # a SIGKILLed group is gone at once; the bound only stops a stuck test
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive, f"pids {alive} survived"  # the worker and both forked children (a process group)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie is dead, waiting for its reaper
    except (ProcessLookupError, FileNotFoundError):
        return False
