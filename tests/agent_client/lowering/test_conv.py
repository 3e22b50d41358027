"""Convolutions in the general lowering: the conv family's mainloop with the op graph's epilogue.

Usage: .venv/bin/python -m pytest -q tests/agent_client/lowering/test_conv.py

Every form against PyTorch through the harness is in op_specs/conv_forms.py, conv_transpose_forms.py and
conv_epilogues.py (run by test_lower.py); here, what the generated candidate holds and the tunable space.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_client.lowering.lower import lower_spec
from agent_client.offline.tunables import set_tunables
from harness import EvalConfig, Status, evaluate

OP_SPECS = Path(__file__).resolve().parent / "op_specs"
CPU = EvalConfig.for_cpu_tests(time_candidate=False, time_eager_baseline=False)

os.environ.setdefault("TRITON_INTERPRET", "1")


def test_mainloop_is_pasted_once_and_the_weight_packed_before_each_launch():
    lowered = lower_spec(OP_SPECS / "conv_transpose_forms.py", target="cpu")
    source = lowered.source
    assert source.count("def conv_tile(") == 1  # six convolutions, one mainloop
    assert sum("implicit GEMM" in k for k in lowered.kernels) == 6
    assert "4 phases" in " ".join(lowered.kernels) and "8 phases" in " ".join(lowered.kernels)
    plan = source[source.index("def _plan0("):]
    assert plan.count("= conv_packed_weight(p_t") == 6
    # each packed weight is made before the launch that reads it
    assert plan.index("_p0k0_conv_w = conv_packed_weight(") < plan.index("_p0k0_conv[")


def test_a_computed_input_is_stored_by_a_kernel_of_its_own(tmp_path):
    spec = tmp_path / "spec.py"
    spec.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super(Model, self).__init__()\n        self.conv = nn.Conv2d(16, 32, 3)\n\n"
        "    def forward(self, x):\n        return self.conv(torch.relu(x) * 2.0)\n\n\n"
        "def get_inputs():\n    return [torch.randn(2, 16, 7, 9)]\n\n\ndef get_init_inputs():\n    return []\n")
    lowered = lower_spec(spec, target="cpu")
    assert lowered.kernels[0].split(":")[1].strip().startswith("pointwise")  # relu(x) * 2 stored
    assert "implicit GEMM" in lowered.kernels[1]
    verdict = evaluate(spec, lowered.source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


@pytest.mark.slow
@pytest.mark.parametrize("flip", [{"FLAT": "flip"}, {"BLOCK_K": 16, "BLOCK_N": 16}, {"PACK": "kn", "SPLIT": False}],
                         ids=["other_k_walk", "small_tiles", "unsplit_weight"])
def test_tunable_points_pass_the_harness(flip):
    """The K walk each convolution did not default to, and tiles smaller than the problem's edges."""
    spec = OP_SPECS / "conv_epilogues.py"
    lowered = lower_spec(spec, target="cpu")
    point = {}
    for key, default in lowered.tunables.items():
        for name, value in flip.items():
            if key.endswith(f"_conv_{name}"):
                point[key] = (not default) if value == "flip" else value
    assert point
    verdict = evaluate(spec, set_tunables(lowered.source, point), backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons
