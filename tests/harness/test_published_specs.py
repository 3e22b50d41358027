"""tests/published_specs/ through the harness: every published-style spec loads and profiles in a worker
(FLOPs, bytes, the eager baseline), and Triton candidates for two of them are judged right and wrong."""

from __future__ import annotations

import pytest
import torch

from harness import EvalConfig, Status, WorkerPool, load_spec, profile_spec
from harness.spec import build_model, make_inputs
from tests.harness.harness_helpers import CANDIDATES, REPO

PUBLISHED = REPO / "tests" / "published_specs"
SPECS = sorted(PUBLISHED.glob("*.py"))
SCALE_SHIFT, ROW_MAX = PUBLISHED / "10_ScaleShift_Helper.py", PUBLISHED / "9_RowMax_TupleOutput.py"


def test_the_folder_keeps_the_published_style():
    sources = {p.name: p.read_text() for p in SPECS}
    assert len(sources) >= 10
    assert all("super(Model, self).__init__()" in s for s in sources.values())
    everything = "\n".join(sources.values())
    for feature in ("register_buffer(", "nn.Parameter(", "nn.Linear(", "nn.LayerNorm(", "nn.Conv2d(",
                    "torch.randint(", ".to(torch.float32)", "torch.triu(", "return values, indices"):
        assert feature in everything, f"no published spec uses {feature}"
    for name, source in sources.items():  # none of our own conventions: the harness must do without them
        assert not any(word in source for word in ("VARIANTS", "DTYPE", "ATOL", "TOLERANCE")), name


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_loads_and_runs_in_process(path):
    spec = load_spec(path)
    assert [v.name for v in spec.variants] == ["default"] and spec.dtype is None
    variant = spec.variants[0]
    model = build_model(spec.module.Model, spec, variant, 0, "cpu")
    inputs = make_inputs(spec, variant, 1, "cpu")
    with torch.no_grad():
        out = model(*inputs)
    outputs = out if isinstance(out, tuple) else (out,)
    assert outputs and all(isinstance(o, torch.Tensor) for o in outputs)
    assert all(torch.isfinite(o.float()).all() for o in outputs)


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_profiles_in_a_worker(path):
    profile = profile_spec(path, device="cpu", config=EvalConfig.for_cpu_tests(time_eager_baseline=False))
    timed = profile["timed"]["default"]
    assert timed["bytes_moved"] > 0 and timed["flops"] >= 0


def test_tuple_output_bytes_count_every_output():
    timed = profile_spec(ROW_MAX, device="cpu",
                         config=EvalConfig.for_cpu_tests(time_eager_baseline=False))["timed"]["default"]
    assert timed["bytes_moved"] == 6 * 50 * 4 + 6 * 4 + 6 * 8  # fp32 input, fp32 values, int64 indices


CANDIDATE_CASES = [  # (spec, candidate file, status, a word the reasons must contain)
    (SCALE_SHIFT, "scale_shift_honest", Status.passed, ""),
    (SCALE_SHIFT, "scale_shift_no_shift", Status.wrong, "outside atol"),  # forgets the registered buffer
    (ROW_MAX, "row_max_honest", Status.passed, ""),
    (ROW_MAX, "row_max_int32_indices", Status.wrong, "dtype"),  # int32 indices where the reference has int64
]


@pytest.fixture(scope="module")
def candidate_verdicts():
    config = EvalConfig.for_cpu_tests(time_eager_baseline=False)
    with WorkerPool(["cpu"], config=config) as pool:
        return pool.evaluate_many([(spec, (CANDIDATES / "published" / f"{name}.py").read_text(), "triton")
                                   for spec, name, _, _ in CANDIDATE_CASES])


@pytest.mark.parametrize("case", range(len(CANDIDATE_CASES)), ids=[c[1] for c in CANDIDATE_CASES])
def test_triton_candidates_on_published_specs(candidate_verdicts, case):
    _, _, status, word = CANDIDATE_CASES[case]
    verdict = candidate_verdicts[case]
    assert verdict.status is status, verdict.reasons
    assert word in " ".join(verdict.reasons)
