"""A suite: every problem of a folder (KernelBench's level folders as published), with its candidates, into
one results file that a killed run resumes.

Usage:
    problems = suite_problems(Path("KernelBench/level1"), max_elements=1 << 18, work_dir=Path("out.scaled"))
    run = run_suite(problems, executor, candidates=Path("cands"), backend="triton", results=Path("out.json"))
    run.summary["fast_p"]["eager"]["1.0"], run.exit_code

Candidates of a problem `23_Softmax.py`: `CANDIDATES/23_Softmax.py`, and every `*.py` in `CANDIDATES/23_Softmax/`.
A problem with no candidate gets a baseline row (its profile). The results file is rewritten (atomically)
after every row; a run given the same results file skips the rows already there (same suite, backend and
sizes), so a kill loses at most the candidates in flight. A row whose spec or candidate file changed since
(its recorded `spec_sha` or `candidate_hash` differs) is judged again. Rows hold problem names and numbers
only. A candidate file or folder that names no problem is reported (`unmatched_candidates`), not skipped
in silence.

Summary, as KernelBench defines it over the problems that have candidates: fast_p = the share of problems
whose best passing candidate is more than p times faster than the baseline (p = 0: the share with a passing
candidate), over eager and over torch.compile; geometric means of the best speedups of the problems with a
passing candidate; the median seconds from a candidate's submission to its verdict.
The run itself (`run`): the candidates judged by this run (not those resumed) per minute of its wall time,
and per device the verdicts it gave; `annotate` adds what was measured after the executor closed (the GPU
memory still held: harness/held_memory.py).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import math
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

from harness.jobs import candidate_hash
from harness.spec import SpecError, source_sha
from harness.verdict import Verdict

FAST_P_THRESHOLDS = (0.0, 1.0, 1.5, 2.0)
FORMAT = 1


class BenchExit(IntEnum):
    """Exit status of `kkb bench` (one candidate, or a suite)."""

    OK = 0  # every candidate passed (a suite without candidates: every problem was profiled)
    CANDIDATE_FAILED = 1  # a candidate got a verdict other than passed
    USAGE = 2  # bad arguments (missing files, unknown options)
    SPEC_ERROR = 3  # a spec could not be run: import error, too large for the device, its reference failed
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: every worker was stopped; a suite resumes from its results file


@dataclass(frozen=True)
class Problem:
    name: str  # file stem, e.g. "23_Softmax"
    path: Path  # as published
    run_path: Path  # what is evaluated: the published file, or its scaled copy
    scaling: dict | None = None  # {"factor", "changes", "input_elements", "max_elements"} when scaled


@dataclass
class SuiteRun:
    rows: list[dict]
    summary: dict
    exit_code: BenchExit
    resumed_rows: int = 0  # rows taken from an earlier run's results file
    rejudged_rows: int = 0  # rows of that file judged again: their spec or candidate file changed since
    extra: dict = field(default_factory=dict)


def spec_files(folder: Path) -> list[Path]:
    """The problems of a folder in KernelBench's order (by their number prefix, then name)."""
    def key(p: Path):
        m = re.match(r"(\d+)_", p.name)
        return (int(m.group(1)) if m else 1 << 30, p.name)

    return sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=key)


def suite_problems(folder: Path, max_elements: int | None = None, work_dir: Path | None = None,
                   only: list[str] | None = None) -> list[Problem]:
    """The folder's problems; with max_elements, each scaled (harness/scaling.py) into work_dir."""
    from harness.scaling import ScalingError, scale_spec_source

    problems = []
    for path in spec_files(folder):
        if only and path.stem not in only:
            continue
        if max_elements is None:
            problems.append(Problem(path.stem, path, path))
            continue
        if work_dir is None:
            raise ValueError("scaled problems need a work_dir for their copies")
        work_dir.mkdir(parents=True, exist_ok=True)
        try:
            scaled = scale_spec_source(path.read_text(), max_elements, name=str(path))
            info = {"factor": scaled.factor, "changes": {k: list(v) for k, v in scaled.changes.items()},
                    "input_elements": scaled.input_elements, "max_elements": max_elements}
            text = scaled.source
        except (ScalingError, SyntaxError) as exc:  # run as published; the row says why
            info = {"factor": 1.0, "changes": {}, "error": str(exc), "max_elements": max_elements}
            text = path.read_text()
        run_path = work_dir / path.name
        if not run_path.is_file() or run_path.read_text() != text:
            run_path.write_text(text)
        problems.append(Problem(path.stem, path, run_path, info))
    return problems


