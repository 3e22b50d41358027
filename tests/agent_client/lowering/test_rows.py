"""Rows of any width through the general lowering: the strategy each reduction gets (at KernelBench's sizes),
and the split-row and column kernels through the harness at sizes the interpreter runs, with the split
thresholds lowered (lowering options) so that small rows take the GPU's paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from agent_client.lowering.lower import lower_spec
from agent_client.offline.tunables import set_tunables
from harness import EvalConfig, Status, evaluate
from tests.agent_client.lowering.launches import Forbidden, load_candidate

os.environ.setdefault("TRITON_INTERPRET", "1")

ROW_SPECS = Path(__file__).resolve().parent / "row_specs"
CPU = EvalConfig.for_cpu_tests(time_candidate=False, time_eager_baseline=False)
# rows past 64 values are split when read twice, and rows of 256 or more split when there are fewer than 8
SPLIT = {"persistent_max": 64, "split_multi_pass": True, "split_max_rows": 8, "split_min_row": 256}


def _spec(tmp_path: Path, forward: str, sizes: str, inputs: str, init: str = "") -> Path:
    path = tmp_path / "spec.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self, *args):\n        super(Model, self).__init__()\n"
                    f"{init}\n    def forward(self, x, *rest):\n        return {forward}\n\n\n{sizes}\n\n\n"
                    f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")
    return path


@pytest.mark.parametrize("forward,sizes,inputs,expected", [
    # KernelBench 1/23: 4096 rows of 393216, read twice (max, then exp and sum): rows split over programs
    ("torch.softmax(x, dim=1)", "batch_size = 4096\ndim = 393216", "[torch.rand(batch_size, dim)]",
     "cooperative split reduction of 393216 over 4096 rows, 1 round(s)"),
    # 1/40: 16 rows of 4194304 (mean, then centred variance, then the elements)
    ("F.layer_norm(x, x.shape[1:])", "batch_size = 16", "[torch.rand(batch_size, 64, 256, 256)]",
     "cooperative split reduction of 4194304 over 16 rows, 1 round(s)"),
    # 1/47: a sum over dim 1 of (128, 4096, 4095): columns, looped over the 4096 rows
    ("torch.sum(x, dim=1, keepdim=True)", "batch_size = 128", "[torch.rand(batch_size, 4096, 4095)]",
     "column reduction of 4096 (looped) over 128 x 4095 columns"),
    # 1/51: argmax over dim 1, columns too
    ("torch.argmax(x, dim=1)", "batch_size = 128", "[torch.rand(batch_size, 4096, 4095)]",
     "column reduction of 4096 (looped) over 128 x 4095 columns: argmax"),
    # 1/36: RMS norm over 64 channels of (112, 64, 512, 512): the channels of a column in registers
    ("x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)", "batch_size = 112",
     "[torch.rand(batch_size, 64, 512, 512)]", "column reduction of 64 (persistent) over 112 x 262144 columns"),
    # 1/94: one row of 2^30 read once: two levels, no cooperative form
    ("torch.mean((x - rest[0]) ** 2)", "batch_size = 32768", "[torch.rand(batch_size, 32768)] * 2",
     "split reduction of 1073741824 over 1 rows, round 0"),
    # 1/95's row statistics: 4096-wide rows, many of them: one program a row
    ("torch.logsumexp(x, dim=1)", "batch_size = 32768", "[torch.rand(batch_size, 4096)]",
     "persistent reduction of 4096 over 32768 rows"),
])
def test_strategy_at_published_sizes(tmp_path, forward, sizes, inputs, expected):
    lowered = lower_spec(_spec(tmp_path, forward, sizes, inputs), target="cuda")
    kernels = lowered.kernels
    assert any(expected in k for k in kernels), kernels
    forms = [v for name, v in lowered.tunables.items() if name.endswith("_form")]
    assert forms == (["split"] if "cooperative" in expected else []), lowered.tunables  # two levels by default
    if "(looped)" in expected or "persistent" in expected:
        assert not any("split" in k for k in kernels), kernels
    if "round 0" in expected:
        assert not any("cooperative" in k for k in kernels), kernels


def _tuned(lowered, values: dict) -> str:
    """The candidate with the tunables whose names end with each key set (one kernel's names carry a prefix)."""
    chosen = {name: v for suffix, v in values.items() for name in lowered.tunables if name.endswith(suffix)}
    assert len({s for s in values if any(n.endswith(s) for n in lowered.tunables)}) == len(values), lowered.tunables
    return set_tunables(lowered.source, chosen)


@pytest.mark.slow
@pytest.mark.parametrize("spec,options,tunables,kernel", [
    # cooperative (asked for; with the next chunk's loads issued before the wait by default): 8 chunks of 128 a
    # row, the last partial; one round (the max, and the sum of exponentials each chunk takes from its own max)
    ("softmax_wide", SPLIT, {"_form": "coop", "_CHUNK": 128}, "cooperative"),
    # two levels: 8 chunks of 125, each smaller than one block of 256
    ("softmax_wide", SPLIT, {"_form": "split", "_SPLIT": 8, "_RBLOCK": 256}, "round 0"),
    # chunks of 500 in steps of 256: each lane's running max and rescaled sum over two steps
    ("softmax_wide", SPLIT, {"_form": "split", "_SPLIT": 2, "_RBLOCK": 256}, "round 0"),
    # no early loads of the next chunk
    ("softmax_wide", SPLIT, {"_form": "coop", "_CHUNK": 128, "_coop_prefetch": False}, "cooperative"),
    ("log_softmax_wide", SPLIT, {"_form": "coop", "_CHUNK": 256}, "cooperative"),
    # layer norm over (C, H, W): the mean's sum and the chunks' means and centred squares in one round
    ("layernorm_chw", SPLIT, {"_form": "coop", "_CHUNK": 256}, "cooperative"),
    ("layernorm_chw", SPLIT, {"_form": "coop", "_CHUNK": 256, "_coop_prefetch": False}, "cooperative"),
    ("layernorm_chw", SPLIT, {"_form": "split", "_SPLIT": 4}, "round 0"),
    ("layernorm_chw", SPLIT, {"_form": "split", "_SPLIT": 2, "_RBLOCK": 256}, "round 0"),  # lanes' Welford, 2 steps
    # a row's softmax with its max (times two) and log-sum-exp: outputs of the rows' count from the split group
    ("softmax_and_max", SPLIT, {"_form": "coop", "_CHUNK": 128}, "cooperative"),
    ("softmax_and_max", SPLIT, {"_form": "split", "_SPLIT": 2}, "round 0"),
    # one row of every element read once: two levels; the mean's scale applied where the row is combined
    ("mse_loss", SPLIT, {"_SPLIT": 4, "_RBLOCK": 256}, "round 0"),
    # x over a norm of every element: one row, the elements written from registers
    ("frobenius", SPLIT, {"_form": "coop", "_CHUNK": 256}, "cooperative"),
    ("frobenius", SPLIT, {"_form": "split", "_SPLIT": 4}, "round 0"),
    # columns: 117 inner columns in blocks of 16 (a partial last block), the 8 channels in registers
    ("rmsnorm_dim1", {}, {"_XBLOCK": 16}, "column reduction of 8 (persistent)"),
    # columns looped over 300 rows in steps of 16 (a partial last step)
    ("sum_dim1", {}, {"_XBLOCK": 16, "_RBLOCK": 16}, "column reduction of 300 (looped)"),
    ("argmax_dim1", {}, {"_XBLOCK": 16, "_RBLOCK": 8}, "column reduction of 300 (looped)"),  # ties: first wins
    ("max_dim1", {}, {}, "column reduction of 100"),
    # a scan looped over rows of 700 in blocks of 256; from the row's end (the first block partly before the
    # row); exclusive (a zero, then the sums before each position), all in the scan kernel
    ("cumsum_rows", {"persistent_max": 256}, {"_RBLOCK": 256}, "cumsum over 700"),
    ("cumsum_reverse", {"persistent_max": 256}, {"_RBLOCK": 256}, "reverse cumsum over 700"),
    ("cumsum_reverse", {}, {}, "reverse cumsum over 700"),
    ("cumsum_exclusive", {"persistent_max": 256}, {"_RBLOCK": 256}, "exclusive cumsum over 700"),
])
def test_row_kernels_pass_the_harness(spec, options, tunables, kernel):
    path = ROW_SPECS / f"{spec}.py"
    lowered = lower_spec(path, target="cpu", options=options)
    assert any(kernel in k for k in lowered.kernels), lowered.kernels
    if "cumsum" in spec:  # the flips and the cat are the scan's own: one kernel
        assert len(lowered.kernels) == 1, lowered.kernels
    verdict = evaluate(path, _tuned(lowered, tunables), device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons




@pytest.mark.slow
@pytest.mark.parametrize("asked,form", [
    ({"_CHUNK": 128, "_form": "coop"}, "coop"),  # 8 chunks a row: the CPU's 4 "SMs" hold 8 programs
    ({"_CHUNK": 16, "_form": "coop"}, "split"),  # 63 chunks a row: more than the programs resident at once
    ({}, "split"),  # the default form: two levels
])
def test_the_form_that_runs(tmp_path, asked, form):
    lowered = lower_spec(ROW_SPECS / "softmax_wide.py", target="cpu", options=SPLIT)
    chunk = asked.get("_CHUNK")
    module = load_candidate(_tuned(lowered, asked), tmp_path, f"rows_form_{form}_{chunk}_{len(asked)}")
    coop = [n for n in vars(module) if n.endswith("_coop") and hasattr(vars(module)[n], "run")]
    parts = [n for n in vars(module) if "_part" in n and hasattr(vars(module)[n], "run")]
    assert coop and parts
    for name in parts if form == "coop" else coop:
        setattr(module, name, Forbidden(name))
    torch.manual_seed(0)
    x = torch.rand(5, 1000) * 20.0
    out = module.ModelNew()(x)
    torch.testing.assert_close(out, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-4)
