"""`kkb bench` (harness/cli.py): one candidate, and a KernelBench-style suite folder with candidates by name."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import bench
from tests.harness.harness_helpers import CANDIDATES, SPECS

app = typer.Typer()
app.command()(bench)
SUITE = SPECS / "suite"


def test_single_candidate_table_and_json(tmp_path):
    out = tmp_path / "v.json"
    result = CliRunner().invoke(app, [str(SUITE / "1_TinyRelu.py"), str(CANDIDATES / "suite" / "1_TinyRelu.py"),
                                      "--device", "cpu", "--no-compile-baseline", "--trials", "2",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "passed" in result.output and "wall-clock" in result.output
    data = json.loads(out.read_text())
    assert data["status"] == "passed" and data["spec_name"] == "1_TinyRelu" and data["latency_ms"] > 0


def test_suite_with_and_without_candidates(tmp_path):
    out = tmp_path / "suite.json"
    result = CliRunner().invoke(app, ["--suite", str(SUITE), "--candidates", str(CANDIDATES / "suite"),
                                      "--device", "cpu", "--no-compile-baseline", "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    rows = {r["spec"]: r for r in data["rows"]}
    assert list(rows) == ["1_TinyRelu", "2_TinySum"]  # numeric order of KernelBench names
    assert data["limits"]["line"].startswith("limits: none on the CPU")  # the results say what judged them
    assert rows["1_TinyRelu"]["status"] == "passed" and rows["1_TinyRelu"]["speedup_vs_eager"] > 0
    assert rows["2_TinySum"]["status"] == "baseline" and rows["2_TinySum"]["eager_ms"] > 0


def test_json_prints_the_verdict_on_stdout_and_the_table_on_stderr(tmp_path):
    out = tmp_path / "v.json"
    result = CliRunner().invoke(app, [str(SUITE / "1_TinyRelu.py"), str(CANDIDATES / "suite" / "1_TinyRelu.py"),
                                      "--device", "cpu", "--no-compile-baseline", "--trials", "1", "--json",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)  # stdout holds the JSON alone
    assert printed["status"] == "passed" and printed == json.loads(out.read_text())
    assert "1_TinyRelu" in result.stderr and f"wrote {out}" in result.stderr


def test_a_suite_with_a_spec_is_refused_naming_the_output_option(tmp_path):
    # `--json PATH` was once the results file: PATH would now be read as a SPEC beside --suite
    result = CliRunner().invoke(app, ["--suite", str(SUITE), "--device", "cpu", "--json", str(tmp_path / "r.json")])
    assert result.exit_code == 2 and "-o PATH" in result.output
    assert not (tmp_path / "r.json").exists()


def test_missing_arguments_named():
    result = CliRunner().invoke(app, ["--device", "cpu"])
    assert result.exit_code != 0 and "SPEC and CANDIDATE" in result.output


MATMUL_SPEC = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(16, 32), torch.randn(32, 8)]


def get_init_inputs():
    return []
"""
MATMUL_CANDIDATE = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)
"""


def test_peak_tflops_sets_the_compute_limit(tmp_path):
    # a limit of one kFLOP/s: an honest 16x32x8 product (8192 FLOPs) reads as far past it: a timer escape
    (tmp_path / "mm.py").write_text(MATMUL_SPEC)
    (tmp_path / "mm_new.py").write_text(MATMUL_CANDIDATE)
    args = [str(tmp_path / "mm.py"), str(tmp_path / "mm_new.py"), "--backend", "torch", "--device", "cpu",
            "--no-compile-baseline", "--trials", "1", "-o", str(tmp_path / "v.json")]
    result = CliRunner().invoke(app, [*args, "--peak-tflops", "float32=1e-9"])
    assert result.exit_code == 1, result.output  # a rejected candidate: exit status 1
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["status"] == "rejected" and data["limit_kind"] == "compute" and data["flops"] == 2 * 16 * 32 * 8
    assert "compute limit" in data["reasons"][0]
    fine = CliRunner().invoke(app, [*args, "--peak-tflops", "float32=1000"])
    assert fine.exit_code == 0 and json.loads((tmp_path / "v.json").read_text())["status"] == "passed"
    bad = CliRunner().invoke(app, [*args, "--peak-tflops", "float32=fast"])
    assert bad.exit_code != 0 and "float32=fast" in bad.output


@pytest.mark.parametrize("args", [
    [str(SUITE / "1_TinyRelu.py"), str(CANDIDATES / "suite" / "1_TinyRelu.py")],  # one candidate
    ["--suite", str(SUITE)],
])
def test_a_gpu_this_machine_lacks_is_refused_before_anything_runs(monkeypatch, args):
    from harness import executor

    monkeypatch.setattr(executor, "visible_gpus", lambda: 0)  # as on a machine without a GPU, on any machine
    result = CliRunner().invoke(app, [*args, "--device", "cuda:0", "--no-compile-baseline"])
    assert result.exit_code == 2, result.output
    assert "--device cuda:0: this machine has no CUDA GPU" in result.output and "--device cpu" in result.output
    assert "limits:" not in result.output and "Traceback" not in result.output  # refused before the run


@pytest.mark.parametrize("spec, candidate, named", [
    ("nope.py", CANDIDATES / "suite" / "1_TinyRelu.py", "spec nope.py: no such file"),
    (SUITE / "1_TinyRelu.py", CANDIDATES / "suite", "is a folder, not a file"),  # a folder, not missing
    (SUITE, CANDIDATES / "suite" / "1_TinyRelu.py", "is a folder, not a file"),
])
def test_a_missing_or_folder_spec_or_candidate_is_a_bad_argument(spec, candidate, named):
    result = CliRunner().invoke(app, [str(spec), str(candidate), "--device", "cpu"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and named in result.output, result.output  # harness/README.md: exit 2
    assert "limits:" not in result.output
