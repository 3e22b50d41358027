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


def _pool_candidate(tmp_path, call: str, shape: tuple, name: str):
    import importlib.util

    spec = _spec(tmp_path, f"    def forward(self, x):\n        return {call}", f"[torch.randn{shape}]")
    source = lower_spec(spec, target="cpu").source
    cand = tmp_path / f"{name}.py"
    cand.write_text(source)
    module_spec = importlib.util.spec_from_file_location(name, cand)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return source, module.ModelNew()


def test_window_positions_inside_the_input_by_their_bounds_get_no_test_and_share_one_address(tmp_path):
    """max_pool1d(x, 8, stride 1, padding 4, dilation 3) over 64 values: positions 3k - 4 from the output's
    index o in [0, 51). Only k = 0, 1 can fall before the input and only k = 6, 7 past its end, so the kernel
    tests 2 lower and 2 upper bounds, not 16; every position loads at a constant distance from one address.
    The values stay PyTorch's, with NaN and -inf inside and at the padded edges."""
    import re

    source, new = _pool_candidate(tmp_path, "F.max_pool1d(x, 8, 1, 4, 3)", (2, 3, 64), "cand_pool_bounds")
    kernel = source[source.index("@triton.jit\ndef _p0k0"):source.index("def _plan0")]
    lower, upper = set(re.findall(r"\(\(([^()]*\([^()]*\)[^()]*)\) >= 0\)", kernel)), \
        set(re.findall(r"\(\(([^()]*\([^()]*\)[^()]*)\) < 64\)", kernel))
    assert len(lower) == 2 and len(upper) == 2, (lower, upper, kernel)  # each in a load's mask and its select
    bases = re.findall(r"tl\.load\(\(in0 \+ \((.*?)\)\) \+ \((-?\d+)\)", kernel)
    assert len({b for b, _ in bases}) == 1, kernel
    assert sorted(int(d) for _, d in bases) == [-4, -1, 2, 5, 8, 11, 14, 17], kernel
    x = torch.randn(2, 3, 64)
    x[0, 1, 0] = x[1, 2, 63] = float("nan")  # at the padded edges
    x[1, 0, 30] = float("nan")
    x[0, 2, :12] = float("-inf")
    expected = F.max_pool1d(x, 8, 1, 4, 3)
    torch.testing.assert_close(new(x), expected, equal_nan=True)


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_average_windows_add_masked_loads_without_a_select(tmp_path, count_include_pad):
    """avg_pool1d(x, 8, 1, 4): a window position outside the input loads as 0 already, so the sum adds the load
    as it is; the divisor still counts the padding or not, as PyTorch does."""
    call = f"F.avg_pool1d(x, 8, 1, 4, count_include_pad={count_include_pad})"
    source, new = _pool_candidate(tmp_path, call, (2, 3, 40), f"cand_avg_{count_include_pad}")
    kernel = source[source.index("@triton.jit\ndef _p0k0"):source.index("def _plan0")]
    assert "wacc1 = wacc1 + tl.where" not in kernel, kernel
    x = torch.randn(2, 3, 40)
    torch.testing.assert_close(new(x), F.avg_pool1d(x, 8, 1, 4, count_include_pad=count_include_pad))
