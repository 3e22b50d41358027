"""Compile check for sm_90 without a GPU: every Triton kernel the offline candidates of KernelBench problems
launch at the published sizes, compiled ahead of time for an H100/H200 with the installed triton.

Usage: PY=/path/to/venv-with-the-GPU-machine's-triton/bin/python
       $PY benchmarks/sm90_check.py --kernelbench PATH/KernelBench --sample benchmarks/kernelbench_h200_sample.txt
       $PY benchmarks/sm90_check.py --kernelbench PATH/KernelBench --problems 1/23_Softmax --points 8 --out FILE
       $PY benchmarks/sm90_check.py --specs corpus/kernels/*/specs/*.py       # any spec files, as problems
       $PY benchmarks/sm90_check.py --candidate CANDIDATE.py --spec SPEC.py [--point '{"BLOCK": 2048}']

The CPU interpreter accepts kernels the compiler rejects or compiles badly (shared memory past the block
limit for num_stages, register spills, APIs newer than the compiler, dtype rules): this finds them before a
GPU minute is spent. Per problem: the offline provider's routes (agent_client/offline/provider.py; library
kernels from corpus/kernels through the one bundling function), each route's default point and the first
--points drafts the provider proposes; each candidate is dry-run at the spec's shapes (reads.LaunchProbe,
fake tensors on a simulated H100) and each distinct launch compiled for sm_90 (benchmarks/sm90_compile.py).
Reported per launch: compiled or the compiler's error, registers, spills, shared memory against the limit;
per problem a verdict: ok (every launch compiles and fits), fail (which launches, why), incomplete (nothing
failed, but a dry run stopped early; its stop_kind says why: needs_data, a launcher reading real data;
refused, real tensors would stop it too: the candidate's launcher refuses the shapes, or a shape error on
one of its lines; error, anything else, such as an API the installed triton lacks; the launches before the
stop are checked), no_routes. Compiled results are cached by kernel source, signature and options (--cache).
Writes benchmarks/results/sm90-check-<UTC>.json (or --out, rewritten after each problem); a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sm90_compile import (
    NO_CUDA_GUARD,
    SHARED_LIMIT_BYTES,
    LaunchCheck,
    compile_launch,
    fake_cuda_guard,
    prepare,
    simulated_h100,
)

DEVICE = "cuda:0"  # where the dry run puts its fake tensors: the GPU paths of every launcher
DEFAULT_CACHE = Path.home() / ".cache" / "kernelkb" / "sm90-check.json"


class ResultCache:
    """LaunchCheck dicts by PreparedLaunch.key, in one JSON file (merged on save: runs may share it)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.entries: dict = {}
        if path and path.is_file():
            try:
                self.entries = json.loads(path.read_text())
            except ValueError:
                self.entries = {}  # a damaged cache is only lost time

    def get(self, key: str) -> LaunchCheck | None:
        found = self.entries.get(key)
        return LaunchCheck(**{**found, "reasons": tuple(found["reasons"])}) if found else None

    def put(self, key: str, check: LaunchCheck) -> None:
        self.entries[key] = check.to_dict()
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        on_disk = ResultCache(self.path).entries
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**on_disk, **self.entries}))
        tmp.replace(self.path)


# ---- candidates and their launches --------------------------------------------------------------------------
def dry_run(probe, point: dict):
    """probe.dry_run(point) on the simulated H100; once more with a CUDA device guard where torch lacked one."""
    with simulated_h100():
        run = probe.dry_run(point)
    if run.error and NO_CUDA_GUARD in run.error and fake_cuda_guard():
        with simulated_h100():
            run = probe.dry_run(point)
    return run


# exceptions of a fake tensor asked for its data (`.item()`, `.tolist()`, an output shape that depends on data)
_NEEDS_DATA = ("DataDependentOutputException", "DynamicOutputShapeException", "GuardOnDataDependentSymNode")


def stop_kind(run) -> str | None:
    """Why a dry run did not finish: needs_data, refused (it would fail on real tensors too) or error
    (anything else: an API the installed triton lacks, or a device query the simulation does not answer)."""
    if run.error is None:
        return None
    if run.refused:
        return "refused"
    return "needs_data" if run.error.split(":")[0] in _NEEDS_DATA else "error"


