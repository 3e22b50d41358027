"""A verdict says where it was measured: each variant's inputs and parameters (shape and dtype, after the
spec's DTYPE), the device by its driver's name, and the software versions; timed variants carry their times."""

from __future__ import annotations

import textwrap

import torch

from harness import EvalConfig, Verdict, evaluate

SPEC = textwrap.dedent('''
    import torch
    import torch.nn as nn

    DTYPE = "bfloat16"
    VARIANTS = [{"name": "wide", "kwargs": {"cols": 40}, "init_kwargs": {"hidden": 40}}]


    class Model(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.proj = nn.Linear(hidden, hidden)
            self.register_buffer("shift", torch.ones(hidden))

        def forward(self, x, index, scale):
            return self.proj(x)[index] * scale + self.shift


    def get_inputs(rows=6, cols=24):
        return [torch.randn(rows, cols), torch.tensor([0, 2, 3]), 0.5]


    def get_init_inputs(hidden=24):
        return [hidden]
''')



def test_every_variant_names_its_shapes_dtypes_and_device(tmp_path):
    spec = tmp_path / "gather_linear.py"
    spec.write_text(SPEC)
    candidate = SPEC.split("def get_inputs")[0] + "\n\nclass ModelNew(Model):\n    pass\n"
    config = EvalConfig.for_cpu_tests(trials=1, min_reps=1, max_reps=2, warmup=0)
    verdict = evaluate(spec, candidate, backend="torch", device="cpu", config=config)
    assert verdict.passed, verdict.reasons
    assert verdict.device_name == "cpu"  # the device that ran it, whatever a session's --target says
    assert verdict.versions["torch"] == torch.__version__ and "triton" in verdict.versions
    default, wide = verdict.measurements
    assert (default["variant"], wide["variant"]) == ("default", "wide")
    # floating inputs cast to the spec's DTYPE, integer ones kept, plain values by value; strides as drawn
    assert default["inputs"] == [{"shape": [6, 24], "dtype": "bfloat16", "stride": [24, 1]},
                                 {"shape": [3], "dtype": "int64", "stride": [1]}, {"value": 0.5}]
    assert wide["inputs"][0] == {"shape": [6, 40], "dtype": "bfloat16", "stride": [40, 1]}
    assert wide["init_kwargs"] == {"hidden": 40}
    assert default["state"] == [{"path": "proj.weight", "shape": [24, 24], "dtype": "bfloat16", "stride": [24, 1]},
                                {"path": "proj.bias", "shape": [24], "dtype": "bfloat16", "stride": [1]},
                                {"path": "shift", "shape": [24], "dtype": "bfloat16", "stride": [1]}]
    assert wide["state"][0]["shape"] == [40, 40]
    # the default variant is timed; the other is only checked
    assert default["correct"] and default["timed"] and default["latency_ms"] == verdict.latency_ms
    assert default["speedup_vs_eager"] == verdict.speedup_vs_eager and default["compile_ms"] is None
    assert wide["correct"] and not wide["timed"] and wide["latency_ms"] is None
    assert Verdict.from_dict(verdict.to_dict()).measurements == verdict.measurements


def test_a_wrong_candidate_is_measured_as_wrong(tmp_path):
    spec = tmp_path / "gather_linear.py"
    spec.write_text(SPEC)
    candidate = (SPEC.split("def get_inputs")[0] + "\n\nclass ModelNew(Model):\n"
                 "    def forward(self, x, index, scale):\n        return super().forward(x, index, scale) + 1\n")
    verdict = evaluate(spec, candidate, backend="torch", device="cpu",
                       config=EvalConfig.for_cpu_tests(trials=1, min_reps=1, max_reps=2, warmup=0))
    assert verdict.status.value == "wrong"
    assert [m["correct"] for m in verdict.measurements] == [False, False]
    assert all(m["speedup_vs_eager"] is None for m in verdict.measurements)