def candidates_for(problem: Problem, folder: Path | None) -> list[Path]:
    if folder is None:
        return []
    found = [folder / f"{problem.name}.py"] if (folder / f"{problem.name}.py").is_file() else []
    if (folder / problem.name).is_dir():
        found += sorted((folder / problem.name).glob("*.py"))
    return found


def unmatched_candidates(folder: Path, problem_names: list[str]) -> list[str]:
    """A warning for each file or folder of candidates that names no problem (`19_Relu.py` for the problem
    `19_ReLU`), with the closest problem name: such a candidate would never be judged."""
    by_lower = {name.lower(): name for name in problem_names}
    out = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "_")) or not (entry.is_dir() or entry.suffix == ".py"):
            continue  # __pycache__, hidden files, notes
        stem = entry.name if entry.is_dir() else entry.stem
        if stem in problem_names:
            continue
        close = by_lower.get(stem.lower()) or next(iter(difflib.get_close_matches(stem, problem_names, n=1)), None)
        out.append(f"candidate {entry} names no problem of the suite, so it is not judged"
                   + (f"; the closest problem is {close}" if close else ""))
    return out


def _row_key(problem: str, candidate: str | None) -> str:
    return f"{problem}::{candidate or '-'}"


def _judged_on(problem: Problem, source: str | None) -> dict:
    """The files a row is judged on, hashed as Spec.sha256 and Verdict.candidate_hash are: a resumed row
    whose files changed since is judged again."""
    return {"spec_sha": source_sha(problem.path.read_text()), **({} if source is None else {"candidate_hash": candidate_hash(source)})}


def _unchanged(row: dict, judged_on: dict) -> bool:
    """Whether the files a row records are those of now (a hash it does not record, from an older results
    file, is taken as unchanged)."""
    return all(row.get(key) in (None, value) for key, value in judged_on.items())


def verdict_row(problem: Problem, candidate: str, verdict: Verdict, seconds: float) -> dict:
    row = verdict.to_dict()
    diag = row.pop("diagnostics")
    keep = {k: diag.get(k) for k in ("timing_method", "time_limit_s", "evaluation_s", "memory", "oom", "stage", "ray",
                                      "where") if k in diag}
    return {"spec": problem.name, "candidate": candidate, **row, **keep, "time_to_verdict_s": round(seconds, 3),
            "scaling": problem.scaling}


def baseline_row(problem: Problem, profile: dict, seconds: float) -> dict:
    timed = profile.get("timed", {}).get("default", {})
    eager = (timed.get("eager") or {}).get("median_ms")
    compiled = (timed.get("compile") or {}).get("median_ms")
    return {"spec": problem.name, "candidate": None, "status": "baseline", "latency_ms": None,
            "eager_ms": eager, "compile_ms": compiled,
            "compile_vs_eager": (eager / compiled) if eager and compiled else None,
            "bytes_moved": timed.get("bytes_moved"), "flops": timed.get("flops"),
            "timing_method": (timed.get("eager") or {}).get("method"), "reasons": [],
            "peak_bytes": (profile.get("memory") or {}).get("peak_allocated_bytes"),
            "time_to_verdict_s": round(seconds, 3), "scaling": problem.scaling}


