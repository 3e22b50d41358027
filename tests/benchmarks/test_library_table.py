"""scripts/library_table.py: newest (or median) row per spec, --drop skips a named (file, spec) row, and the
published table file is what its runs (read from the commits that hold them) give."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kkb_library_table", REPO / "scripts" / "library_table.py")
library_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(library_table)
bar_summary, copy_fractions = library_table.bar_summary, library_table.copy_fractions
latest_rows, median_rows = library_table.latest_rows, library_table.median_rows


def _results(path: Path, date: str, latency: float) -> Path:
    path.write_text(json.dumps({"date": date, "rows": [{"family": "gemm", "spec": "tall", "latency_ms": latency}]}))
    return path


def test_newest_row_wins_unless_dropped(tmp_path: Path):
    old = _results(tmp_path / "run-old.json", "2026-11-30T10:00:00Z", 0.138)
    new = _results(tmp_path / "run-new.json", "2026-11-30T12:00:00Z", 0.192)
    [(row, _, f)] = latest_rows([old, new])
    assert row["latency_ms"] == 0.192 and f == new
    [(row, _, f)] = latest_rows([old, new], frozenset({("run-new", "tall")}))
    assert row["latency_ms"] == 0.138 and f == old


def test_median_row_is_the_middle_latency_across_files(tmp_path: Path):
    runs = [_results(tmp_path / f"run{i}.json", f"2026-12-01T1{i}:00:00Z", ms)
            for i, ms in enumerate([0.0365, 0.0866, 0.0364])]  # the newest run timed bimodal
    [(row, _, f)] = median_rows(runs)
    assert row["latency_ms"] == 0.0365 and f == runs[0]
    [(row, _, _)] = median_rows(runs[:2])  # even count: the slower middle row, never the flattering one
    assert row["latency_ms"] == 0.0866
    [(row, _, _)] = median_rows(runs, frozenset({("run1", "tall")}))
    assert row["latency_ms"] == 0.0365
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({"date": "2026-12-02", "rows": [{"family": "gemm", "spec": "tall", "status": "failed",
                                                                   "latency_ms": None}]}))
    [(row, _, f)] = median_rows([runs[2], failed])  # a failed run is not outvoted by a passed one
    assert row["status"] == "failed" and f == failed


def test_rows_with_a_flop_count_supersede_rows_without(tmp_path: Path):
    """A compute-bound spec's rows from before the harness counted FLOPs (a share of the memory limit) are left
    out once its rows with a count find it compute-bound; a memory-bound spec keeps all of its rows."""
    def results(name: str, date: str, rows: list[dict]) -> Path:
        (tmp_path / name).write_text(json.dumps({"date": date, "rows": rows}))
        return tmp_path / name

    old = [results(f"old{i}.json", f"2026-12-01T0{i}:00:00Z",
                   [{"family": "gemm", "spec": "tall", "latency_ms": ms, "limit_kind": "memory"},
                    {"family": "pool", "spec": "avg", "latency_ms": ms}])
           for i, ms in enumerate([0.110, 0.111, 0.112])]
    new = results("new.json", "2026-12-01T12:00:00Z",
                  [{"family": "gemm", "spec": "tall", "latency_ms": 0.130, "flops": 10, "limit_kind": "compute"},
                   {"family": "pool", "spec": "avg", "latency_ms": 0.113, "flops": 0, "limit_kind": "memory"}])
    picked = {row["spec"]: row for row, _, _ in median_rows([*old, new])}
    assert picked["tall"]["latency_ms"] == 0.130 and picked["tall"]["limit_kind"] == "compute"
    assert picked["avg"]["latency_ms"] == 0.112  # memory-bound: all four rows stand (the slower middle one)
    failed = results("failed.json", "2026-12-01T13:00:00Z",  # a harness error row carries the key, so it stands
                     [{"family": "gemm", "spec": "tall", "status": "harness_error", "latency_ms": None, "flops": None}])
    [row] = [r for r, _, _ in median_rows([*old, new, failed]) if r["spec"] == "tall"]
    assert row["status"] == "harness_error"


def _row(family: str, spec: str, limit: float, x_eager: float, x_compile: float, compile_limit: float = 0.5) -> dict:
    return {"family": family, "spec": spec, "status": "passed", "fraction_of_limit": limit,
            "speedup_vs_eager": x_eager, "speedup_vs_compile": x_compile, "compile_fraction_of_limit": compile_limit}


def test_bar_summary_counts_memory_bound_specs_only():
    rows = [_row("softmax", "a", 0.90, 2.0, 1.5), _row("batchnorm", "b", 0.55, 8.0, 0.96, 0.99),
            _row("gemm_epilogue", "g", 0.10, 1.0, 0.5)]  # compute-bound: not in the memory-bound bars
    text = bar_summary(rows)
    assert "Memory-bound specs (2," in text and "4.00x over eager" in text  # sqrt(2 * 8)
    assert "1 of 2 at >= 85%" in text and "Under 85%: b 55.0%." in text
    assert "Below torch.compile: b 0.960x (compile at 99% of the limit)." in text


def test_a_spec_just_under_the_bar_does_not_read_as_meeting_it():
    text = bar_summary([_row("layernorm", "ln", 0.84988, 1.3, 1.5), _row("softmax", "sm", 0.85, 2.0, 1.5)])
    assert "Under 85%: ln 84.9%." in text and "1 of 2 at >= 85%" in text


def test_copy_at_size_notes_what_a_copy_of_the_bytes_reaches(tmp_path: Path):
    """--copy-at-size: a spec under a bar gets the share a copy of its bytes reached at its size (the better of the
    even and the uneven copy; a later file's row wins); a spec the files lack gets no note."""
    def copy_file(name: str, date: str, rows: list[dict]) -> Path:
        (tmp_path / name).write_text(json.dumps({"date": date, "rows": rows}))
        return tmp_path / name

    old = copy_file("copy-old.json", "20261201T104409Z", [{"spec": "pool", "fraction_of_limit": 0.70}])
    new = copy_file("copy-new.json", "20261202T050000Z",
                    [{"spec": "pool", "fraction_of_limit": 0.86, "uneven_fraction_of_limit": 0.88,
                      "best_fraction_of_limit": 0.88},
                     {"spec": "bn", "fraction_of_limit": 0.97, "best_fraction_of_limit": 0.97}])
    copy = copy_fractions([new, old])  # given out of date order
    assert copy == {"pool": 0.88, "bn": 0.97}
    rows = [_row("pool2d", "pool", 0.81, 2.2, 0.98, 0.82), _row("batchnorm", "bn", 0.84, 7.5, 2.0),
            _row("softmax", "sm", 0.80, 2.0, 1.5)]
    text = bar_summary(rows, copy)
    assert "Under 85%: pool 81.0% (a copy of its bytes at this size: 88%), bn 84.0% (a copy of its bytes at this " \
           "size: 97%), sm 80.0%." in text
    assert "Below torch.compile: pool 0.980x (compile at 82% of the limit; a copy of its bytes at this size: 88%)." \
        in text


def test_compare_sets_a_run_beside_the_table(tmp_path: Path):
    """The table's rows are the kernel.yaml measurements: a run at the table's latencies is within; one spec 5%
    slower, one failed and one not run are named."""
    c = library_table.compare([_run(tmp_path, {})], 0.03)
    assert c["ok"] and len(c["specs"]) >= 30 and all(s["ratio"] == 1.0 for s in c["specs"])
    table = {s["spec"]: s for s in c["specs"]}
    slow, failed, missing = sorted(table)[:3]
    c = library_table.compare([_run(tmp_path, {slow: 1.05, failed: "wrong", missing: None})], 0.03)
    bad = {s["spec"]: s for s in c["specs"] if not s["ok"]}
    assert not c["ok"] and set(bad) == {slow, failed, missing}
    assert abs(bad[slow]["ratio"] - 1.05) < 1e-9 and bad[failed]["status"] == "wrong"
    assert bad[missing]["status"] == "not run"
    rerun = tmp_path / "rerun.json"  # a later file completes the run: its rows win
    rerun.write_text(json.dumps({"accelerator": "h200", "rows": [{"spec": s, "status": "passed",
                                                                  "latency_ms": table[s]["table_ms"]}
                                                                 for s in (slow, failed, missing)]}))
    assert library_table.compare([_run(tmp_path, {slow: 1.05, failed: "wrong", missing: None}), rerun], 0.03)["ok"]


def _run(tmp_path: Path, changes: dict) -> Path:
    """A results file whose rows are the table's h200 measurements, with `changes`: spec -> a latency factor,
    a failed status, or None (the spec left out)."""
    import yaml

    rows = []
    for sidecar in sorted((REPO / "corpus" / "kernels").glob("*/kernel.yaml")):
        for m in yaml.safe_load(sidecar.read_text()).get("measurements") or []:
            if m["accelerator"] != "h200" or (m["spec"] in changes and changes[m["spec"]] is None):
                continue
            change = changes.get(m["spec"], 1.0)
            status = change if isinstance(change, str) else "passed"
            factor = change if isinstance(change, float) else 1.0
            rows.append({"family": sidecar.parent.name, "spec": m["spec"], "status": status,
                         "latency_ms": m["latency_ms"] * factor})
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"accelerator": "h200", "rows": rows}))
    return path


