"""The dispatch copied into every exported module, on a small model whose kernel path is marked: which path
a key takes, what is logged and how often, and what the op's outputs promise."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

from agent_client.shipping.runtime import KkbDispatch, init_key

INIT = init_key((4,), {})


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.lin = nn.Linear(hidden, hidden)
        self.register_buffer("shift", torch.ones(hidden))

    def forward(self, x):
        return self.lin(x) + self.shift


class ModelNew(Model):
    def forward(self, x):  # the "kernel": the same numbers, through other ops
        return x @ self.lin.weight.t() + self.lin.bias + self.shift


class Alias(Model):
    def forward(self, x):
        return x  # an output that is the input itself


PATHS = ("lin.weight", "lin.bias", "shift")


def _row(shape, device="cpu", speedup=1.5, correct=True, init=INIT):
    return {"variant": "default", "init": init, "inputs": [{"shape": list(shape), "dtype": "float32"}],
            "state": [{"path": "lin.weight", "shape": [4, 4], "dtype": "float32"},
                      {"path": "lin.bias", "shape": [4], "dtype": "float32"},
                      {"path": "shift", "shape": [4], "dtype": "float32"}],
            "device_name": device, "correct": correct, "speedup": speedup, "basis": "compile"}


def _dispatch(table, min_speedup=1.0, kernel=ModelNew, name="kkb_test"):
    return KkbDispatch(Model, kernel, name, table, PATHS, min_speedup, logging.getLogger(name))


def _args(rows=2):
    model = Model(4)
    return (torch.randn(rows, 4),), [model.lin.weight.detach(), model.lin.bias.detach(), model.shift], model


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.parametrize("table, min_speedup, rows, path, why", [
    ([_row((2, 4))], 1.0, 2, "kernel", "measured 1.5x over compile"),
    ([_row((2, 4))], 1.0, 3, "reference", "not measured"),  # another shape
    ([_row((2, 4), speedup=0.8)], 1.0, 2, "reference", "measured 0.8x"),  # measured to lose
    ([_row((2, 4), speedup=0.8)], 0.5, 2, "kernel", "MIN_SPEEDUP 0.5"),  # the user's threshold
    ([_row((2, 4), correct=False)], 0.0, 2, "reference", "was wrong"),
    ([_row((2, 4), speedup=None)], 1.0, 2, "reference", "checked, not timed"),
    ([_row((2, 4), speedup=None)], 0.0, 2, "kernel", "checked, not timed"),
    ([_row((2, 4), init=init_key((8,), {}))], 1.0, 2, "reference", "not measured"),  # another constructor
    ([_row((2, 4), speedup=0.5), _row((2, 4), speedup=2.0)], 1.0, 2, "kernel", "2x"),  # the latest row counts
])
def test_which_path_a_call_takes(table, min_speedup, rows, path, why):
    dispatch = _dispatch(table, min_speedup)
    inputs, state, model = _args(rows)
    out = dispatch.run(inputs, state, INIT)
    assert (dispatch.last_path, dispatch.paths_taken[path]) == (path, 1)
    assert why in dispatch.last_reason
    torch.testing.assert_close(out, model(*inputs))


def test_another_device_falls_back_and_warns_once(caplog):
    dispatch = _dispatch([_row((2, 4), device="NVIDIA H200")], name="kkb_test_device")
    inputs, state, model = _args()
    with caplog.at_level(logging.DEBUG, logger="kkb_test_device"):
        for _ in range(3):
            torch.testing.assert_close(dispatch.run(inputs, state, INIT), model(*inputs))
        dispatch.run(_args(rows=5)[0], state, INIT)  # a shape not measured at all: a debug line, no warning
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "NVIDIA H200" in warnings[0].getMessage()
    assert "not on this cpu" in warnings[0].getMessage() and dispatch.paths_taken["reference"] == 4
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 1 and "not measured" in debug[0]


def test_the_cpu_needs_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    dispatch = _dispatch([_row((2, 4))])
    inputs, state, _ = _args()
    dispatch.run(inputs, state, INIT)
    assert dispatch.last_path == "reference" and "TRITON_INTERPRET=1" in dispatch.last_reason


def test_outputs_never_alias_their_arguments():
    dispatch = _dispatch([_row((2, 4))], kernel=Alias)
    inputs, state, _ = _args()
    out = dispatch.run(inputs, state, INIT)
    assert dispatch.last_path == "kernel"
    assert out.data_ptr() != inputs[0].data_ptr() and torch.equal(out, inputs[0])


def test_the_template_keeps_no_tensor_between_calls():
    dispatch = _dispatch([_row((2, 4))])
    inputs, state, _ = _args()
    dispatch.run(inputs, state, INIT)
    module, _ = dispatch._template(INIT)
    assert module.lin.weight is None and module.shift is None  # the caller's tensors are not held
    assert "wins" in dispatch.where() and any("1.5x over compile" in w for w in dispatch.where()["wins"])


class WithDefault(nn.Module):
    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.eps = eps


def test_constructor_arguments_are_named_with_their_defaults():
    dispatch = KkbDispatch(WithDefault, WithDefault, "kkb_test_init", [], (), 1.0, logging.getLogger("x"))
    keys = {dispatch.register_init((4,), {}), dispatch.register_init((4,), {"eps": 1e-5}),
            dispatch.register_init((4, 1e-5), {}), dispatch.register_init((), {"hidden": 4})}
    assert keys == {"((4, 1e-05), {})"}
    other = dispatch.register_init((4, object()), {})  # not a literal: kept in this process
    assert other.startswith("object:") and dispatch._init_args(other)[0][0] == 4


def test_another_layout_of_a_measured_shape_is_another_key():
    """A table measured on contiguous inputs (a row without strides, as older tables wrote it, counts as
    contiguous) does not send a transposed input of the same shape to the kernel; a row measured at that
    layout does, and the reason names the strides."""
    model = Model(4)
    state = [model.lin.weight.detach(), model.lin.bias.detach(), model.shift]
    x = torch.randn(4, 4).t()
    dispatch = _dispatch([_row((4, 4))])
    torch.testing.assert_close(dispatch.run((x,), state, INIT), model(x))
    assert dispatch.last_path == "reference" and "not measured" in dispatch.last_reason
    assert "4x4 float32 strides (1, 4)" in dispatch.last_reason
    dispatch.run((x.contiguous(),), state, INIT)
    assert dispatch.last_path == "kernel"
    row = _row((4, 4))
    row["inputs"][0]["stride"] = [1, 4]
    dispatch = _dispatch([row])
    dispatch.run((x,), state, INIT)
    assert dispatch.last_path == "kernel"
    dispatch.run((x.contiguous(),), state, INIT)
    assert dispatch.last_path == "reference"
