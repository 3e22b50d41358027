"""The general lowering through the harness: published-style specs become passing Triton candidates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from agent_client.lowering.lower import lower_spec
from agent_client.lowering.writer import LoweringError
from harness import EvalConfig, Status, evaluate

PUBLISHED = Path(__file__).resolve().parents[2] / "published_specs"
MODEL_CODE = Path(__file__).resolve().parent / "model_specs"
OP_SPECS = Path(__file__).resolve().parent / "op_specs"
CPU = EvalConfig.for_cpu_tests(time_candidate=False, time_eager_baseline=False)

os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(PUBLISHED.glob("*.py")), ids=lambda p: p.stem)
def test_published_style_spec_passes_the_harness(spec):
    lowered = lower_spec(spec, target="cpu")
    verdict = evaluate(spec, lowered.source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(MODEL_CODE.glob("*.py")) + sorted(OP_SPECS.glob("*.py")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_model_code_spec_passes_the_harness(spec):
    verdict = evaluate(spec, lower_spec(spec, target="cpu").source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def test_bf16_results_round_as_eager_does(tmp_path):
    # every op's bf16 result rounded to nearest even (the interpreter's own conversion truncates)
    spec = _spec(tmp_path, "    def forward(self, x):\n        return 30.0 * torch.tanh(x / 30.0)",
                 "[torch.randn(64, 512, dtype=torch.bfloat16) * 40.0]")
    source = lower_spec(spec, target="cpu").source
    assert "_kkb_bf16(" in source
    verdict = evaluate(spec, source, device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def _spec(tmp_path: Path, body: str, inputs: str, init: str = "[]", extra: str = "") -> Path:
    path = tmp_path / "spec.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + extra + "\n\n"
                    "class Model(nn.Module):\n" + body + "\n\n"
                    f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("forward,inputs", [
    # a reduction over a middle dim and its broadcast back (strided rows)
    ("return x - x.mean(dim=1, keepdim=True)", "[torch.randn(3, 33, 5)]"),
    # a looped reduction: rows longer than one block, with a softmax's three passes
    ("return torch.softmax(x, dim=-1)", "[torch.randn(2, 70000)]"),
    # a reduction over every element, returned as a 0-dim tensor
    ("return (x * x).sum()", "[torch.randn(17, 9)]"),
    # a transposed matmul output: the epilogue cannot read it in place, so it is stored and reloaded
    ("return (x @ y).t() + 1.0", "[torch.randn(20, 24), torch.randn(24, 18)]"),
    # concatenation and slices
    ("return torch.cat([x[:, :3] * 2, x[:, 5:]], dim=1)", "[torch.randn(6, 9)]"),
    # a reversed cumulative sum (flip, scan, flip)
    ("return x.flip(1).cumsum(1).flip(1)", "[torch.randn(5, 40)]"),
    # max pooling with padding, then an average pooling window
    ("return F.avg_pool2d(F.max_pool2d(x, 3, 2, 1), 2)", "[torch.randn(2, 3, 17, 17)]"),
    # group norm with an affine: its decomposition views the input through as_strided
    ("return F.group_norm(torch.tanh(x), 4, x[0, :, 0, 0], x[1, :, 0, 0]) * 2", "[torch.randn(2, 8, 5, 5)]"),
    # a constant tensor made in forward on the input's device
    ("return torch.minimum(x, torch.tensor([0.5, -0.25, 1.0], device=x.device)) * 2", "[torch.randn(4, 3)]"),
])
def test_lowering_shapes_through_the_harness(tmp_path, forward, inputs):
    spec = _spec(tmp_path, f"    def forward(self, *args):\n        x, *rest = args\n        y = rest[0] if rest "
                 f"else None\n        {forward}", inputs)
    verdict = evaluate(spec, lower_spec(spec, target="cpu").source, device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


@pytest.mark.slow
@pytest.mark.parametrize("conv", [
    "nn.Conv2d(4, 16, 3, stride=2, padding=1)",
    "nn.ConvTranspose2d(4, 16, 3, stride=2, padding=1, output_padding=1)",
    "nn.Conv2d(8, 8, 3, padding=1, groups=8)",  # depthwise: the direct kernel
    "nn.Conv1d(4, 16, 5, dilation=2)",
])
def test_convolutions_through_the_harness(tmp_path, conv):
    spec = _spec(tmp_path, f"    def __init__(self):\n        super(Model, self).__init__()\n        self.conv = {conv}\n\n"
                 "    def forward(self, x):\n        return torch.relu(self.conv(x))",
                 "[torch.randn(2, 8, 9, 9)]" if "groups=8" in conv else
                 ("[torch.randn(2, 4, 20)]" if "1d" in conv else "[torch.randn(2, 4, 9, 9)]"))
    verdict = evaluate(spec, lower_spec(spec, target="cpu").source, device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def test_a_stochastic_reference_is_declined(tmp_path):
    spec = _spec(tmp_path, "    def __init__(self):\n        super(Model, self).__init__()\n"
                 "        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n        return self.drop(x)",
                 "[torch.randn(4, 4)]")
    with pytest.raises(LoweringError, match="random"):
        lower_spec(spec, target="cpu")


def test_an_op_without_a_lowering_is_named(tmp_path):
    spec = _spec(tmp_path, "    def __init__(self):\n        super(Model, self).__init__()\n\n"
                 "    def forward(self, x):\n        return torch.fft.irfft(torch.fft.rfft(x, dim=-1) * 2, n=16, dim=-1)",
                 "[torch.randn(4, 16)]")
    with pytest.raises(LoweringError, match="no lowering for aten._fft_r2c"):
        lower_spec(spec, target="cpu")


def test_candidate_keeps_the_spec_module_and_dispatches_on_shapes():
    source = lower_spec(PUBLISHED / "2_Conv2d_ReLU_BiasAdd.py", target="cpu").source
    assert "super(Model, self).__init__()" in source and "class ModelNew(Model):" in source
    assert "def get_inputs" not in source and "_PLANS = {" in source and "TUNABLES = {" in source


def test_a_nan_wins_its_max_pool_windows_as_in_pytorch(tmp_path):
    import importlib.util

    spec = _spec(tmp_path, "    def forward(self, x):\n        return F.max_pool1d(x, 4, 1, 2, 2)",
                 "[torch.randn(2, 3, 30)]")
    cand = tmp_path / "cand.py"
    cand.write_text(lower_spec(spec, target="cpu").source)
    module_spec = importlib.util.spec_from_file_location("cand_nan_pool", cand)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    x = torch.randn(2, 3, 30)
    x[1, 2, 11] = float("nan")
    x[0, 0, 0] = float("nan")  # a NaN at a padded edge
    expected = F.max_pool1d(x, 4, 1, 2, 2)
    assert expected.isnan().sum() > 2
    torch.testing.assert_close(module.ModelNew()(x), expected, equal_nan=True)
