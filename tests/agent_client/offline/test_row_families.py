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


def _cast_norm(tmp_path: Path, weight_dtype: str) -> Path:
    """Llama's RMSNorm as written: a bf16 hidden state cast up to fp32, normalised, cast back, then scaled."""
    path = tmp_path / "llama_rmsnorm.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                    "        super().__init__()\n"
                    f"        self.weight = nn.Parameter(torch.ones(16, dtype=torch.{weight_dtype}))\n\n"
                    "    def forward(self, hidden_states):\n        input_dtype = hidden_states.dtype\n"
                    "        hidden_states = hidden_states.to(torch.float32)\n"
                    "        variance = hidden_states.pow(2).mean(-1, keepdim=True)\n"
                    "        hidden_states = hidden_states * torch.rsqrt(variance + 1e-6)\n"
                    "        return self.weight * hidden_states.to(input_dtype)\n\n\n"
                    "def get_inputs():\n    return [torch.randn(4, 16, dtype=torch.bfloat16)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    return path


def test_a_norm_computed_in_fp32_on_a_16_bit_input_is_the_norm(tmp_path):
    """Casting up to fp32 and back is the kernel's own precision (16-bit loads, fp32 sums): the casts leave the
    signature and the family's kernel serves it."""
    sig = trace_signature(_cast_norm(tmp_path, "bfloat16"))
    assert sig.family == "rmsnorm" and "to(" not in sig.text, sig.text
    assert render_forward(sig) == ["return rms_norm_dim(inputs[0], self.weight, 1e-06, -1)"]


def test_an_fp32_weight_after_the_cast_back_keeps_the_casts(tmp_path):
    """An fp32 weight times the bf16 result makes an fp32 output, which a bf16 kernel does not return: the
    casts stay and no family claims the spec."""
    sig = trace_signature(_cast_norm(tmp_path, "float32"))
    assert sig.family is None and "to(" in sig.text, sig.text


def test_nll_loss_of_a_log_softmax_is_a_cross_entropy(tmp_path):
    path = tmp_path / "nll.py"
    path.write_text("import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
                    "class Model(nn.Module):\n    def forward(self, logits, target):\n"
                    "        return F.nll_loss(F.log_softmax(logits, dim=-1), target, ignore_index=3)\n\n\n"
                    "def get_inputs():\n    return [torch.randn(8, 10), torch.randint(0, 10, (8,))]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    sig = trace_signature(path)
    assert sig.family == "cross_entropy"
    assert render_forward(sig) == ["return cross_entropy(inputs[0], inputs[1], 3)"]
    path.write_text(path.read_text().replace("dim=-1", "dim=0"))  # over the batch: not a cross entropy
    with pytest.raises(AdaptError, match="not nll_loss"):
        render_forward(trace_signature(path))