def error_row(problem: Problem, candidate: str | None, exc: BaseException) -> dict:
    status = "too_large" if type(exc).__name__ == "SpecTooLarge" else "spec_error"
    return {"spec": problem.name, "candidate": candidate, "status": status, "reasons": [str(exc)],
            "scaling": problem.scaling}


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(rows: list[dict]) -> dict:
    """fast_p over eager and torch.compile, geometric means, counts and the median time to a verdict."""
    by_problem: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("candidate") is not None:
            by_problem.setdefault(row["spec"], []).append(row)
    best: dict[str, dict[str, float]] = {}
    for name, items in by_problem.items():
        passed = [r for r in items if r["status"] == "passed"]
        best[name] = {basis: max((r.get(f"speedup_vs_{basis}") or 0.0) for r in passed) if passed else -1.0
                      for basis in ("eager", "compile")}
    n = len(best)
    fast_p = {basis: {str(p): (sum(1 for b in best.values() if b[basis] > p or (p == 0 and b[basis] >= 0)) / n
                               if n else None) for p in FAST_P_THRESHOLDS}
              for basis in ("eager", "compile")}
    candidates = [r for r in rows if r.get("candidate") is not None and r["status"] not in ("spec_error", "too_large")]
    times = [r["time_to_verdict_s"] for r in candidates if r.get("time_to_verdict_s") is not None]
    evaluations = [r["evaluation_s"] for r in candidates if r.get("evaluation_s") is not None]
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {
        "problems": len({r["spec"] for r in rows}), "problems_with_candidates": n,
        "candidates": len(candidates), "passed": sum(1 for r in candidates if r["status"] == "passed"),
        "statuses": statuses, "fast_p": fast_p,
        "geomean_speedup_vs_eager": _geomean([b["eager"] for b in best.values() if b["eager"] > 0]),
        "geomean_speedup_vs_compile": _geomean([b["compile"] for b in best.values() if b["compile"] > 0]),
        # from submission (at most `max_inflight` candidates queued), and from the start on a device
        "median_time_to_verdict_s": statistics.median(times) if times else None,
        "median_evaluation_s": statistics.median(evaluations) if evaluations else None,
        "max_evaluation_s": max(evaluations) if evaluations else None,
    }


def _device_of(row: dict) -> str:
    where = row.get("where") or {}
    device = where.get("device") or "unknown"
    return f"{where['host']}/{device}" if where.get("host") else device


def run_stats(rows: list[dict], wall_s: float) -> dict:
    """Throughput and verdicts per device of the rows one run judged (rows resumed from a file excluded)."""
    judged = [r for r in rows if r.get("candidate") is not None and r["status"] not in ("spec_error", "too_large")]
    by_device: dict[str, dict] = {}
    for r in judged:
        entry = by_device.setdefault(_device_of(r), {"candidates": 0, "statuses": {}, "workers": []})
        entry["candidates"] += 1
        entry["statuses"][r["status"]] = entry["statuses"].get(r["status"], 0) + 1
        worker = (r.get("where") or {}).get("worker")
        if worker is not None and worker not in entry["workers"]:
            entry["workers"].append(worker)
    return {"wall_s": round(wall_s, 3), "candidates": len(judged),
            "baselines": sum(1 for r in rows if r.get("status") == "baseline"),
            "candidates_per_minute": round(60.0 * len(judged) / wall_s, 3) if wall_s > 0 and judged else None,
            "by_device": dict(sorted(by_device.items()))}


def exit_code(rows: list[dict]) -> BenchExit:
    if any(r.get("candidate") is not None and r["status"] not in ("passed", "spec_error", "too_large")
           for r in rows):
        return BenchExit.CANDIDATE_FAILED
    if any(r["status"] in ("spec_error", "too_large") for r in rows):
        return BenchExit.SPEC_ERROR
    return BenchExit.OK


