"""benchmarks/warm.py's pool of warm-up processes: tasks overlap only while their declared memory fits, and a
process that dies (a segfault in a candidate's first call) costs only its own task."""

from __future__ import annotations

import os
import time

from benchmarks.warm import WarmPool, share_compile_caches


def _span(seconds: float) -> tuple[float, float]:
    start = time.time()
    time.sleep(seconds)
    return start, time.time()


def _die() -> None:
    os._exit(3)  # as a segfault would: no exception, no result


def test_tasks_overlap_only_while_their_memory_fits():
    with WarmPool(workers=3, capacity_bytes=100) as pool:
        for f in [pool.submit(0, _span, 0.5) for _ in range(3)]:  # three processes started
            f.result(timeout=120)
        small = [pool.submit(30, _span, 1.0) for _ in range(3)]  # 90 bytes: all three at once
        spans = [f.result(timeout=120) for f in small]
        big = [pool.submit(60, _span, 0.5) for _ in range(2)]  # 120 bytes: one after the other
        first, second = sorted(f.result(timeout=120) for f in big)
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # the small ones ran together
    assert second[0] >= first[1] - 0.05  # the large ones did not


def test_a_crashed_process_fails_only_its_own_task():
    with WarmPool(workers=2, capacity_bytes=100) as pool:
        doomed = pool.submit(0, _die)
        others = [pool.submit(0, _span, 0.2) for _ in range(3)]
        results = [f.result(timeout=180) for f in others]
        try:
            doomed.result(timeout=180)
            raised = None
        except Exception as exc:  # noqa: BLE001 - the broken pool's error is the expected outcome
            raised = exc
    assert raised is not None and "terminated abruptly" in str(raised)
    assert all(end > start for start, end in results)


def test_the_caches_are_shared_through_the_environment(tmp_path, monkeypatch):
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):  # set then unset: restored after the test
        monkeypatch.setenv(name, "-")
        monkeypatch.delenv(name)
    paths = share_compile_caches(tmp_path)
    assert paths == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
                     "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "triton") and (tmp_path / "inductor").is_dir()
