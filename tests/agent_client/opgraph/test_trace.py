"""The spec front end traces files as published: super(Model, self), buffers, tuples, integer inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client.opgraph import TraceError, trace_spec

PUBLISHED = Path(__file__).resolve().parents[2] / "published_specs"


@pytest.mark.parametrize("spec", sorted(PUBLISHED.glob("*.py")), ids=lambda p: p.stem)
def test_every_published_style_spec_traces(spec):
    graph = trace_spec(spec)
    assert graph.calls(), "a traced graph holds the spec's ops"
    assert all(g.meta is not None for g in graph.inputs.values())


def test_parameters_and_buffers_are_named_by_attribute_path():
    graph = trace_spec(PUBLISHED / "6_CausalAttention_Buffer.py")
    kinds = {str(g.ref): g.kind for g in graph.inputs.values()}
    assert kinds["c_attn.weight"] == "param" and kinds["bias"] == "buffer" and kinds["0"] == "input"


def test_tuple_outputs_are_kept_in_order():
    graph = trace_spec(PUBLISHED / "9_RowMax_TupleOutput.py")
    assert graph.output_tuple and graph.n_outputs == 2


def test_batchnorm_statistics_are_mutations(tmp_path):
    spec = tmp_path / "bn.py"
    spec.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super(Model, self).__init__()\n"
        "        self.bn = nn.BatchNorm1d(8)\n\n"
        "    def forward(self, x):\n"
        "        return self.bn(x)\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n"
        "def get_init_inputs():\n    return []\n")
    graph = trace_spec(spec)
    assert {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"} <= set(graph.mutation_targets)
    assert len(graph.mutations) == len(graph.mutation_targets)


def test_data_dependent_control_flow_names_the_line(tmp_path):
    spec = tmp_path / "branchy.py"
    spec.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n"
        "            return x * 2\n"
        "        return x\n\n"
        "def get_inputs():\n    return [torch.randn(4)]\n\n"
        "def get_init_inputs():\n    return []\n")
    with pytest.raises(TraceError) as info:
        trace_spec(spec)
    message = str(info.value)
    assert "branchy.py" in message and "line 6" in message and "tensor values" in message


def test_an_output_shaped_by_values_is_named_with_its_line(tmp_path):
    spec = tmp_path / "masked.py"
    spec.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        kept = x[x > 0]\n        return kept.sum()\n\n"
        "def get_inputs():\n    return [torch.randn(4)]\n\n"
        "def get_init_inputs():\n    return []\n")
    with pytest.raises(TraceError) as info:
        trace_spec(spec)
    message = str(info.value)
    assert "masked.py" in message and "line 5" in message and "shape depends on tensor values" in message


def test_a_spec_missing_its_functions_is_named(tmp_path):
    spec = tmp_path / "half.py"
    spec.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    with pytest.raises(TraceError, match="get_inputs"):
        trace_spec(spec)


def test_a_spec_written_for_a_gpu_traces_without_one(tmp_path):
    # .cuda() in get_inputs, a buffer moved in __init__, a module moved with .to, device="cuda" in forward:
    # the trace reads shapes alone, so it needs no GPU (and on a GPU a meta tensor cannot be copied to it)
    spec = tmp_path / "gpu_written.py"
    spec.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super(Model, self).__init__()\n"
        "        self.register_buffer('mask', torch.tril(torch.ones(d, d)).cuda())\n"
        "        self.proj = nn.Linear(d, d).to('cuda')\n"
        "    def forward(self, x):\n"
        "        scale = torch.full((x.shape[-1],), 0.5, device='cuda')\n"
        "        return self.proj(x @ self.mask) * scale\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8).cuda()]\n\n"
        "def get_init_inputs():\n    return [8]\n")
    graph = trace_spec(spec)
    assert {"mask", "proj.weight", "proj.bias"} <= {str(i.ref) for i in graph.inputs.values()}
    assert graph.n_outputs == 1


def test_torch_compile_in_a_spec_is_traced_as_written(tmp_path):
    # a compiled helper, a compiled method and a submodule compiled in __init__: FX cannot trace through
    # dynamo, so the trace runs what they wrap; parameters keep the names the spec's model gives them
    spec = tmp_path / "compiled.py"
    spec.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "@torch.compile\ndef swish(a):\n    return a * torch.sigmoid(a)\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, d):\n        super().__init__()\n        self.fc = nn.Linear(d, d)\n"
        "    @torch.compile(mode='max-autotune')\n"
        "    def forward(self, x):\n        return torch.tanh(self.fc(x))\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, d):\n        super().__init__()\n"
        "        self.a = torch.compile(nn.Sequential(nn.Linear(d, d), nn.ReLU()))\n"
        "        self.b = Block(d)\n"
        "    def forward(self, x):\n        return swish(self.b(self.a(x)))\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n"
        "def get_init_inputs():\n    return [8]\n")
    graph = trace_spec(spec)
    names = {str(i.ref) for i in graph.inputs.values()}
    assert {"a._orig_mod.0.weight", "b.fc.weight"} <= names
    targets = {str(n.target) for n in graph.gm.graph.nodes if n.op == "call_function"}
    assert any("sigmoid" in t for t in targets) and any("tanh" in t for t in targets)


def test_nested_arguments_and_results_keep_their_structure(tmp_path):
    spec = tmp_path / "nested.py"
    spec.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n"
        "    def forward(self, feats, scale):\n"
        "        return {'sum': feats[0] + feats[1] * scale, 'max': (feats[1].amax(), feats[0].amin())}\n\n"
        "def get_inputs():\n    return [[torch.randn(4), torch.randn(4)], 2.0]\n\n"
        "def get_init_inputs():\n    return []\n")
    graph = trace_spec(spec)
    assert graph.n_forward_inputs == 3 and graph.scalar_inputs == {2: 2.0}  # two tensors in the list, a scalar
    assert graph.input_spec is not None and graph.output_spec is not None
    assert graph.n_outputs == 3 and graph.output_tuple
    flat = trace_spec(Path(__file__).resolve().parents[2] / "published_specs" / "9_RowMax_TupleOutput.py")
    assert flat.input_spec is None and flat.output_spec is None  # flat arguments and a plain tuple: as before
