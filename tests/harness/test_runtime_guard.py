"""harness/guard.py: the runtime checks, one by one, on CPU tensors."""

from __future__ import annotations

import contextlib
import threading

import pytest
import torch

from harness import guard


@pytest.fixture
def tracker(monkeypatch):
    """StreamTracker installed on this process's torch.cuda, and taken off again after the test."""
    import torch.cuda as tc

    for name in ("Stream", "stream", "set_stream"):
        monkeypatch.setattr(tc, name, getattr(tc, name))  # restored at teardown
    monkeypatch.setattr(guard.StreamTracker, "used", [])
    guard.StreamTracker.install()
    return guard.StreamTracker


def test_stream_tracker_ignores_wrapped_existing_streams(tracker):
    # torch.cuda.current_stream()/default_stream() wrap existing streams as Stream(stream_id=...)
    with contextlib.suppress(Exception):  # no CUDA here: construction fails after the tracker ran
        torch.cuda.Stream(stream_id=0, device_index=0, device_type=1)
    assert tracker.used == []
    assert guard.stream_reasons("cpu") == []
    with contextlib.suppress(Exception):
        torch.cuda.Stream()  # a new stream: a side stream
    assert tracker.used == ["torch.cuda.Stream()"]
    assert "side streams" in guard.stream_reasons("cpu")[0]


@pytest.mark.parametrize(("use", "seen"), [
    (lambda: torch.cuda.Stream(priority=-1), "torch.cuda.Stream()"),
    (lambda: torch.cuda.stream(None), "torch.cuda.stream()"),
    (lambda: torch.cuda.set_stream(None), "torch.cuda.set_stream()"),
])
def test_stream_tracker_sees_each_route(tracker, use, seen):
    with contextlib.suppress(Exception):
        use()
    assert tracker.used == [seen]
    reasons = guard.stream_reasons("cpu")
    assert len(reasons) == 1 and seen in reasons[0] and "escapes the timer" in reasons[0]


def test_stream_tracker_installs_once(tracker):
    wrapped = torch.cuda.Stream
    guard.StreamTracker.install()
    assert torch.cuda.Stream is wrapped  # not wrapped twice (each use would count twice)
    with contextlib.suppress(Exception):
        torch.cuda.stream(None)
    assert tracker.used == ["torch.cuda.stream()"]


def test_thread_reasons_count_live_threads_only():
    before = threading.active_count()
    assert guard.thread_reasons(before) == []
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        reasons = guard.thread_reasons(before)
        assert len(reasons) == 1 and "started 1 Python thread(s)" in reasons[0]
    finally:
        stop.set()
        worker.join()
    assert guard.thread_reasons(before) == []  # a thread joined before forward returns escapes nothing


def test_mutation_and_aliasing():
    x = torch.randn(8)
    saved = guard.snapshot_bytes([x])
    assert guard.mutation_reasons(saved, [x]) == []
    x[3] = 0.0
    assert "input 0 was modified" in guard.mutation_reasons(saved, [x])[0]
    assert guard.aliasing_reasons(x[2:], [x])  # a view of the input
    assert guard.aliasing_reasons(x.clone(), [x]) == []


def test_forbidden_ops_and_recorder():
    with guard.OpRecorder() as rec:
        y = torch.empty(4)
        torch.softmax(torch.randn(4), dim=0)
    assert "aten.empty" in rec.ops and "aten._softmax" in rec.ops
    reasons = guard.forbidden_op_reasons(rec.ops, frozenset({"aten.empty", "aten.randn"}), "triton")
    assert "aten._softmax" in reasons[0]
    assert guard.forbidden_op_reasons(rec.ops, None, "torch") == []
    del y


def test_output_type_and_late_write():
    class Lazy(torch.Tensor):
        pass

    assert guard.output_type_reasons(torch.ones(2).as_subclass(Lazy))
    out = torch.ones(3)
    snap = [out.clone()]
    assert guard.late_write_reasons(snap, out) == []
    out[0] = 2.0
    assert "changed after forward returned" in guard.late_write_reasons(snap, out)[0]
