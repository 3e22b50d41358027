"""KernelBench problems, as published, through the offline mode: does every problem get a passing candidate?

Usage: python benchmarks/bench_kernelbench.py --kernelbench PATH/KernelBench --levels 1 2 --device cpu \
           --max-elements 262144 --max-flops 1e8 --first-pass        # reduced sizes, Triton interpreter
       python3 benchmarks/bench_kernelbench.py --kernelbench PATH/KernelBench --device cuda:0 \
           --problems 1/23_Softmax 2/12_Gemm_Multiply_LeakyReLU --search 8   # published sizes on a GPU

PATH is a local copy of ScalingIntelligence/KernelBench (never committed here; results hold only problem
names and numbers). On the CPU each problem's module-level size constants are scaled down
(harness/scaling.py; what was scaled is recorded per problem) and the default candidate of every route of
the offline provider is judged by the harness. On a GPU, at the published sizes, `--search N` spends N
candidates per problem: each route's default, then the provider's expansions of the best so far; the best
passing candidate's speedups over eager and torch.compile are recorded. Writes
benchmarks/results/kernelbench-<device>-<UTC>.json (resumable with --resume FILE) and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import write_results


class CorpusKernels:
    """The library's kernels read from corpus/kernels/ (for machines without the knowledge base's store)."""

    def __init__(self, root: Path):
        self.root = root
        self._records = None

    def kernels(self, op_family=None, backend=None, **_):
        if self._records is None:
            self._records = self._load()
        return [r for r in self._records if (op_family is None or r.op_family == op_family)
                and (backend is None or r.backend == backend)]

    def _load(self):
        import types

        try:
            import yaml
        except ImportError:  # no PyYAML on this machine: the library routes are skipped
            return []
        out = []
        for folder in sorted(self.root.glob("*/")):
            side, src = folder / "kernel.yaml", folder / "kernel.py"
            if not (side.is_file() and src.is_file()):
                continue
            meta = yaml.safe_load(side.read_text()) or {}
            out.append(types.SimpleNamespace(
                id=f"{folder.name}-{meta.get('name', folder.name)}", name=meta.get("name", folder.name),
                op_family=meta.get("op_family", folder.name), backend=meta.get("backend", "triton"),
                source=src.read_text(), tunables=dict(meta.get("tunables") or {})))
        return out


def _problems(root: Path, levels: list[int], only: list[str]) -> list[tuple[int, Path]]:
    out = []
    for level in levels:
        for path in sorted((root / f"level{level}").glob("*.py"), key=lambda p: int(p.stem.split("_")[0])):
            if only and f"{level}/{path.stem}" not in only:
                continue
            out.append((level, path))
    return out


def _verdict_row(v) -> dict:
    d = v.to_dict()
    return {k: d.get(k) for k in ("status", "latency_ms", "speedup_vs_eager", "speedup_vs_compile",
                                  "fraction_of_limit", "limit_kind")} | {"reasons": [r[:300] for r in d["reasons"][:3]]}


def run_problem(level: int, path: Path, args, pool, work: Path) -> dict:
    from agent_client.offline.provider import OfflineProvider
    from agent_client.proposals import ProposalRequest
    from harness.scaling import scale_spec_source

    row = {"problem": f"{level}/{path.stem}", "level": level}
    source = path.read_text()
    if args.max_elements:
        scaled = scale_spec_source(source, args.max_elements, name=path.name,
                                   max_flops=int(args.max_flops) if args.max_flops else None)
        source = scaled.source
        row["scaled"] = {"factor": scaled.factor, "changes": {k: list(v) if isinstance(v, tuple) else v
                                                               for k, v in scaled.changes.items()},
                         "input_elements": scaled.input_elements, "flops": scaled.flops}
    spec = work / f"l{level}_{path.name}"
    spec.write_text(source)
    provider = OfflineProvider(drafts_per_kernel=1)
    kb = CorpusKernels(Path(args.library))
    t0 = time.monotonic()

    def request(parent=None, n=4):
        return ProposalRequest(spec_path=spec, spec_source=source, backend="triton", accelerator=args.target,
                               prompt="", parent=parent, n=n, kb=kb, device=args.device)

    try:
        routes, why = provider.routes(request())
    except Exception as exc:  # noqa: BLE001 - any failure to build a candidate is that problem's row
        row.update(status="no_candidate", reasons=[f"{type(exc).__name__}: {str(exc)[:400]}"])
        return row
    row["routes"] = [r.id for r in routes]
    row["unserved"] = why
    row["lowering_s"] = round(time.monotonic() - t0, 2)
    if not routes:
        row.update(status="no_candidate", reasons=why)
        return row
    from agent_client.proposals import NodeView

    budget = max(args.search, len(routes)) if args.search else len(routes)
    proposals = provider.propose(request(n=len(routes) if not args.search else min(budget, len(routes) + 1)))
    tried = []
    if args.first_pass:  # one passing route answers the question: the rest are judged only if it fails
        for p in proposals:
            v = pool.evaluate(spec, p.code, "triton")
            tried.append((p, v))
            if v.status.value == "passed":
                break
        proposals = []
    while proposals and len(tried) < budget:
        verdicts = pool.evaluate_many([(spec, p.code, "triton") for p in proposals])
        for p, v in zip(proposals, verdicts):
            tried.append((p, v))
        if len(tried) >= budget or not args.search:
            break
        best = max((t for t in tried if t[1].status.value == "passed"),
                   key=lambda t: t[1].speedup_vs_compile or t[1].speedup_vs_eager or 0, default=None)
        if best is None:
            break
        parent = NodeView(node_id="best", code=best[0].code, verdict={}, tunables=best[0].meta.get("tunables", {}),
                          meta=best[0].meta)
        proposals = provider.propose(request(parent=parent, n=min(4, budget - len(tried))))
    passed = [(p, v) for p, v in tried if v.status.value == "passed"]
    row["candidates"] = len(tried)
    row["passed"] = len(passed)
    row["by_route"] = {}
    for p, v in tried:
        row["by_route"].setdefault(p.meta["route_id"], []).append(_verdict_row(v))
    if passed:
        p, v = max(passed, key=lambda t: t[1].speedup_vs_compile or t[1].speedup_vs_eager or 0)
        row.update(status="passed", best_route=p.meta["route_id"], best=_verdict_row(v),
                   best_tunables=p.meta.get("tunables"))
    else:
        row.update(status=tried[0][1].status.value if tried else "no_candidate",
                   reasons=_verdict_row(tried[0][1])["reasons"] if tried else why)
    row["elapsed_s"] = round(time.monotonic() - t0, 1)
    return row


def summary(rows: list[dict]) -> dict:
    done = [r for r in rows if "status" in r]
    passed = [r for r in done if r["status"] == "passed"]
    out = {"problems": len(done), "passed": len(passed),
           "pass_rate": round(len(passed) / len(done), 4) if done else None}
    comp = [r["best"]["speedup_vs_compile"] for r in passed if r["best"].get("speedup_vs_compile")]
    eager = [r["best"]["speedup_vs_eager"] for r in passed if r["best"].get("speedup_vs_eager")]
    if comp:
        out["geomean_vs_compile"] = round(math.exp(sum(math.log(x) for x in comp) / len(comp)), 4)
        out["min_vs_compile"] = round(min(comp), 4)
        out["fast_p_vs_compile"] = {str(t): round(sum(1 for x in comp if x > t) / len(done), 4)
                                    for t in (0, 1, 1.5, 2)}
    if eager:
        out["geomean_vs_eager"] = round(math.exp(sum(math.log(x) for x in eager) / len(eager)), 4)
    out["failed"] = {r["problem"]: (r.get("reasons") or [""])[0][:300] for r in done if r["status"] != "passed"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", required=True, help="folder holding level1/ and level2/")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--problems", nargs="*", default=[], help="LEVEL/STEM names, e.g. 1/23_Softmax")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--target", default="h200")
    ap.add_argument("--max-elements", type=int, default=0, help="scale sizes to this many input elements")
    ap.add_argument("--max-flops", type=float, default=0, help="and to this many FLOPs per forward")
    ap.add_argument("--search", type=int, default=0, help="candidates per problem (0: each route's default)")
    ap.add_argument("--library", default=str(Path(__file__).resolve().parents[1] / "corpus" / "kernels"))
    ap.add_argument("--timeout", type=float, default=0, help="seconds per candidate (0: the harness default)")
    ap.add_argument("--first-pass", action="store_true",
                    help="judge the routes in turn and stop at the first passing one (no timing on the CPU)")
    ap.add_argument("--resume", default="", help="a results file of an interrupted run to continue")
    ap.add_argument("--out", default="", help="write the results here (default benchmarks/results/)")
    args = ap.parse_args()
    if args.device.startswith("cpu"):
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from harness import EvalConfig, WorkerPool

    cpu = args.device.startswith("cpu")
    overrides = {"timeout_s": args.timeout} if args.timeout else {}
    if cpu and args.first_pass:  # the interpreter's times mean nothing: check correctness only
        overrides.update(time_candidate=False, time_eager_baseline=False)
    config = EvalConfig.for_cpu_tests(**overrides) if cpu else EvalConfig(**overrides)
    rows, done = [], set()
    if args.resume and Path(args.resume).is_file():
        rows = json.loads(Path(args.resume).read_text()).get("problems", [])
        done = {r["problem"] for r in rows}
    out = Path(args.out) if args.out else None
    work = Path(tempfile.mkdtemp(prefix="kkb-kernelbench-"))
    problems = _problems(Path(args.kernelbench), args.levels, args.problems)
    with WorkerPool([args.device], config=config) as pool:
        for level, path in problems:
            if f"{level}/{path.stem}" in done:
                continue
            try:
                row = run_problem(level, path, args, pool, work)
            except Exception as exc:  # noqa: BLE001 - one problem's failure is a row, not the end of the run
                row = {"problem": f"{level}/{path.stem}", "level": level, "status": "error",
                       "reasons": [f"{type(exc).__name__}: {exc}"[:400], traceback.format_exc()[-600:]]}
            rows.append(row)
            best = row.get("best") or {}
            print(f"{row['problem']:60s} {row['status']:14s} "
                  f"eager {best.get('speedup_vs_eager') or '-'} compile {best.get('speedup_vs_compile') or '-'}",
                  flush=True)
            payload = {"device": args.device, "max_elements": args.max_elements, "max_flops": args.max_flops,
                       "search": args.search, "summary": summary(rows), "problems": rows}
            out = write_results(f"kernelbench-{'cpu' if cpu else 'gpu'}", payload,
                                packages=["torch", "triton"], path=out)
    print(json.dumps(summary(rows), indent=1)[:3000])
    print(f"results: {out}")


if __name__ == "__main__":
    main()
