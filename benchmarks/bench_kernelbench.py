"""KernelBench problems, as published, through the offline mode: a passing candidate for each, and how fast.

Usage: python3 benchmarks/bench_kernelbench.py --kernelbench PATH/KernelBench --device cuda:0 --search 4 \
           --sample benchmarks/kernelbench_h200_sample.txt --budget-s 540        # published sizes, one GPU
       python3 benchmarks/bench_kernelbench.py --kernelbench PATH/KernelBench --device cuda:0 --search 8 \
           --problems 1/23_Softmax 2/12_Gemm_Multiply_LeakyReLU
       python3 benchmarks/bench_kernelbench.py ... --resume FILE                  # go on where FILE stopped
       python3 benchmarks/bench_kernelbench.py --kernelbench PATH/KernelBench --levels 1 2 --device cpu \
           --max-elements 262144 --max-flops 1e8 --first-pass                     # reduced sizes, interpreter

PATH is a local copy of ScalingIntelligence/KernelBench (never committed here; results hold only problem
names and numbers). Each problem goes through the offline provider (agent_client/offline), whose library
routes read corpus/kernels through the one bundling function (agent_client/offline/library.py), and is
judged by the harness on the card's nominal peaks (agent_client/card.py).

On a GPU, before anything is timed, a pre-pass in parallel processes builds each problem's routes and warms
the compile caches (torch.compile's baseline and the first candidates, benchmarks/warm.py), sharing the
cache folders with the harness's workers. Then one problem at a time: `--search N` spends N candidates,
each route's default first, then the provider's expansions of the best so far (guided by its fraction of
the hardware limit; the provider stops a search at the limit). `--budget-s` is a deadline: no problem
starts that the time left cannot hold, each problem's search gets a fair share of the time left (what one
leaves goes to the next), a search is cut short rather than overrun, and the results file
(written after every problem) can be continued with --resume. On the CPU each problem's size constants
are scaled down (harness/scaling.py) and each route's default is judged.

Per problem: the route of every candidate, the best, the spread of the passing candidates' latencies
(min, median, max), speedups vs eager and torch.compile with both times, the fraction of the hardware
limit and its kind. Summary: pass count, geometric mean vs torch.compile, count below 0.97x. Writes
benchmarks/results/kernelbench-<card>-<UTC>.json (or --out) and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import write_results
from benchmarks.kernelbench_rows import candidate_row, problem_row, sample_problems, summary, table

DEFAULT_CACHE = Path.home() / ".cache" / "kernelkb" / "compile"
ROUND = 3  # candidates an expansion round asks for: compiled in parallel while the previous one is timed


class Deadline(Exception):
    """The run's --budget-s ran out while a candidate was being judged."""


class ProblemCut(Exception):
    """One problem's candidates took far more than its share: the run goes on without waiting for them."""


def read_problems(root: Path, levels: list[int], only: list[str], samples: list[str]) -> list[tuple]:
    """(level, path) of the problems named (LEVEL/STEM, in --problems or sample files), else of the levels."""
    names = list(only)
    for sample in samples:
        names += sample_problems(Path(sample))
    if names:
        out = []
        for name in dict.fromkeys(names):
            level, _, stem = name.partition("/")
            path = root / f"level{level}" / f"{stem}.py"
            if not path.is_file():
                raise SystemExit(f"bench_kernelbench: problem {name!r}: {path} does not exist")
            out.append((int(level), path))
        return out
    out = []
    for level in levels:
        found = sorted((root / f"level{level}").glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
        out += [(level, p) for p in found]
    return out


def write_spec(level: int, path: Path, args, work: Path) -> tuple[Path, dict | None]:
    """The problem's spec file in `work` (sizes scaled with --max-elements) and what scaling changed."""
    source, scaled = path.read_text(), None
    if args.max_elements:
        from harness.scaling import scale_spec_source

        result = scale_spec_source(source, args.max_elements, name=path.name,
                                   max_flops=int(args.max_flops) if args.max_flops else None)
        source = result.source
        scaled = {"factor": result.factor, "input_elements": result.input_elements, "flops": result.flops,
                  "changes": {k: list(v) if isinstance(v, tuple) else v for k, v in result.changes.items()}}
    spec = work / f"l{level}_{path.name}"
    spec.write_text(source)
    return spec, scaled


def _request(spec: Path, args, kb, parent=None, history=(), n: int = 1):
    from agent_client.proposals import ProposalRequest

    return ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", prompt="",
                           accelerator=args.target, parent=parent, n=n, kb=kb, device=args.device,
                           history=list(history))