results_history = library_table.results_history


@pytest.mark.skipif(not results_history.has_history(), reason="reads the runs from their commits")
def test_the_published_table_is_what_its_runs_give():
    """The table file's rows are the rows its runs give (each read from the commit the table names), and the
    kernel.yaml measurements are those rows with the table as their file."""
    table = library_table.load_table()
    runs = library_table._from_history(table["runs"], "runs", table["path"])
    copies = library_table._from_history(table["copy_at_size"], "copy_at_size", table["path"])
    rebuilt = library_table.build_table(runs, table["pick"], library_table._drop(table["drop"]), copies,
                                        table["command"], table["date"])
    assert rebuilt["rows"] == table["rows"]
    assert rebuilt["copy_fraction_by_spec"] == table["copy_fraction_by_spec"]
    commits = [{r["file"]: r["commit"] for r in t["runs"]} for t in (rebuilt, table)]
    assert commits[0] == commits[1]


def test_kernel_yaml_measurements_are_the_table_rows():
    import yaml

    table = library_table.load_table()
    where = str(table["path"].relative_to(REPO))
    for row in table["rows"]:
        sidecar = yaml.safe_load((REPO / "corpus" / "kernels" / row["family"] / "kernel.yaml").read_text())
        [m] = [m for m in sidecar["measurements"]
               if m["accelerator"] == table["accelerator"] and m["spec"] == row["spec"]]
        assert (m["latency_ms"], m["results_file"]) == (row["latency_ms"], where), row["spec"]


def test_a_table_file_without_a_field_is_refused_by_name(tmp_path: Path):
    bad = tmp_path / "library-table-h200-x.json"
    bad.write_text(json.dumps({"date": "2027-01-01", "accelerator": "h200", "pick": "median", "runs": [],
                               "drop": [], "copy_at_size": [], "copy_fraction_by_spec": {}}))
    with pytest.raises(library_table.TableError, match=r"library-table-h200-x.json: no field rows"):
        library_table.load_table(bad)
    rows = [{"spec": "tall", "run_file": "gone.json"}]
    bad.write_text(json.dumps({**json.loads(bad.read_text()), "rows": rows}))
    with pytest.raises(library_table.TableError, match=r"rows\[0\] \(tall\)"):
        library_table.load_table(bad)


def test_a_run_must_be_a_committed_results_file(tmp_path: Path):
    outside = _results(tmp_path / "run.json", "2027-01-01", 0.1)
    with pytest.raises(library_table.TableError, match="lives in benchmarks/results/"):
        library_table._committed([outside])
    with pytest.raises(library_table.TableError, match="no such results file"):
        library_table._committed([library_table.RESULTS / "library-h200-none-20270101T000000Z.json"])
