"""harness/guard.py: the runtime checks, one by one, on CPU tensors."""

from __future__ import annotations

import contextlib
import threading

import numpy as np
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


def test_recorder_counts_calls_and_passes_keyword_arguments():
    with guard.OpRecorder() as rec:
        x = torch.ones(3)
        y = x + x
        y = y + x
        z = torch.empty(2, dtype=torch.float64)  # dtype reaches aten as a keyword argument
    assert rec.ops["aten.add"] == 2 and rec.ops["aten.ones"] == 1
    assert z.dtype == torch.float64 and torch.equal(y, torch.full((3,), 3.0))


def test_tensors_of_nested_outputs():
    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    assert [t.numel() for t in guard.tensors_of((a, [b, {"c": c}], 7, None))] == [1, 2, 3]
    assert guard.tensors_of(5) == []


def test_clones_and_snapshots_keep_plain_values():
    x = torch.arange(4.0)
    cloned, saved = guard.clone_inputs([x, 3, "mode"]), guard.snapshot_bytes([x, 3])
    assert cloned[1:] == [3, "mode"] and saved[1] is None
    ptr = x.untyped_storage().data_ptr()
    assert torch.equal(cloned[0], x) and cloned[0].untyped_storage().data_ptr() != ptr
    assert saved[0].untyped_storage().data_ptr() != ptr


@pytest.mark.parametrize(("change", "modified"), [
    (lambda x: x.resize_(5), True),  # a new shape
    (lambda x: setattr(x, "data", x.data.view(torch.int32)), True),  # the same bits as another dtype
    (lambda x: None, False),
], ids=["resized", "dtype", "untouched"])
def test_mutation_sees_shape_and_dtype_changes(change, modified):
    x = torch.zeros(4)
    saved = guard.snapshot_bytes([x, 1])
    change(x)
    assert bool(guard.mutation_reasons(saved, [x, 1])) is modified


@pytest.mark.parametrize("n", [0, 1])  # empty, and one element: compared too
def test_mutation_of_tiny_inputs(n):
    x = torch.zeros(n)
    saved = guard.snapshot_bytes([x])
    assert guard.mutation_reasons(saved, [x]) == []
    if n:
        x[0] = 1.0
        reasons = guard.mutation_reasons(saved, [x])
        assert len(reasons) == 1 and "input 0 was modified" in reasons[0]


def test_aliasing_reasons_name_output_and_input():
    x = torch.randn(6)
    reasons = guard.aliasing_reasons((torch.empty(0), x[2:]), [3, x])  # past an empty output
    assert len(reasons) == 1 and "output 1 shares memory with input 1" in reasons[0]
    buf = np.zeros(8, dtype=np.float32)  # two tensors that touch but do not overlap
    left, right = torch.from_numpy(buf[:4]), torch.from_numpy(buf[4:])
    assert guard.aliasing_reasons(left, [right]) == [] and guard.aliasing_reasons(right, [left]) == []


def test_output_type_reasons_look_inside_tuples():
    class Lazy(torch.Tensor):
        pass

    lazy = torch.ones(2).as_subclass(Lazy)
    reasons = guard.output_type_reasons(lazy)
    assert len(reasons) == 1 and reasons[0].startswith("output 0 is a ")
    assert "Lazy (a Tensor subclass)" in reasons[0]
    reasons = guard.output_type_reasons((torch.ones(2), lazy))
    assert len(reasons) == 1 and reasons[0].startswith("output 1 is a ") and "Lazy" in reasons[0]
    assert guard.output_type_reasons([torch.ones(2), 3]) == []


def test_tracker_hands_the_stream_on(monkeypatch):
    """The wrappers record the use and then do what torch would: the stream reaches torch's own functions."""
    import torch.cuda as tc

    given = []
    monkeypatch.setattr(tc, "stream", lambda s: given.append(("stream", s)) or "ctx")
    monkeypatch.setattr(tc, "set_stream", lambda s: given.append(("set_stream", s)))
    monkeypatch.setattr(tc, "Stream", tc.Stream)
    monkeypatch.setattr(guard.StreamTracker, "used", [])
    guard.StreamTracker.install()
    side = object()
    assert torch.cuda.stream(side) == "ctx"
    torch.cuda.set_stream(side)
    assert given == [("stream", side), ("set_stream", side)]
    assert guard.StreamTracker.used == ["torch.cuda.stream()", "torch.cuda.set_stream()"]


@pytest.mark.parametrize(("current", "reasons"), [("side", 1), ("default", 0)])
def test_stream_reasons_on_a_cuda_device(monkeypatch, current, reasons):
    """The end-of-forward check on a CUDA device, with torch's stream queries answered by stand-ins (the
    GPU tests run it for real: test_gpu_harness.py)."""
    asked = []

    def query(answer):
        return lambda dev: asked.append(dev) or answer

    monkeypatch.setattr(guard.StreamTracker, "used", [])
    monkeypatch.setattr(torch.cuda, "current_stream", query(current))
    monkeypatch.setattr(torch.cuda, "default_stream", query("default"))
    out = guard.stream_reasons("cuda:1")
    assert len(out) == reasons and asked == [torch.device("cuda:1")] * 2
    if reasons:
        assert "left a non-default CUDA stream current" in out[0]
    assert guard.stream_reasons("cpu") == [] and len(asked) == 2  # no CUDA query for a CPU device