def prepare(spec: str, args, warm: bool) -> dict:
    """In a pre-pass process: the problem's routes, and (warm) its first candidates and baseline compiled."""
    if args.device.startswith("cpu"):
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from agent_client.offline.library import CorpusLibrary
    from agent_client.offline.provider import OfflineProvider

    t0 = time.monotonic()
    provider, kb = OfflineProvider(), CorpusLibrary(args.library)
    try:
        routes, why = provider.routes(_request(Path(spec), args, kb))
    except Exception as exc:  # noqa: BLE001 - the timed pass records it
        return {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    out = {"routes": routes, "why": why, "routes_s": round(time.monotonic() - t0, 2)}
    if warm and routes:
        from benchmarks.warm import warm_spec

        drafts = provider.propose(_request(Path(spec), args, kb, n=first_round(args, routes)))
        # on the CPU (a check of this script) there is nothing to warm but the candidates' first calls
        out["warm"] = warm_spec(spec, [p.code for p in drafts], args.device,
                                compile_baseline=not args.device.startswith("cpu"))
    return out


def first_round(args, routes: list) -> int:
    return min(args.search, len(routes)) if args.search else len(routes)


def prepass(specs: dict[str, Path], args, deadline: float) -> dict[str, dict]:
    """Routes and warm caches of every problem, in parallel processes, within the device's memory."""
    from benchmarks.warm import WarmPool, free_bytes
    from harness import EvalConfig, load_spec
    from harness.memory import estimate_footprint

    free = free_bytes(args.device)
    t0, results = time.monotonic(), {}
    print(f"[pre-pass] {len(specs)} problems on {args.warm_workers} processes, "
          f"{free / 2**30:.0f} GiB free", flush=True)
    with WarmPool(args.warm_workers, int(0.85 * free)) as pool:
        futures = {}
        for name, spec in specs.items():
            try:
                need = estimate_footprint(load_spec(spec), EvalConfig(), args.device).compile_bytes
            except Exception:  # noqa: BLE001 - a spec the meta device cannot run: alone on the device
                need = free
            futures[name] = pool.submit(need, prepare, str(spec), args, True)
        for name, fut in futures.items():
            try:
                left = deadline - time.monotonic()
                results[name] = fut.result(timeout=max(0.0, left) if left != float("inf") else None)
            except FutureTimeout:
                print(f"[pre-pass] time's up after {time.monotonic() - t0:.0f} s: the rest compile when "
                      "timed", flush=True)
                break
            except Exception as exc:  # noqa: BLE001 - a crashed warm-up: the timed pass builds its routes
                results[name] = {"crashed": f"{type(exc).__name__}: {str(exc)[:300]}"}
            warm = results[name].get("warm") or {}
            got = results[name]
            said = got.get("crashed") or got.get("error") or "; ".join(warm.get("errors", []))
            print(f"[pre-pass] {name}: {len(results[name].get('routes') or [])} routes, warm "
                  f"{warm.get('seconds', '-')} s {said[:200]}", flush=True)
    print(f"[pre-pass] done in {time.monotonic() - t0:.0f} s", flush=True)
    return results


def judge(pool, spec: Path, proposals: list, deadline: float | None, cap: float | None = None) -> list:
    """Verdicts of `proposals`; Deadline at the run's deadline, ProblemCut at the problem's `cap` (monotonic
    seconds) when that comes first."""
    futures = [pool.submit(spec, p.code, "triton") for p in proposals]
    until = min((t for t in (deadline, cap) if t is not None), default=None)
    out = []
    for fut in futures:
        try:
            out.append(fut.result(timeout=None if until is None else max(0.0, until - time.monotonic())))
        except FutureTimeout as exc:
            raise (ProblemCut if until == cap and cap != deadline else Deadline) from exc
    return out


def search_problem(name: str, spec: Path, args, pool, ready: dict | None, deadline: float | None,
                   per_candidate_s: float, share_s: float | None = None) -> dict:
    """One problem's candidates through the harness: drafts, then expansions of the best (see the top)."""
    from agent_client.offline.library import CorpusLibrary
    from agent_client.offline.provider import OfflineProvider
    from agent_client.proposals import NodeView

    provider, kb, t0 = OfflineProvider(), CorpusLibrary(args.library), time.monotonic()
    if ready and "routes" in ready:
        provider.set_routes(_request(spec, args, kb), ready["routes"], ready["why"])
    elif ready and "error" in ready:
        return {"status": "no_candidate", "reasons": [ready["error"]]}
    try:
        routes, why = provider.routes(_request(spec, args, kb))
    except Exception as exc:  # noqa: BLE001 - any failure to build a candidate is that problem's row
        return {"status": "no_candidate", "reasons": [f"{type(exc).__name__}: {str(exc)[:400]}"]}
    info = {"routes": [r.id for r in routes], "unserved": why, "routes_s": (ready or {}).get("routes_s")}
    if not routes:
        return {**info, "status": "no_candidate", "reasons": why}
    budget = max(args.search, 1) if args.search else len(routes)
    # a problem far beyond its share (a profile or a candidate that takes minutes) is left, not waited for
    cap = None if share_s is None else t0 + max(4 * share_s, 120.0)
    tried: list = []  # (node view, proposal, verdict)
    proposals = provider.propose(_request(spec, args, kb, n=first_round(args, routes)))
    stop = ""
    while proposals:
        try:
            if args.first_pass:  # one passing route answers the question: the rest only if it fails
                verdicts = []
                for p in proposals:
                    verdicts += judge(pool, spec, [p], deadline, cap)
                    if verdicts[-1].status.value == "passed":
                        break
            else:
                verdicts = judge(pool, spec, proposals, deadline, cap)
        except ProblemCut:
            stop = f"cut at {cap - t0:.0f} s, four times its share: the harness's workers were restarted"
            done = problem_row([candidate_row(*t) for t in tried]) if tried else {"status": "timeout",
                                                                                  "reasons": [stop]}
            return {**info, **done, "search_stop": stop, "pool_stuck": True,
                    "elapsed_s": round(time.monotonic() - t0, 1)}
        for p, v in zip(proposals, verdicts):
            d = v.to_dict()
            fit = (d.get("speedup_vs_compile") or d.get("speedup_vs_eager") or 0.0) if v.passed else 0.0
            node = NodeView(f"c{len(tried) + 1}", p.code, d, p.meta.get("tunables", {}), p.meta, fit)
            tried.append((node, p, v))
        if len(tried) >= budget or not args.search or args.first_pass:
            stop = "each route's default judged" if not args.search else f"--search {args.search} spent"
            break
        left = None if deadline is None else deadline - time.monotonic()
        n = min(ROUND, budget - len(tried))
        if left is not None and left < n * per_candidate_s + 10:
            stop = "the run's --budget-s: no time for another round"
            break
        if share_s is not None and time.monotonic() - t0 + n * per_candidate_s > share_s:
            stop = f"its share of --budget-s ({share_s:.0f} s) spent"
            break
        history = sorted((t[0] for t in tried), key=lambda x: -x.fitness)
        parent = history[0] if history[0].fitness > 0 else None  # nothing passed: more drafts instead
        proposals = provider.propose(_request(spec, args, kb, parent, history, n))
        stop = provider.stop_note if not proposals else ""
    return {**info, **problem_row([candidate_row(*t) for t in tried]), "search_stop": stop,
            "elapsed_s": round(time.monotonic() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", required=True, help="folder holding level1/ and level2/")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--problems", nargs="*", default=[], help="LEVEL/STEM names, e.g. 1/23_Softmax")
    ap.add_argument("--sample", nargs="*", default=[], help="files naming problems, one LEVEL/STEM a line")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--target", default="h100", help="accelerator id for the provider's requests")
    ap.add_argument("--max-elements", type=int, default=0, help="scale sizes to this many input elements")
    ap.add_argument("--max-flops", type=float, default=0, help="and to this many FLOPs per forward")
    ap.add_argument("--search", type=int, default=0, help="candidates per problem (0: each route's default)")
    ap.add_argument("--library", default="", help="the library folder (default: corpus/kernels)")
    ap.add_argument("--timeout", type=float, default=0, help="seconds per candidate (0: the harness default)")
    ap.add_argument("--trials", type=int, default=0, help="correctness trials a variant (0: harness default)")
    ap.add_argument("--max-timing-s", type=float, default=0, help="time cap of one timing loop (0: default)")
    ap.add_argument("--first-pass", action="store_true",
                    help="judge the routes in turn and stop at the first passing one (no timing on the CPU)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop cleanly by these seconds (0: no limit)")
    ap.add_argument("--no-fair-share", action="store_true",
                    help="with --budget-s, each problem searches to --search N (the rest wait for --resume)")
    ap.add_argument("--warm-workers", type=int, default=None,
                    help="pre-pass processes (default 12 on a GPU, none on the CPU; 0: no pre-pass)")
    ap.add_argument("--warm-share", type=float, default=0.35, help="share of --budget-s for the pre-pass")
    ap.add_argument("--compile-workers", type=int, default=2, help="harness processes compiling ahead (GPU)")
    ap.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="the Inductor and Triton caches (shared)")
    ap.add_argument("--resume", default="", help="a results file of a run cut short: go on (and rewrite it)")
    ap.add_argument("--out", default="", help="write the results to this file")
    ap.add_argument("--out-dir", default="", help="or to kernelbench-<card>-<UTC>.json in this folder "
                    "(default benchmarks/results/; with --resume alone, the resumed file is rewritten)")
    args = ap.parse_args()
    t0 = time.monotonic()
    deadline = t0 + args.budget_s if args.budget_s else None
    cpu = args.device.startswith("cpu")
    if cpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from benchmarks.warm import share_compile_caches

    caches = share_compile_caches(Path(args.cache_dir))  # before any process starts: they all inherit it
    from agent_client.card import card_peaks
    from harness import EvalConfig, HardwarePeaks, WorkerPool
    from harness.baselines import BaselineCache

    card = card_peaks(args.device)
    peaks = HardwarePeaks.from_dict(card.hardware_peaks()) if not cpu else None
    overrides = {k: v for k, v in (("timeout_s", args.timeout), ("trials", args.trials),
                                   ("max_timing_s", args.max_timing_s)) if v}
    if cpu and args.first_pass:  # the interpreter's times mean nothing: check correctness only
        overrides.update(time_candidate=False, time_eager_baseline=False)
    config = EvalConfig.for_cpu_tests(**overrides) if cpu else EvalConfig(**overrides)
    rows: list[dict] = []
    out = Path(args.out) if args.out else None
    if args.resume:
        if not Path(args.resume).is_file():
            raise SystemExit(f"bench_kernelbench: --resume {args.resume}: no such file")
        rows = [r for r in json.loads(Path(args.resume).read_text()).get("problems", []) if "status" in r]
        out = out or (None if args.out_dir else Path(args.resume))
    done = {r["problem"] for r in rows}
    named = read_problems(Path(args.kernelbench), args.levels, args.problems, args.sample)
    problems = [(lv, p) for lv, p in named if f"{lv}/{p.stem}" not in done]
    work = Path(tempfile.mkdtemp(prefix="kkb-kernelbench-"))
    specs, scaled = {}, {}
    for level, path in problems:
        specs[f"{level}/{path.stem}"], scaled[f"{level}/{path.stem}"] = write_spec(level, path, args, work)
    ready: dict[str, dict] = {}
    t_prepass = time.monotonic()
    if args.warm_workers is None:
        args.warm_workers = 0 if cpu else 12
    if args.warm_workers > 0 and specs:
        share = args.warm_share * args.budget_s if args.budget_s else float("inf")
        ready = prepass(specs, args, time.monotonic() + share)
    payload = {"device": args.device, "peaks": peaks.to_dict() if peaks else None, "search": args.search,
               "max_elements": args.max_elements, "max_flops": args.max_flops, "budget_s": args.budget_s,
               "caches": caches, "config": config.to_dict(),
               "prepass_s": round(time.monotonic() - t_prepass, 1)}
    per_candidate_s, cut = 10.0, []  # a first guess of a candidate's seconds, then the run's own average

    def save() -> Path:
        data = {**payload, "summary": summary(rows, not_reached=cut), "problems": rows,
                "elapsed_s": round(time.monotonic() - t0, 1),
                # spec baselines found in the harness's cache (an earlier run's) against those measured now
                "baselines": {"cached": baselines.hits, "measured": baselines.measured}}
        return write_results("kernelbench", data, packages=["torch", "triton"], path=out, card=card,
                             folder=Path(args.out_dir) if args.out_dir else None)

    compile_workers = 0 if cpu else args.compile_workers

    baselines = BaselineCache()  # one for the run, whatever pools judge it (on disk: shared with earlier runs)

    def new_pool() -> WorkerPool:
        return WorkerPool([args.device], config=config, peaks=peaks, compile_workers=compile_workers,
                          baselines=baselines)

    pool = new_pool()
    stopped = False
    try:
        for i, (name, spec) in enumerate(specs.items()):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left < per_candidate_s * 2 + 10:
                cut = list(specs)[i:]
                print(f"[bench] --budget-s: {len(cut)} problems not started (--resume {out})", flush=True)
                break
            level = int(name.split("/")[0])
            row = {"problem": name, "level": level}
            if scaled[name]:
                row["scaled"] = scaled[name]
            if (ready.get(name) or {}).get("warm"):
                row["warm"] = ready[name]["warm"]  # the pre-pass's seconds and what failed there
            try:
                # a fair share of the time left, so that a sample ends within --budget-s: what a problem
                # leaves unspent goes to the ones after it
                share = None if left is None or args.no_fair_share else (left - 10) / (len(specs) - i)
                row["share_s"] = None if share is None else round(share, 1)
                row.update(search_problem(name, spec, args, pool, ready.get(name), deadline, per_candidate_s,
                                          share))
            except Deadline:
                cut = list(specs)[i:]
                print(f"[bench] --budget-s ran out in {name}: stopped, {len(cut)} problems left", flush=True)
                pool.terminate()
                stopped = True
                break
            except Exception as exc:  # noqa: BLE001 - one problem's failure is a row, not the end of the run
                row.update(status="error", reasons=[f"{type(exc).__name__}: {exc}"[:400],
                                                    traceback.format_exc()[-600:]])
            if row.pop("pool_stuck", False):  # its evaluations still run: stop them, go on with fresh workers
                pool.terminate()
                pool = new_pool()
            rows.append(row)
            n = len(row.get("candidates") or [])
            if n and row.get("elapsed_s"):
                per_candidate_s = 0.5 * per_candidate_s + 0.5 * row["elapsed_s"] / n
            best = row.get("best") or {}
            print(f"[bench] {name:58s} {row['status']:13s} {best.get('route', '-'):32s} "
                  f"x compile {_fmt(best.get('speedup_vs_compile'))} ({n} candidates, "
                  f"{row.get('elapsed_s', '-')} s, {time.monotonic() - t0:.0f} s in all)", flush=True)
            out = save()
    finally:
        if not stopped:
            pool.close()
    out = save()
    print(json.dumps(summary(rows, not_reached=cut), indent=1)[:3000])
    print(f"results: {out}")
    print(table(rows))


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


if __name__ == "__main__":
    main()
