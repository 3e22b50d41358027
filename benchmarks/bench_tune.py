"""Offline tuning sessions on several specs: best speedups, candidates evaluated, time to best.

Usage: python3 benchmarks/bench_tune.py --device cuda:0 --budget 10 --time-budget 70 \
           --specs examples/specs/row_softmax.py examples/specs/layernorm.py ...
       KKB_HOME=/tmp/kkb python3 benchmarks/bench_tune.py --device cpu --budget 2 --specs examples/specs/row_softmax.py

Each spec gets one `kkb tune` session (provider offline, the embedded knowledge base under KKB_HOME,
which must hold the ingested corpus: `kkb ingest corpus`). Writes benchmarks/results/tune-<UTC>.json
with, per spec, the best node's speedup vs eager and vs torch.compile, the best speedup vs eager of
any correct node, candidates evaluated, time to best, and prints a table last.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import write_results

DEFAULT_SPECS = ["row_softmax", "layernorm", "rmsnorm", "swish_gate", "matmul_relu"]


def run_spec(spec: Path, args, settings) -> dict:
    from rich.console import Console

    from agent_client.runner import new_config, run_session
    from agent_client.session.store import SessionStore

    session_id = f"tune-{spec.stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    config = new_config(spec, settings, session_id=session_id, target=args.target, backend="triton",
                        budget=args.budget, time_budget_s=args.time_budget, device=args.device, provider="offline",
                        policy=args.policy, drafts=args.drafts, proposals_per_step=2,
                        command=" ".join(sys.argv))
    log = io.StringIO()
    t0 = time.monotonic()
    result = run_session(config, settings, console=Console(file=log, width=120), live=False, report=True)
    store = SessionStore.open(settings.sessions_dir / session_id)
    nodes = store.nodes()
    store.close()
    passed = [n for n in nodes if n.outcome == "passed"]
    eager = [n.verdict.get("speedup_vs_eager") for n in passed if n.verdict.get("speedup_vs_eager") is not None]
    return {
        "spec": spec.stem, "session_id": session_id, "stop_reason": result.stop_reason,
        "candidates": result.nodes, "evaluated": result.evaluated, "passed": len(passed),
        "failures": result.failures, "best_node_id": result.best_node_id, "fitness_basis": result.fitness_basis,
        "best_speedup_vs_compile": result.best_speedup_vs_compile,
        "best_speedup_vs_eager": result.best_speedup_vs_eager,  # of the best node (chosen by fitness)
        "max_speedup_vs_eager": max(eager) if eager else None,  # of any correct node
        "time_to_best_s": result.time_to_best_s, "elapsed_s": round(time.monotonic() - t0, 1),
        "written_kernels": result.written_kernels, "log_tail": log.getvalue().splitlines()[-6:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="*", type=Path,
                        default=[Path("examples/specs") / f"{s}.py" for s in DEFAULT_SPECS])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--target", default="h200")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--time-budget", type=float, default=70.0)
    parser.add_argument("--drafts", type=int, default=4)
    parser.add_argument("--policy", default="greedy")
    parser.add_argument("--total-budget", type=float, default=480.0,
                        help="seconds for all specs: a spec is skipped when less than its time budget is left")
    args = parser.parse_args()
    start = time.monotonic()

    from agent_client.config import ClientSettings

    settings = ClientSettings()
    rows = []
    for spec in args.specs:
        left = args.total_budget - (time.monotonic() - start)
        if left < args.time_budget + 30:  # a session overruns its budget while in-flight candidates finish
            rows.append({"spec": spec.stem, "error": f"skipped: {left:.0f} s of the total budget left"})
            continue
        try:
            rows.append(run_spec(spec, args, settings))
        except Exception as exc:  # noqa: BLE001 - one spec's failure must not lose the others' results
            rows.append({"spec": spec.stem, "error": f"{type(exc).__name__}: {exc}",
                         "traceback": traceback.format_exc()[-2000:]})
        print(f"{spec.stem}: {rows[-1].get('error') or rows[-1]['stop_reason']}", flush=True)
    path = write_results("tune", {"device": args.device, "target": args.target, "budget": args.budget,
                                  "time_budget_s": args.time_budget, "specs": rows},
                         packages=["torch", "triton", "numpy"])
    print(f"results: {path}")
    print(f"{'spec':<14}{'best/compile':>13}{'best/eager':>11}{'max/eager':>10}{'evaluated':>10}"
          f"{'passed':>7}{'to best s':>10}  stop")
    for r in rows:
        if "error" in r:
            print(f"{r['spec']:<14} error: {r['error'][:90]}")
            continue
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        print(f"{r['spec']:<14}{fmt(r['best_speedup_vs_compile']):>13}{fmt(r['best_speedup_vs_eager']):>11}"
              f"{fmt(r['max_speedup_vs_eager']):>10}{r['evaluated']:>10}{r['passed']:>7}"
              f"{fmt(r['time_to_best_s']):>10}  {r['stop_reason']}")


if __name__ == "__main__":
    main()