def _write(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w") as f:
        json.dump(payload, f, indent=1, default=str)
    os.replace(tmp, path)


def annotate(results: Path, **fields) -> None:
    """Add top-level fields to a results file as written (e.g. the memory held after the executor closed)."""
    data = json.loads(results.read_text())
    data.update(fields)
    _write(results, data)


def _earlier_rows(results: Path, identity: dict) -> list[dict]:
    try:
        data = json.loads(results.read_text())
    except (OSError, ValueError):
        return []
    if data.get("format") != FORMAT or data.get("identity") != identity:
        return []
    return list(data.get("rows") or [])


def run_suite(problems: list[Problem], executor, results: Path, identity: dict, candidates: Path | None = None,
              backend: str = "triton", resume: bool = True, max_inflight: int = 2,
              on_row: Callable[[dict], None] | None = None, extra: dict | None = None) -> SuiteRun:
    """Evaluate every candidate of every problem through `executor` (WorkerPool, RayPool: anything with
    submit(spec_path, source, backend) -> Future[Verdict] and submit_profile(spec_path) -> Future[dict]),
    at most `max_inflight` at once (problems without candidates are profiled in flight too, so several
    devices measure baselines side by side).

    identity: what must match for a results file to be resumed (suite folder, backend, sizes, device kind).
    Raises whatever stops the harness (KeyboardInterrupt, HarnessStopped) after the rows done so far are
    written."""
    earlier = _earlier_rows(results, identity) if resume else []
    done = {_row_key(r["spec"], r.get("candidate")): r for r in earlier if r["status"] not in ("spec_error",)}
    rows: list[dict] = list(done.values())
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    t_start = time.monotonic()
    this_run: list[dict] = []
    payload = {"format": FORMAT, "identity": identity, "started": started, **(extra or {}), "rows": rows,
               "summary": summarize(rows), "run": run_stats([], 0.0)}

    order = {p.name: i for i, p in enumerate(problems)}

    def record(row: dict, judged_on: dict) -> None:
        row = {**row, **judged_on}
        rows.append(row)
        this_run.append(row)
        rows.sort(key=lambda r: (order.get(r["spec"], len(order)), r.get("candidate") or ""))
        payload["summary"] = summarize(rows)
        payload["run"] = run_stats(this_run, time.monotonic() - t_start)
        _write(results, payload)
        if on_row is not None:
            on_row(row)

    _write(results, payload)
    inflight: dict[Future, tuple[Problem, str | None, float, dict]] = {}  # name None: the problem's baselines

    def harvest(block: bool) -> None:
        if not inflight:
            return
        finished, _ = wait(list(inflight), timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for fut in finished:
            problem, name, t0, judged_on = inflight.pop(fut)
            exc = fut.exception()
            if exc is None:
                seconds = time.monotonic() - t0
                record(baseline_row(problem, fut.result(), seconds) if name is None
                       else verdict_row(problem, name, fut.result(), seconds), judged_on)
            elif isinstance(exc, (SpecError, RuntimeError)) and type(exc).__name__ != "HarnessStopped":
                record(error_row(problem, name, exc), judged_on)
            else:
                raise exc

    def start(problem: Problem, name: str | None, submit: Callable[[], Future], judged_on: dict) -> None:
        while len(inflight) >= max_inflight:
            harvest(block=True)
        try:
            inflight[submit()] = (problem, name, time.monotonic(), judged_on)
        except SpecError as exc:  # the spec cannot be loaded: nothing of it runs
            record(error_row(problem, name, exc), judged_on)
        harvest(block=False)

    rejudged = 0

    def still_done(key: str, judged_on: dict) -> bool:
        """Whether an earlier row stands; a row whose files changed since leaves the results, to be judged
        again."""
        nonlocal rejudged
        if key not in done:
            return False
        if _unchanged(done[key], judged_on):
            return True
        rows.remove(done.pop(key))
        rejudged += 1
        return False

    def profile_of(problem: Problem) -> Callable[[], Future]:
        if hasattr(executor, "submit_profile"):
            return lambda: executor.submit_profile(problem.run_path)

        def at_once() -> Future:  # an executor without submit_profile: one profile at a time
            fut: Future = Future()
            try:
                fut.set_result(executor.profile(problem.run_path))
            except (SpecError, RuntimeError) as exc:
                if type(exc).__name__ == "HarnessStopped":
                    raise
                fut.set_exception(exc)
            return fut

        return at_once

    for problem in problems:
        cands = candidates_for(problem, candidates)
        if not cands:
            judged_on = _judged_on(problem, None)
            if not still_done(_row_key(problem.name, None), judged_on):
                start(problem, None, profile_of(problem), judged_on)
            continue
        for cand in cands:
            name = cand.name if cand.parent == candidates else f"{cand.parent.name}/{cand.name}"
            source = cand.read_text()  # read once: what is hashed is what is judged
            judged_on = _judged_on(problem, source)
            if still_done(_row_key(problem.name, name), judged_on):
                continue
            start(problem, name, lambda problem=problem, source=source: executor.submit(
                problem.run_path, source, backend), judged_on)
    while inflight:
        harvest(block=True)
    return SuiteRun(rows, payload["summary"], exit_code(rows), resumed_rows=len(done), rejudged_rows=rejudged)
