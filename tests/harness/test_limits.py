"""Time limits that fit the spec (harness/limits.py): derived from the reference's measured costs, with a
floor, overridden by --timeout; a hang after an honest launch is cut at the derived limit (the 90 s bar itself
is measured by benchmarks/bench_hang.py)."""

from __future__ import annotations

import re
import subprocess
import sys

from harness.config import EvalConfig
from harness.limits import candidate_timeout_s
from tests.harness.harness_helpers import CANDIDATES, REPO, SPECS, harness_env


def profile(eager_ms: float, inputs_s: float = 0.001, build_s: float = 0.001, checked: int = 2) -> dict:
    entry = {"eager": {"median_ms": eager_ms}, "inputs_s": inputs_s, "build_s": build_s, "first_call_s": 0.01}
    return {"timed": {"default": entry},
            "checked": {f"v{i}": {"inputs_s": inputs_s, "build_s": build_s} for i in range(checked)}}


def test_given_timeout_overrides():
    seconds, how = candidate_timeout_s(EvalConfig(timeout_s=7.0), profile(1.0), "cuda:0")
    assert seconds == 7.0 and "given" in how


def test_microsecond_reference_gets_about_the_floor():
    config = EvalConfig()
    gpu, _ = candidate_timeout_s(config, profile(0.005), "cuda:0", first_calls=False)
    assert config.timeout_floor_s <= gpu < config.timeout_floor_s + 10  # seconds, not the old 300
    first, _ = candidate_timeout_s(config, profile(0.005), "cuda:0", first_calls=True)
    assert first - gpu == config.compile_allowance_s  # a first call compiles on a GPU
    cpu, _ = candidate_timeout_s(config, profile(0.005), "cpu")  # the interpreter: no compile allowance
    assert config.timeout_floor_s <= cpu < config.timeout_floor_s + 10


def test_slow_reference_and_slow_inputs_get_more_time():
    config = EvalConfig()
    fast, _ = candidate_timeout_s(config, profile(0.01), "cuda:0")
    slow_ref, _ = candidate_timeout_s(config, profile(50.0), "cuda:0")  # 50 ms a call: ~60 calls x 20
    slow_inputs, how = candidate_timeout_s(config, profile(0.01, inputs_s=5.0), "cuda:0")  # inputs on the host
    assert slow_ref > fast + 50 and slow_inputs > fast + 100
    assert "harness's work" in how
    capped, _ = candidate_timeout_s(config, profile(1e5), "cuda:0")
    assert capped == config.timeout_max_s


def test_a_busy_machine_does_not_stretch_the_limit():
    # wall-clock timing on a shared CPU: other processes inflate the median; the 20th percentile is used
    config = EvalConfig()
    quiet, _ = candidate_timeout_s(config, profile(0.02), "cpu")
    busy = profile(20.0)  # a median 1000 times the undisturbed call...
    busy["timed"]["default"]["eager"]["p20_ms"] = 0.02  # ...whose fastest fifth ran undisturbed
    assert candidate_timeout_s(config, busy, "cpu")[0] == quiet < config.timeout_floor_s + 5


def test_eager_slowed_by_waiting_threads_is_bounded_by_the_compiled_time():
    # a loaded 2-core CPU: eager's OpenMP threads wait on each other (every call ~12 ms, fifth percentile
    # too) while the compiled form of the same work takes microseconds: the faster one sets the limit
    config = EvalConfig()
    quiet, _ = candidate_timeout_s(config, profile(0.02), "cpu")
    stalled = profile(12.0)
    stalled["timed"]["default"]["eager"]["p20_ms"] = 12.0
    stalled["timed"]["default"]["compile"] = {"median_ms": 0.03, "p20_ms": 0.02}
    assert candidate_timeout_s(config, stalled, "cpu")[0] == quiet
    assert candidate_timeout_s(config, profile(12.0), "cpu")[0] > quiet + 60  # no compiled timing: eager's


def test_no_profile_gives_the_floor():
    seconds, how = candidate_timeout_s(EvalConfig(), None, "cpu")
    assert seconds == EvalConfig().timeout_floor_s and "no profile" in how


def test_hang_after_an_honest_launch_gets_the_derived_limit(tmp_path):
    # `kkb bench` with its default options on CPU (torch.compile baseline included, no --timeout), from a
    # cold baseline cache: the hang is cut at the limit derived from the tiny spec's profile, not at a
    # fixed long default (no wall-clock bound here: a loaded machine may take longer to start)
    cmd = [sys.executable, "-m", "harness.cli", str(SPECS / "tiny_softmax.py"),
           str(CANDIDATES / "launch_then_hang.py"), "--device", "cpu", "-o", str(tmp_path / "v.json")]
    done = subprocess.run(cmd, cwd=REPO, env=harness_env(tmp_path), capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    limit = re.search(r"no result within (\d+) s", done.stdout)
    assert "timeout" in done.stdout and limit, done.stdout[-2000:]
    derived, _ = candidate_timeout_s(EvalConfig(), None, "cpu")
    assert int(limit.group(1)) <= 2 * derived, f"the hang was cut at {limit.group(1)} s, not near the derived limit"