def check_candidate(label: str, probe, point: dict, launches: dict, cache: ResultCache) -> dict:
    """Dry-run one candidate, compile each launch not seen yet (into `launches`, by key); its row."""
    run = dry_run(probe, point)
    keys = []
    for call in run.calls:
        with simulated_h100():
            prepared = prepare(call)
        for p in prepared:
            keys.append(p.key)
            if p.key not in launches:
                check = cache.get(p.key) if p.src is not None else None
                if check is None:
                    check = compile_launch(p)
                    if p.src is not None:
                        cache.put(p.key, check)
                launches[p.key] = {"kernel": p.name, "signature": p.signature, "grid": _plain(call.grid),
                                   "candidates": [], **check.to_dict()}
            if label not in launches[p.key]["candidates"]:
                launches[p.key]["candidates"].append(label)
    return {"candidate": label, "launches": len(run.calls), "distinct": len(set(keys)),
            "dry_run": "complete" if run.error is None else "incomplete", "stop_kind": stop_kind(run),
            "stopped": run.error}


def problem_candidates(spec: Path, kb, points: int) -> tuple[list, list[str]]:
    """[(label, route, point)]: each route's default, then the provider's first `points` drafts; and why
    routes are missing. Raises ProviderError where no route serves the spec."""
    from agent_client.offline.provider import OfflineProvider
    from agent_client.offline.tunables import key
    from agent_client.proposals import ProposalRequest

    provider = OfflineProvider()
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", accelerator="h100",
                              prompt="", parent=None, n=points, kb=kb, device=DEVICE)
    with simulated_h100():
        routes, why = provider.routes(request)
        drafts = provider.propose(request) if routes and points else []
    by_id = {r.id: r for r in routes}
    chosen = [(r, dict(r.default)) for r in routes]
    chosen += [(by_id[p.meta["route_id"]], {**by_id[p.meta["route_id"]].default, **p.meta["tunables"]})
               for p in drafts if p.meta.get("route_id") in by_id]
    out, seen = [], set()
    for route, point in chosen:
        if (route.id, key(point)) in seen:
            continue
        seen.add((route.id, key(point)))
        moved = {k: v for k, v in point.items() if route.default.get(k) != v}
        out.append((f"{route.id}" + (f" {moved}" if moved else " (default)"), route, point))
    return out, why


def check_problem(name: str, spec: Path, kb, points: int, cache: ResultCache) -> dict:
    from agent_client.offline.reads import LaunchProbe
    from agent_client.proposals import ProviderError

    t0 = time.monotonic()
    row: dict = {"problem": name}
    try:
        candidates, why = problem_candidates(spec, kb, points)
    except ProviderError as exc:
        return {**row, "verdict": "no_routes", "why": str(exc)[:600], "seconds": round(time.monotonic() - t0, 1)}
    row["why_missing"] = why
    probes: dict = {}
    launches: dict = {}
    rows = []
    for label, route, point in candidates:
        probe = probes.setdefault(route.id, LaunchProbe(route.source, spec, DEVICE))
        rows.append(check_candidate(label, probe, point, launches, cache))
    failed = [v for v in launches.values() if v["status"] != "compiled"]
    incomplete = [r for r in rows if r["dry_run"] != "complete"]
    verdict = "fail" if failed else "incomplete" if incomplete else "ok"
    return {**row, "verdict": verdict, "candidates": rows, "launches": list(launches.values()),
            "failures": [f"{v['kernel']}: {'; '.join(v['reasons'])}" for v in failed],
            "spilling": [f"{v['kernel']}: {v['spill_stores_bytes']} B stores, {v['spill_loads_bytes']} B loads"
                         for v in launches.values() if (v.get("spill_stores_bytes") or 0) > 0],
            "seconds": round(time.monotonic() - t0, 1)}


def check_file(candidate: Path, spec: Path, point: dict, cache: ResultCache) -> dict:
    """The report of one candidate file (a ModelNew and its kernels) at one spec's shapes."""
    from agent_client.offline.reads import LaunchProbe

    t0 = time.monotonic()
    launches: dict = {}
    probe = LaunchProbe(candidate.read_text(), spec, DEVICE)
    row = check_candidate(candidate.name, probe, point, launches, cache)
    failed = [v for v in launches.values() if v["status"] != "compiled"]
    verdict = "fail" if failed else "incomplete" if row["dry_run"] != "complete" else "ok"
    return {"problem": str(spec), "verdict": verdict, "candidates": [row], "launches": list(launches.values()),
            "failures": [f"{v['kernel']}: {'; '.join(v['reasons'])}" for v in failed], "spilling": [],
            "seconds": round(time.monotonic() - t0, 1)}


def _plain(value):
    if isinstance(value, (int, float, str, bool, type(None))):
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return repr(value)


