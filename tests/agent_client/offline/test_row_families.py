"""The row families' renderers: which written-out forms reach the library's launchers, and which are refused
(the general lowering serves those)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client.offline.adapt import AdaptError
from agent_client.offline.families import render_forward
from agent_client.signature import trace_signature

ROW_SPECS = Path(__file__).resolve().parents[1] / "lowering" / "row_specs"


def _spec(tmp_path: Path, init: str, forward: str, inputs: str) -> Path:
    path = tmp_path / "spec.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                    f"        super(Model, self).__init__()\n        {init}\n\n    def forward(self, x):\n"
                    f"        return {forward}\n\n\ndef get_inputs():\n    return [{inputs}]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    return path


def test_kernelbench_rms_norm_over_channels_reaches_the_column_kernel():
    sig = trace_signature(ROW_SPECS / "rmsnorm_dim1.py")
    assert sig.family == "rmsnorm"
    assert render_forward(sig) == ["return rms_norm_dim(inputs[0], None, 1e-05, 1)"]


def test_layer_norm_over_trailing_dims_reaches_the_row_kernels():
    sig = trace_signature(ROW_SPECS / "layernorm_chw.py")
    assert render_forward(sig) == ["return layer_norm_rows(inputs[0], self.ln.weight, self.ln.bias, 1e-05)"]


@pytest.mark.parametrize("init,forward,inputs,expected", [
    # rsqrt, pow as a method, a weight over the last dim
    ("self.weight = nn.Parameter(torch.ones(16))",
     "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight", "torch.randn(4, 16)",
     "return rms_norm_dim(inputs[0], self.weight, 1e-06, -1)"),
    # x * x and the rsqrt's product the other way round
    ("pass", "torch.rsqrt((x * x).mean(dim=2, keepdim=True) + 1e-5) * x", "torch.randn(2, 3, 8)",
     "return rms_norm_dim(inputs[0], None, 1e-05, 2)"),
    # a weight shaped to scale the channels
    ("self.g = nn.Parameter(torch.ones(3, 1, 1))",
     "x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5) * self.g", "torch.randn(2, 3, 4, 5)",
     "return rms_norm_dim(inputs[0], self.g, 1e-05, 1)"),
])
def test_written_out_rms_norms_are_rendered(tmp_path, init, forward, inputs, expected):
    sig = trace_signature(_spec(tmp_path, init, forward, inputs))
    assert sig.family == "rmsnorm"
    assert render_forward(sig) == [expected]


@pytest.mark.parametrize("init,forward,inputs", [
    ("pass", "torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-5) * x", "torch.randn(4, 16)"),  # rms * x
    ("pass", "x / torch.sqrt(torch.mean(x ** 3, dim=-1, keepdim=True) + 1e-5)", "torch.randn(4, 16)"),  # cubes
    # no keepdim: the (4,) means divide the last dim of (4, 4), not the rows
    ("pass", "x / torch.sqrt(torch.mean(x ** 2, dim=-1) + 1e-5)", "torch.randn(4, 4)"),
    # a (C,) weight over dim 1 of (N, C, L) with L == C scales the last dim under broadcasting, not the channels
    ("self.g = nn.Parameter(torch.ones(4))",
     "x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5) * self.g", "torch.randn(2, 4, 4)"),
])
def test_other_forms_are_refused(tmp_path, init, forward, inputs):
    sig = trace_signature(_spec(tmp_path, init, forward, inputs))
    assert sig.family == "rmsnorm"  # taken for one by the names of its calls, refused by the renderer
    with pytest.raises(AdaptError):
        render_forward(sig)
