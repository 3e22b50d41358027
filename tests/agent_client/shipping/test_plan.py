"""What a module holds and what it refuses, without a session: the op's signature read from published specs,
a module written and read back, tuple outputs through torch.compile, and candidates that cannot be shipped."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from agent_client.lowering.emit import spec_body
from agent_client.measurements import Measured
from agent_client.shipping.plan import ExportError, build_plan, read_plan
from agent_client.shipping.writer import render_module
from tests.agent_client.agent_helpers import REPO

PUBLISHED = REPO / "tests" / "published_specs"


def _candidate(spec_name: str, forward: str) -> str:
    """A candidate as the offline provider writes them (the spec's Model kept), with a forward of torch ops."""
    body = spec_body((PUBLISHED / spec_name).read_text())
    return f"{body}\n\nclass ModelNew(Model):\n    def forward(self, x):\n{forward}\n"


def _row(inputs, state, speedup_ms=(1.0, 2.0)) -> Measured:
    latency, eager = speedup_ms
    return Measured(variant="default", spec="s", device_name="cpu", inputs=tuple(inputs), state=tuple(state),
                    correct=True, latency_ms=latency, eager_ms=eager, source="test")


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_tuple_output_module_round_trips_and_compiles_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = PUBLISHED / "9_RowMax_TupleOutput.py"
    code = _candidate(spec.name, "        values, indices = x.max(dim=self.dim)\n        return values, indices")
    plan = build_plan(spec, code, [_row([{"shape": [6, 50], "dtype": "float32"}], [])], {"source": "test"})
    assert (plan.n_outputs, plan.input_names, plan.state_paths, plan.default_init) == (2, ("x",), (), "((1,), {})")
    path = tmp_path / "rowmax_op.py"
    path.write_text(render_module(plan, path.stem))
    again = read_plan(path)
    assert again.entries == plan.entries and again.candidate_source == plan.candidate_source
    assert (again.op_name, again.n_outputs, again.spec_source) == (plan.op_name, 2, plan.spec_source)
    module = _load(path, "rowmax_op")
    model = module.KernelModel(1)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    x = torch.randn(6, 50)
    with torch.no_grad():
        values, indices = compiled(x)
    assert module.paths_taken()["last"] == "kernel"  # measured 2x over eager on this cpu
    want = torch.max(x, dim=1)
    assert torch.equal(values, want.values) and torch.equal(indices, want.indices)


def test_parameters_and_buffers_are_op_arguments_in_a_fixed_order(tmp_path):
    spec = PUBLISHED / "10_ScaleShift_Helper.py"
    code = _candidate(spec.name, "        return new_gelu(x * self.scale + self.shift)")
    plan = build_plan(spec, code, [], {"source": "test"})
    assert plan.state_paths == ("scale", "shift") and not plan.mutates_state
    text = render_module(plan, "scale_op")
    assert "_kkb_op(x, [self.scale, self.shift], self._kkb_init)" in text
    assert "def _kkb_op(x: torch.Tensor, state: list[torch.Tensor], init: str) -> torch.Tensor:" in text


def test_a_candidate_with_parameters_of_its_own_is_refused():
    spec = PUBLISHED / "10_ScaleShift_Helper.py"
    code = spec_body(spec.read_text()) + (
        "\n\nclass ModelNew(torch.nn.Module):\n    def __init__(self, num_features):\n        super().__init__()\n"
        "        self.w = torch.nn.Parameter(torch.ones(num_features))\n\n    def forward(self, x):\n"
        "        return x * self.w\n")
    with pytest.raises(ExportError, match=r"parameters and buffers \['w'\].*\['scale', 'shift'\]"):
        build_plan(spec, code, [], {"source": "test"})


def test_a_candidate_without_the_specs_model_is_refused():
    with pytest.raises(ExportError, match="defines no ModelNew"):
        build_plan(PUBLISHED / "10_ScaleShift_Helper.py", "import torch\nX = 1\n", [], {"source": "test"})
