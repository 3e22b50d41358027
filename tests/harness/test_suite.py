"""Suites (harness/suite.py, `kkb bench --suite`): a verdict per candidate and KernelBench's summary in one
results file, resumed after a kill, scaled sizes recorded per problem, and the exit status."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import bench
from harness.suite import BenchExit, summarize, unmatched_candidates
from tests.harness.harness_helpers import CANDIDATES, REPO, SPECS, candidate, harness_env
from tests.harness.test_memory import BIG_SOFTMAX

app = typer.Typer()
app.command()(bench)
SUITE, MANY = SPECS / "suite", CANDIDATES / "suite_many"
EXPECTED = {("1_TinyRelu", "1_TinyRelu.py"): "passed", ("2_TinySum", "2_TinySum/honest_sum.py"): "passed",
            ("2_TinySum", "2_TinySum/wrong_sum.py"): "wrong", ("2_TinySum", "2_TinySum/calls_torch_sum.py"): "rejected"}


def row(spec: str, status: str, eager: float | None = None, compiled: float | None = None) -> dict:
    return {"spec": spec, "candidate": f"{spec}.py", "status": status, "speedup_vs_eager": eager,
            "speedup_vs_compile": compiled, "time_to_verdict_s": 1.0}


def test_fast_p_and_geometric_means():
    rows = [row("a", "passed", 2.5, 1.2), row("a", "passed", 0.5, 0.3),  # a's best: 2.5 / 1.2
            row("b", "passed", 1.2, 0.8), row("c", "wrong"), row("d", "passed", 0.9, 0.4),
            {"spec": "e", "candidate": None, "status": "baseline"}]  # no candidate: not in fast_p
    summary = summarize(rows)
    assert summary["problems_with_candidates"] == 4 and summary["candidates"] == 5
    assert summary["fast_p"]["eager"] == {"0.0": 0.75, "1.0": 0.5, "1.5": 0.25, "2.0": 0.25}
    assert summary["fast_p"]["compile"] == {"0.0": 0.75, "1.0": 0.25, "1.5": 0.0, "2.0": 0.0}
    assert math.isclose(summary["geomean_speedup_vs_eager"], (2.5 * 1.2 * 0.9) ** (1 / 3))
    assert summary["median_time_to_verdict_s"] == 1.0


def test_suite_verdicts_summary_and_exit_status(tmp_path):
    out = tmp_path / "suite.json"
    result = CliRunner().invoke(app, ["--suite", str(SUITE), "--candidates", str(MANY), "--device", "cpu",
                                      "--no-compile-baseline", "--trials", "2", "-o", str(out)])
    assert result.exit_code == BenchExit.CANDIDATE_FAILED, result.output  # one wrong, one rejected
    data = json.loads(out.read_text())
    assert {(r["spec"], r["candidate"]): r["status"] for r in data["rows"]} == EXPECTED
    assert [r["spec"] for r in data["rows"]] == ["1_TinyRelu"] + ["2_TinySum"] * 3  # KernelBench order
    summary = data["summary"]
    assert summary["fast_p"]["eager"]["0.0"] == 1.0 and summary["passed"] == 2
    assert summary["median_time_to_verdict_s"] > 0 and "fast_1.0" in result.output


def test_resumes_after_kill_9(tmp_path):
    # two workers (`--devices cpu,cpu`): rows land from both; a kill -9 keeps those written
    out = tmp_path / "suite.json"
    cmd = [sys.executable, "-m", "harness.cli", "--suite", str(SUITE), "--candidates", str(MANY), "--devices",
           "cpu,cpu", "--no-compile-baseline", "--trials", "2", "-o", str(out)]
    proc = subprocess.Popen(cmd, cwd=REPO, env=harness_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while True:
            rows = json.loads(out.read_text())["rows"] if out.exists() else []
            if rows or proc.poll() is not None:
                break
            assert time.monotonic() < deadline, "no row was written in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = {(r["spec"], r["candidate"]): r for r in json.loads(out.read_text())["rows"]}
    assert 1 <= len(before) < 4, "killed mid-suite"
    result = CliRunner().invoke(app, cmd[3:])
    assert f"resumed: {len(before)} rows" in result.output
    data = json.loads(out.read_text())
    after = data["rows"]
    assert {(r["spec"], r["candidate"]): r["status"] for r in after} == EXPECTED  # each once, none lost
    for r in after:  # the rows of the killed run are kept as they were, not evaluated again
        if (r["spec"], r["candidate"]) in before:
            assert r == before[(r["spec"], r["candidate"])]
    assert data["run"]["candidates"] == 4 - len(before)  # the resumed run counts what it judged itself
    assert not data["held_after"]["held"]


def test_scaled_problem_records_what_was_scaled(tmp_path):
    suite, cands = tmp_path / "level1", tmp_path / "cands"
    suite.mkdir()
    cands.mkdir()
    (suite / "23_Softmax.py").write_text(BIG_SOFTMAX)
    (cands / "23_Softmax.py").write_text(candidate("honest_softmax"))
    out = tmp_path / "scaled.json"
    result = CliRunner().invoke(app, ["--suite", str(suite), "--candidates", str(cands), "--device", "cpu",
                                      "--no-compile-baseline", "--trials", "1", "--max-elements", "4096",
                                      "-o", str(out)])
    assert result.exit_code == BenchExit.OK, result.output
    (only,) = json.loads(out.read_text())["rows"]
    assert only["status"] == "passed" and only["scaling"]["max_elements"] == 4096
    changes = only["scaling"]["changes"]
    assert changes["batch_size"][0] == 4096 and changes["dim"][0] == 393216
    assert changes["batch_size"][1] * changes["dim"][1] == only["scaling"]["input_elements"] <= 4096
    assert (suite / "23_Softmax.py").read_text() == BIG_SOFTMAX  # the published file is left as it was


@pytest.mark.parametrize(("body", "status"), [
    ("x = 1\n", "spec_error"),  # not the KernelBench format
    (BIG_SOFTMAX, "too_large"),  # 6.4 GB of input on the CPU worker, unscaled
])
def test_problem_that_cannot_run_exits_3(tmp_path, body, status):
    suite = tmp_path / "level1"
    suite.mkdir()
    (suite / "1_Problem.py").write_text(body)
    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["--suite", str(suite), "--device", "cpu", "--no-compile-baseline",
                                      "-o", str(out)])
    assert result.exit_code == BenchExit.SPEC_ERROR, result.output
    (only,) = json.loads(out.read_text())["rows"]
    assert only["status"] == status and "1_Problem.py" in only["reasons"][0]


def test_a_resumed_suite_judges_again_the_rows_whose_files_changed(tmp_path):
    suite, cands = tmp_path / "level1", tmp_path / "cands"
    suite.mkdir()
    cands.mkdir()
    for name in ("1_TinyRelu.py", "2_TinySum.py"):
        (suite / name).write_text((SUITE / name).read_text())
    (cands / "1_TinyRelu.py").write_text((CANDIDATES / "suite" / "1_TinyRelu.py").read_text())
    out = tmp_path / "s.json"
    args = ["--suite", str(suite), "--candidates", str(cands), "--device", "cpu", "--no-compile-baseline",
            "--trials", "1", "-o", str(out)]

    def run() -> dict:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == BenchExit.OK, result.output
        return {r["spec"]: r for r in json.loads(out.read_text())["rows"]}, result.output

    first, _ = run()
    assert first["1_TinyRelu"]["candidate_hash"] and first["2_TinySum"]["spec_sha"]
    same, said = run()
    assert same == first and "resumed: 2 rows" in said and "judged again" not in said
    (cands / "1_TinyRelu.py").write_text((cands / "1_TinyRelu.py").read_text() + "# edited\n")  # the candidate
    changed, said = run()
    assert "resumed: 1 rows" in said and "1 judged again, their spec or candidate file changed" in said
    assert changed["1_TinyRelu"]["candidate_hash"] != first["1_TinyRelu"]["candidate_hash"]
    assert changed["2_TinySum"] == first["2_TinySum"]  # unchanged: kept as it was
    (suite / "2_TinySum.py").write_text((suite / "2_TinySum.py").read_text() + "# edited\n")  # a spec
    respec, said = run()
    assert "1 judged again" in said and respec["2_TinySum"]["spec_sha"] != first["2_TinySum"]["spec_sha"]
    assert respec["1_TinyRelu"] == changed["1_TinyRelu"]
    assert len(respec) == 2 and len(json.loads(out.read_text())["rows"]) == 2  # each row once


def test_a_candidate_that_names_no_problem_is_a_warning(tmp_path):
    cands = tmp_path / "cands"
    (cands / "2_Tinysum").mkdir(parents=True)  # a folder of candidates, its name cased wrong
    (cands / "__pycache__").mkdir()
    (cands / "1_TinyRelu.py").write_text((CANDIDATES / "suite" / "1_TinyRelu.py").read_text())
    (cands / "1_TinyReLU_v2.py").write_text("")  # a typo of a problem's name
    (cands / "99_Nothing_like_it.py").write_text("")
    (cands / "NOTES.md").write_text("")
    warnings = unmatched_candidates(cands, ["1_TinyRelu", "2_TinySum"])
    unjudged = "names no problem of the suite, so it is not judged"
    assert warnings == [
        f"candidate {cands / '1_TinyReLU_v2.py'} {unjudged}; the closest problem is 1_TinyRelu",
        f"candidate {cands / '2_Tinysum'} {unjudged}; the closest problem is 2_TinySum",
        f"candidate {cands / '99_Nothing_like_it.py'} {unjudged}",  # nothing close: no name offered
    ]
    result = CliRunner().invoke(app, ["--suite", str(SUITE), "--candidates", str(cands), "--only", "1_TinyRelu",
                                      "--device", "cpu", "--no-compile-baseline", "--trials", "1",
                                      "-o", str(tmp_path / "s.json")])
    assert result.exit_code == BenchExit.OK, result.output
    assert f"warning: candidate {cands / '1_TinyReLU_v2.py'}" in result.output
    assert "2_Tinysum" in result.output and "1_TinyRelu.py names" not in result.output