# ---- the report -------------------------------------------------------------------------------------------
def table(rows: list[dict]) -> str:
    head = f"{'problem':<52} {'verdict':<10} {'cand':>4} {'stop':>4} {'kern':>4} {'fail':>4} {'spill':>5} " \
           f"{'max regs':>8} {'max smem KB':>11}"
    lines = [head, "-" * len(head)]
    for r in rows:
        ls = r.get("launches", [])
        regs = max((x["registers"] or 0 for x in ls), default=0)
        smem = max((x["shared_bytes"] or 0 for x in ls), default=0)
        lines.append(f"{r['problem'][:52]:<52} {r['verdict']:<10} {len(r.get('candidates', [])):>4} "
                     f"{sum(c['dry_run'] != 'complete' for c in r.get('candidates', [])):>4} {len(ls):>4} "
                     f"{len(r.get('failures', [])):>4} {len(r.get('spilling', [])):>5} {regs:>8} "
                     f"{smem / 1024:>10.1f}{'!' if smem > SHARED_LIMIT_BYTES else ' '}")
    for r in rows:
        for f in r.get("failures", []):
            lines.append(f"FAIL {r['problem']}: {f}"[:220])
        for c in r.get("candidates", []):
            if c["dry_run"] != "complete":
                lines.append(f"STOP ({c['stop_kind']}) {r['problem']}: {c['candidate']}: {c['stopped']}"[:220])
        if r["verdict"] == "no_routes":
            lines.append(f"NO ROUTE {r['problem']}: {r['why']}"[:220])
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("ok", "fail", "incomplete", "no_routes")}
    lines.append("summary: " + ", ".join(f"{v} {n}" for v, n in counts.items()))
    return "\n".join(lines)


def main() -> None:
    os.environ.pop("TRITON_INTERPRET", None)  # before triton is imported: its own helpers must be JIT functions
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", default="", help="folder holding level1/ and level2/")
    ap.add_argument("--problems", nargs="*", default=[], help="LEVEL/STEM names, e.g. 1/23_Softmax")
    ap.add_argument("--sample", nargs="*", default=[], help="files naming problems, one LEVEL/STEM a line")
    ap.add_argument("--specs", nargs="*", default=[], help="spec files checked as problems are (e.g. the "
                    "library's own specs, whose bf16 and TMA paths KernelBench's fp32 problems do not take)")
    ap.add_argument("--points", type=int, default=6, help="search drafts per problem besides each route's default")
    ap.add_argument("--library", default="", help="the library folder (default: corpus/kernels)")
    ap.add_argument("--candidate", default="", help="check this candidate file instead (with --spec)")
    ap.add_argument("--spec", default="", help="the spec whose shapes --candidate is dry-run at")
    ap.add_argument("--point", default="{}", help="with --candidate: TUNABLES values as JSON")
    ap.add_argument("--cache", default=str(DEFAULT_CACHE), help="compiled results by key ('' for none)")
    ap.add_argument("--out", default="", help="write the results here (default benchmarks/results/)")
    args = ap.parse_args()
    import triton

    from benchmarks.common import write_results

    cache = ResultCache(Path(args.cache) if args.cache else None)
    payload = {"target": "cuda sm_90 (H100/H200)", "triton": triton.__version__, "points": args.points,
               "shared_limit_bytes": SHARED_LIMIT_BYTES, "problems": []}
    out = Path(args.out) if args.out else None
    if args.candidate:
        if not (Path(args.candidate).is_file() and Path(args.spec).is_file()):
            raise SystemExit(f"sm90_check: --candidate {args.candidate!r} and --spec {args.spec!r} must be files")
        try:
            point = json.loads(args.point)
        except ValueError as exc:
            raise SystemExit(f"sm90_check: --point is not JSON: {exc}") from None
        payload["problems"].append(check_file(Path(args.candidate), Path(args.spec), point, cache))
    else:
        from agent_client.offline.library import CorpusLibrary
        from benchmarks.bench_kernelbench import read_problems

        if not (args.problems or args.sample or args.specs):
            raise SystemExit("sm90_check: name problems with --problems, --sample or --specs (or --candidate a file)")
        named = []
        if args.problems or args.sample:
            if not (Path(args.kernelbench) / "level1").is_dir():
                raise SystemExit(f"sm90_check: --kernelbench {args.kernelbench!r} has no level1/ folder")
            named = [(f"{level}/{path.stem}", path)
                     for level, path in read_problems(Path(args.kernelbench), [], args.problems, args.sample)]
        for spec in args.specs:
            if not Path(spec).is_file():
                raise SystemExit(f"sm90_check: --specs {spec}: no such file")
            named.append((spec, Path(spec)))
        kb = CorpusLibrary(args.library or None)
        for name, path in named:
            print(f"sm90_check: {name} ...", file=sys.stderr, flush=True)
            row = check_problem(name, path, kb, args.points, cache)
            payload["problems"].append(row)
            print(f"sm90_check: {name}: {row['verdict']} ({row['seconds']} s)", file=sys.stderr, flush=True)
            out = write_results("sm90-check", payload, packages=["torch", "triton"], path=out)
    out = write_results("sm90-check", payload, packages=["torch", "triton"], path=out)
    print(table(payload["problems"]))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
