"""The rewrites around matmuls: each applies where its condition holds and nowhere else; the rewritten candidates
pass the harness (test_gemm.py) on fresh inputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from agent_client.lowering.gemm_rewrites import rewrite_gemms
from agent_client.lowering.lower import lower_spec
from agent_client.lowering.normalize import normalize
from agent_client.opgraph import trace_spec
from harness import EvalConfig, Status, evaluate

os.environ.setdefault("TRITON_INTERPRET", "1")

SPECS = Path(__file__).resolve().parent / "gemm_specs"
CPU = EvalConfig.for_cpu_tests(time_candidate=False, time_eager_baseline=False)
aten = torch.ops.aten


def _rewrites(path: Path) -> tuple[list[str], list]:
    graph = trace_spec(path)
    normalize(graph.gm)
    done = rewrite_gemms(graph.gm)
    return done, [n.target for n in graph.gm.graph.nodes if n.op == "call_function"]


def _spec(tmp_path: Path, init: str, forward: str, inputs: str) -> Path:
    path = tmp_path / "spec.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    f"    def __init__(self):\n        super().__init__()\n        {init}\n\n"
                    f"    def forward(self, x, r):\n        {forward}\n\n\n"
                    f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")
    return path


@pytest.mark.parametrize("name", ["linear_sum_scale", "linear_affine_sum", "linear_sum_reductions"])
def test_row_sum_of_a_linear_map_becomes_a_one_row_matmul(name):
    done, targets = _rewrites(SPECS / f"{name}.py")
    assert "row_sum_of_linear" in done
    assert aten.addmm.default not in targets  # the (M, N) product is gone
    mms = [t for t in targets if t is aten.mm.default]
    assert len(mms) == 1  # the weight row: (1, N) x (N, K)


def test_reductions_over_unit_dims_are_dropped():
    done, targets = _rewrites(SPECS / "linear_sum_reductions.py")
    assert "unit_reductions" in done
    assert aten.amax.default not in targets  # max over the kept size-1 dim, and logsumexp's max, are gone


def test_matrix_vector_product_becomes_a_reduction():
    done, targets = _rewrites(SPECS / "matvec.py")
    assert done == ["matvec_to_reduction"]
    assert aten.mm.default not in targets and aten.sum.dim_IntList in targets


@pytest.mark.parametrize("init, forward, inputs", [
    # a non-linear op between the linear map and the sum
    ("self.fc = nn.Linear(40, 24)", "return torch.sigmoid(self.fc(x)).sum(dim=1)",
     "[torch.rand(16, 40), torch.rand(16, 1)]"),
    ("self.fc = nn.Linear(40, 24)", "return torch.clamp(self.fc(x), -1, 1).sum(dim=1)",
     "[torch.rand(16, 40), torch.rand(16, 1)]"),
    # a factor that varies by row (and element) does not come out of the sum over the features
    ("self.fc = nn.Linear(40, 24)", "return (self.fc(x) * r).sum(dim=1)", "[torch.rand(16, 40), torch.rand(16, 24)]"),
    # the product itself squared
    ("self.fc = nn.Linear(40, 24)", "y = self.fc(x)\n        return (y * y).sum(dim=1)",
     "[torch.rand(16, 40), torch.rand(16, 1)]"),
    # the product is also returned: it must be computed anyway
    ("self.fc = nn.Linear(40, 24)", "y = self.fc(x)\n        return y.sum(dim=1), y",
     "[torch.rand(16, 40), torch.rand(16, 1)]"),
    # a sum over the rows, not over the features
    ("self.fc = nn.Linear(40, 24)", "return self.fc(x).sum(dim=0)", "[torch.rand(16, 40), torch.rand(16, 1)]"),
    # bf16: eager rounds the product before the sum
    ("self.fc = nn.Linear(40, 24, dtype=torch.bfloat16)", "return self.fc(x).sum(dim=1)",
     "[torch.rand(16, 40, dtype=torch.bfloat16), torch.rand(16, 1)]"),
], ids=["sigmoid", "clamp", "per-element-factor", "square", "product-returned", "over-rows", "bf16"])
def test_row_sum_rewrite_is_blocked(tmp_path, init, forward, inputs):
    done, targets = _rewrites(_spec(tmp_path, init, forward, inputs))
    assert "row_sum_of_linear" not in done
    assert aten.addmm.default in targets


def test_feature_factors_and_row_terms_are_rewritten_exactly(tmp_path):
    # (x W^T + b) * s[n] - r[m] summed over n: s folds into the weight row, r is summed apart (N r[m])
    spec = _spec(tmp_path, "self.fc = nn.Linear(40, 24)\n        self.s = nn.Parameter(torch.randn(24))",
                 "return (self.fc(x) * self.s - r).sum(dim=1)", "[torch.rand(16, 40), torch.rand(16, 1)]")
    done, targets = _rewrites(spec)
    assert "row_sum_of_linear" in done and aten.addmm.default not in targets
    verdict = evaluate(spec, lower_spec(spec, target="cpu").source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def test_a_matmul_over_one_k_is_a_broadcast_product():
    # a rotary embedding's positions times its frequencies: (B, D/2, 1) @ (B, 1, S)
    done, targets = _rewrites(SPECS.parent / "model_specs" / "rotary_embedding.py")
    assert "outer_product" in done
    assert aten.bmm.default not in targets and aten.mm.default not in targets
    lowered = lower_spec(SPECS.parent / "model_specs" / "rotary_embedding.py", target="cuda")
    assert all("pointwise" in k for k in lowered.kernels), lowered.kernels  # angles computed where they are read
