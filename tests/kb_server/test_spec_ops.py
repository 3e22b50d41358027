"""Ops and op family read from a spec's AST: set-up is not computation, operators count for families."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_server.prompt import load_template
from kb_server.spec_ops import op_family, spec_ops

MODEL_SPECS = Path(__file__).parent / "fixtures" / "model_specs"


def test_init_setup_is_not_computation_but_its_modules_are():
    src = ("import torch\nfrom torch import nn\n"
           "class Model(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.register_buffer('t', torch.outer(torch.arange(4.0), torch.arange(4.0)).cos())\n"
           "        self.act = nn.GELU()\n"
           "    def forward(self, x):\n"
           "        return self.act(x * self.t).sum(-1)\n")
    assert spec_ops(src) == ["gelu", "sum"]  # outer and cos build a table once: set-up
    assert spec_ops(src, arithmetic=True) == ["gelu", "sum", "mul"]


def test_operators_count_only_when_asked_and_index_arithmetic_never():
    src = ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
           "        h = x[..., : x.shape[-1] // 2]\n        return -(h - h.mean(-1, keepdim=True)) ** 2 / 3\n")
    assert spec_ops(src) == ["mean"]
    assert set(spec_ops(src, arithmetic=True)) == {"mean", "neg", "sub", "pow", "div"}


@pytest.mark.parametrize(("spec", "family"), [
    ("rmsnorm_fp32_variance.py", "rmsnorm"),  # mean, pow, rsqrt
    ("channels_first_layernorm.py", "layernorm"),  # mean, sub, pow: centred, so a layer norm
    ("gated_mlp.py", "gemm_epilogue"),
    ("rotary_embedding.py", "pointwise"),
    ("logit_softcapping.py", "pointwise"),
    ("label_smoothed_cross_entropy.py", "cross_entropy"),
    ("causal_self_attention.py", "attention"),  # matmul and softmax
])
def test_model_code_specs_suggest_their_family(spec, family):
    ops = spec_ops((MODEL_SPECS / spec).read_text(), arithmetic=True)
    assert op_family(ops, load_template()["families"]) == family


def test_no_rule_no_family():
    assert op_family(["fft_rfft", "triu"], load_template()["families"]) is None


@pytest.mark.parametrize("ops", [["conv2d"], ["conv_transpose3d"], ["conv2d", "relu", "add"],
                                 ["conv3d", "group_norm", "mean"]])
def test_a_convolution_makes_a_conv_spec_whatever_follows(ops):
    """The convolution is the work: a pointwise or norm epilogue after it does not make the spec theirs, and
    the family is compute-bound before anything is measured."""
    template = load_template()
    assert op_family(ops, template["families"]) == "conv"
    assert "conv" in template["bottleneck"]["compute_families"]
