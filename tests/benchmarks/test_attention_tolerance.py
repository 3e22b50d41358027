"""benchmarks/gpu/attention_tolerance.py's two measures, on the CPU: float64 attention of bf16 inputs agrees with
the causal spec's reference run in float64, and the excess over a tolerance is negative inside it and positive
past it."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.benchmarks.hopper_probe import load_probe

REPO = Path(__file__).resolve().parents[2]


def test_exact_is_the_specs_attention_in_float64():
    from harness.spec import import_file

    script = load_probe("attention_tolerance")
    spec = import_file(REPO / "corpus/kernels/attention/specs/attention_causal_bf16_d64.py", "tolerance_spec")
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 40, 16).to(torch.bfloat16) for _ in range(3))
    for causal in (True, False):
        model = spec.Model(causal)
        expected = model(q.double(), k.double(), v.double())
        torch.testing.assert_close(script.exact(q, k, v, causal), expected, atol=1e-12, rtol=1e-12)
    assert not torch.allclose(script.exact(q, k, v, True), script.exact(q, k, v, False))


def test_excess_is_the_margin_to_the_tolerance():
    script = load_probe("attention_tolerance")
    b = torch.tensor([1.0, -2.0, 0.0])
    assert abs(script.excess(b, b, 0.02, 0.02) - (-0.02)) < 1e-12  # equal: the smallest allowance, 0.02 at 0
    a = b + torch.tensor([0.0, 0.0, 0.03])
    assert abs(script.excess(a, b, 0.02, 0.02) - 0.01) < 1e-6  # 0.03 off where 0.02 is allowed (float32 0.03)
