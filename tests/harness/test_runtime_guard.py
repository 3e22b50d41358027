"""harness/guard.py: the runtime checks, one by one, on CPU tensors."""

from __future__ import annotations

import contextlib

import torch

from harness import guard


def test_stream_tracker_ignores_wrapped_existing_streams():
    guard.StreamTracker.install()
    guard.StreamTracker.used.clear()
    # torch.cuda.current_stream()/default_stream() wrap existing streams as Stream(stream_id=...)
    with contextlib.suppress(Exception):  # no CUDA here: construction fails after the tracker ran
        torch.cuda.Stream(stream_id=0, device_index=0, device_type=1)
    assert guard.StreamTracker.used == []
    with contextlib.suppress(Exception):
        torch.cuda.Stream()  # a new stream: a side stream
    assert guard.StreamTracker.used == ["torch.cuda.Stream()"]
    assert "side streams" in guard.stream_reasons("cpu")[0]
    guard.StreamTracker.used.clear()


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
