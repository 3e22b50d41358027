"""docs/RESULTS.md and the README's headline numbers are what scripts/results_md.py makes of the committed
results files: regenerating changes nothing, and the KernelBench section follows the newest files.

Usage: .venv/bin/python -m pytest -q tests/test_results_md.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts import results_md

REPO = Path(__file__).resolve().parents[1]


def test_regenerating_gives_the_committed_pages():
    stale = [str(path.relative_to(REPO)) for path, text in results_md.wanted().items() if path.read_text() != text]
    assert not stale, f"{stale} differ from their results files: run python3 scripts/results_md.py"


def test_every_results_file_the_pages_link_is_committed():
    for page in (REPO / "docs" / "RESULTS.md", REPO / "README.md"):
        linked = re.findall(r"\]\(((?:\.\./)?benchmarks/results/[^)]+)\)", page.read_text())
        assert linked, page
        for target in linked:
            assert (page.parent / target).resolve().is_file(), f"{page.name}: {target}"


def _kernelbench_file(folder: Path, name: str, date: str, problems: list[dict]) -> None:
    passed = [p for p in problems if p["status"] == "passed"]
    summary = {"problems": len(problems), "passed": len(passed), "pass_rate": len(passed) / len(problems),
               "failed": {p["problem"]: p["reasons"][0] for p in problems if p["status"] != "passed"}}
    (folder / name).write_text(json.dumps({
        "name": "kernelbench-cpu", "date": date, "command": "python benchmarks/bench_kernelbench.py --device cpu",
        "max_elements": 262144, "max_flops": 1e8, "summary": summary, "problems": problems}))


def test_the_kernelbench_section_reads_the_newest_cpu_file(tmp_path, monkeypatch):
    monkeypatch.setattr(results_md, "RESULTS", tmp_path)
    monkeypatch.setattr(results_md, "REPO", tmp_path.parent)
    assert "No `kernelbench-cpu-*.json` is committed yet." in results_md.kernelbench()
    ok = {"problem": "1/19_ReLU", "status": "passed", "best": {}}
    bad = {"problem": "2/7_Odd", "status": "wrong", "reasons": ["output 3 of 40: max abs error 0.5 | atol 1e-05"]}
    _kernelbench_file(tmp_path, "kernelbench-cpu-20270101T000000Z.json", "2027-01-01T00:00:00+00:00", [ok])
    _kernelbench_file(tmp_path, "kernelbench-cpu-20270102T000000Z.json", "2027-01-02T00:00:00+00:00", [ok, bad])
    text = results_md.kernelbench()
    assert "kernelbench-cpu-20270102T000000Z.json" in text and "20270101" not in text  # the newest file only
    assert "Passed: 1 of 2 problems (50.0%)." in text
    assert "| `2/7_Odd` | output 3 of 40: max abs error 0.5 / atol 1e-05 |" in text  # a | cannot break the table
    assert "inputs of at most 262,144 elements" in text
    assert "No GPU run of `bench_kernelbench.py` is committed yet." in text


def test_each_gpu_sample_shows_its_newest_run(tmp_path, monkeypatch):
    # two samples are two benchmarks: each keeps its newest run, and neither hides the other
    monkeypatch.setattr(results_md, "RESULTS", tmp_path)
    monkeypatch.setattr(results_md, "REPO", tmp_path.parent)
    ok = {"problem": "1/19_ReLU", "status": "passed", "best": {}}
    for name, date, sample in (("kernelbench-h100-20270101T000000Z.json", "2027-01-01", "kb_sample_a.txt"),
                               ("kernelbench-h100-20270102T000000Z.json", "2027-01-02", "kb_sample_a.txt"),
                               ("kernelbench-h100-20270103T000000Z.json", "2027-01-03", "kb_sample_b.txt")):
        (tmp_path / name).write_text(json.dumps({
            "name": "kernelbench", "date": date, "device": "cuda:0",
            "card": {"short_id": "h100", "name": "NVIDIA H100 SXM5 80GB"},
            "command": f"python3 benchmarks/bench_kernelbench.py --device cuda:0 --sample benchmarks/{sample}",
            "summary": {"problems": 1, "passed": 1, "pass_rate": 1.0, "geomean_vs_compile": 1.5},
            "problems": [ok]}))
    shown = [p.name for p in results_md.newest_kernelbench_samples()]
    assert sorted(shown) == ["kernelbench-h100-20270102T000000Z.json", "kernelbench-h100-20270103T000000Z.json"]
    text = results_md.kernelbench()
    assert "`benchmarks/kb_sample_a.txt`, on NVIDIA H100 SXM5 80GB" in text and "20270101" not in text


@pytest.mark.parametrize(("command", "shown"), [
    ("/opt/venv/bin/python3 benchmarks/bench_x.py --out /tmp/x.json --k 3", "python3 benchmarks/bench_x.py --k 3"),
    ("python benchmarks/bench_y.py --out-dir=/tmp/o", "python benchmarks/bench_y.py"),  # where the output went only
])
def test_commands_are_shown_without_where_their_output_went(command: str, shown: str):
    assert results_md.command({"command": command}) == shown


def test_a_file_that_records_its_commit_names_it():
    path = REPO / "benchmarks" / "results" / "kb-x.json"
    data = {"date": "2027-01-01T00:00:00+00:00", "command": "python3 benchmarks/bench_kb.py", "commit": "0123456789abcdef"}
    assert "written 2027-01-01 at commit `0123456789ab` by `python3 benchmarks/bench_kb.py`" in results_md.source(path, data)
    assert "at commit" not in results_md.source(path, {**data, "commit": None})


def _library_file(folder: Path, name: str, date: str, command: str, rows: list[tuple[str, float]]) -> None:
    (folder / name).write_text(json.dumps({
        "date": date, "command": command, "accelerator": "h100",
        "rows": [{"family": "softmax", "spec": spec, "shape": "8x8", "dtype": "float32", "status": "passed",
                  "latency_ms": 1.0, "speedup_vs_eager": x, "speedup_vs_compile": x, "fraction_of_limit": 0.5,
                  "limit_kind": "memory"} for spec, x in rows]}))


def test_a_later_partial_library_run_replaces_its_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(results_md, "RESULTS", tmp_path)
    monkeypatch.setattr(results_md, "REPO", tmp_path.parent)
    monkeypatch.setattr(results_md, "load_table", lambda: {"accelerator": "h200"})
    monkeypatch.setattr(results_md, "library_specs", lambda: {"a", "b", "c"})
    _library_file(tmp_path, "library-h100-all-20270101T000000Z.json", "2027-01-01T00:00:00Z",
                  "bench_library.py --all --label all", [("a", 0.5), ("b", 2.0), ("c", 2.0), ("gone", 0.1)])
    _library_file(tmp_path, "library-h100-changed-20270102T000000Z.json", "2027-01-02T00:00:00Z",
                  "bench_library.py --all --label changed --specs a,c", [("a", 2.0)])
    text = results_md.library_run_section()
    assert "below 0.97x torch.compile: none" in text  # a's 0.5x replaced; the spec no longer held left out
    assert "3 of 3 specs pass; geometric mean 2.00x over eager" in text
    assert "Left out, no longer in the library: gone." in text
    assert "c did not start within its budget" in text
    assert "| softmax | a | 8x8 | float32 | passed | 1.0000 | 2.00 | 2.00 | 50% memory | changed |" in text
    assert "| softmax | b | 8x8 | float32 | passed | 1.0000 | 2.00 | 2.00 | 50% memory | all |" in text


def test_a_rerun_s_own_list_is_named_as_such():
    """A sample kept outside the tree (an ignored folder) is no committed file: the page says its results file
    names the problems, and a sample in the tree keeps its path."""
    assert results_md._sample_text(".gpu/rerun2.txt") == (
        "`rerun2.txt` (a rerun's own list: its results file names the problems)")
    assert results_md._sample_text("benchmarks/kernelbench_sample_other.txt") == (
        "`benchmarks/kernelbench_sample_other.txt`")


def test_the_newest_row_of_each_problem_comes_from_the_newest_run_that_measured_it(tmp_path, monkeypatch):
    # a rerun of one problem replaces its row and keeps the others'; convolutions and other cards stay apart
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    monkeypatch.setattr(results_md, "RESULTS", results)
    monkeypatch.setattr(results_md, "REPO", tmp_path)
    (tmp_path / "benchmarks" / "kernelbench_h200_sample.txt").write_text("# rule\n1/19_ReLU\n2/1_Conv2D_ReLU\n")
    (tmp_path / "benchmarks" / "kernelbench_sample_other.txt").write_text("# rule\n1/23_Softmax\n")

    def row(problem, speedup, status="passed"):
        return {"problem": problem, "status": status, "best": {"speedup_vs_compile": speedup}}

    for name, date, rows in (("kernelbench-h100-20270101T000000Z.json", "2027-01-01",
                              [row("1/19_ReLU", 0.5), row("1/23_Softmax", 2.0), row("2/1_Conv2D_ReLU", 0.1)]),
                             ("kernelbench-h100-20270102T000000Z.json", "2027-01-02", [row("1/19_ReLU", 1.25)])):
        (results / name).write_text(json.dumps({
            "name": "kernelbench", "date": date, "device": "cuda:0",
            "card": {"short_id": "h100", "name": "NVIDIA H100 SXM5 80GB"},
            "command": "python3 benchmarks/bench_kernelbench.py --device cuda:0 --problems x",
            "summary": {"problems": len(rows), "passed": len(rows), "pass_rate": 1.0}, "problems": rows}))
    text = results_md.latest_rows_section()
    assert "not convolutions (2)" in text, text
    assert "On NVIDIA H100 SXM5 80GB: 2 of 2 measured problems pass" in text, text
    assert "geometric mean 1.58x torch.compile; below 0.97x: none." in text, text  # sqrt(1.25 * 2.0)
    assert "20270101T000000Z" in text and "20270102T000000Z" in text
