"""The value of retrieval: the same tuning sessions with and without passages and library kernels.

Usage: python benchmarks/bench_retrieval_value.py [--specs examples/specs/rmsnorm_cpu.py ...] [--budget 4]
           [--device cpu] [--provider replay|anthropic|openai] [--home DIR]

1. A knowledge base: `--home` when it holds the ingested corpus, else the corpus ingested into a
   temporary store.
2. Per spec, with `--provider replay` (the default, no model needed): one recording session with the
   offline provider, then two replays of it, retrieval on and `--no-retrieval`. A replay answers each
   request with the recorded candidates whatever the prompt, so both arms judge the same code: what the
   replay measures is what the prompts carried (tokens, passages, kernel code, sources), and that the
   switch runs end to end. With a model-backed provider the two arms are independent sessions, and their
   outcomes (passed, best speedup) are the value of the knowledge base.
3. Writes benchmarks/results/retrieval_value-<UTC>.json through benchmarks/common.py (machine, versions,
   date, command) with, per spec and arm: candidates, passed, best fitness, and per prompt the tokens,
   passages and library-kernel excerpts, and the distinct sources used; a table is printed last.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_results

DEFAULT_SPECS = ["examples/specs/rmsnorm_cpu.py", "examples/specs/row_softmax.py"]
FAST_CPU_EVAL = {"trials": 1, "min_reps": 1, "max_reps": 3, "warmup": 0, "max_timing_s": 0.5}


def _session(spec: Path, settings, kb, session_id: str, args, **fields) -> dict:
    from rich.console import Console

    from agent_client.runner import new_config, run_session
    from agent_client.session.store import SessionStore
    from kb_server.tokens import count_tokens

    eval_overrides = FAST_CPU_EVAL if args.device == "cpu" else {}
    config = new_config(spec, settings, session_id=session_id, target=args.target, backend="triton",
                        budget=args.budget, device=args.device, drafts=min(2, args.budget), proposals_per_step=1,
                        write_back=False, eval_overrides=eval_overrides, command=" ".join(sys.argv), **fields)
    t0 = time.monotonic()
    result = run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=True)
    store = SessionStore.open(settings.sessions_dir / session_id)
    requests, nodes = store.requests(), store.nodes()
    store.close()
    sources = {s for r in requests for name in ("passages", "example_kernels") for s in r["sources"].get(name, [])}
    per_prompt = lambda f: round(statistics.fmean(f(r) for r in requests), 2) if requests else None
    return {
        "session_id": session_id, "retrieval": config.retrieval, "candidates": result.nodes,
        "passed": sum(n.outcome == "passed" for n in nodes), "best_fitness": result.best_fitness,
        "fitness_basis": result.fitness_basis, "stop_reason": result.stop_reason,
        "prompts": len(requests), "prompt_tokens_mean": per_prompt(lambda r: count_tokens(r["prompt"])),
        "passages_per_prompt": per_prompt(lambda r: len(r["sources"].get("passages", []))),
        "prompts_with_kernel_code": sum(bool(r["sources"].get("example_kernels")) for r in requests),
        "distinct_sources": sorted(sources), "elapsed_s": round(time.monotonic() - t0, 1),
        "candidate_codes": [n.code for n in nodes],
    }


def run_spec(spec: Path, settings, kb, args) -> dict:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out: dict = {"spec": str(spec.relative_to(ROOT) if spec.is_relative_to(ROOT) else spec)}
    provider_fields: dict = {"provider": args.provider}
    if args.provider == "replay":
        recording = f"value-{spec.stem}-{stamp}-recording"
        out["recording"] = _session(spec, settings, kb, recording, args, provider="offline")
        provider_fields["provider_options"] = {"source": recording}
    for arm, on in (("with_retrieval", True), ("without_retrieval", False)):
        out[arm] = _session(spec, settings, kb, f"value-{spec.stem}-{stamp}-{arm}", args, retrieval=on,
                            **provider_fields)
    same = out["with_retrieval"]["candidate_codes"] == out["without_retrieval"]["candidate_codes"]
    out["same_candidates_in_both_arms"] = same
    for key in ("recording", "with_retrieval", "without_retrieval"):
        out.get(key, {}).pop("candidate_codes", None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specs", nargs="+", default=DEFAULT_SPECS)
    parser.add_argument("--budget", type=int, default=4, help="candidates per session")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--target", default="h200")
    parser.add_argument("--provider", default="replay", choices=["replay", "anthropic", "openai"])
    parser.add_argument("--home", type=Path, help="KKB_HOME holding the ingested corpus (default: a fresh one)")
    args = parser.parse_args()

    from agent_client.config import ClientSettings
    from agent_client.kb import LocalKB
    from ingest.pipeline import ingest_paths
    from kb_server.config import KBSettings
    from kb_server.store import Store

    with tempfile.TemporaryDirectory(prefix="kkb-value-") as tmp:
        home = args.home or Path(tmp)
        store = Store(KBSettings(home=home))
        if args.home is None:
            ingest_paths(store, [ROOT / "corpus"])
        settings = ClientSettings(home=home)
        kb = LocalKB(store)
        results = [run_spec((ROOT / s).resolve() if not Path(s).is_absolute() else Path(s), settings, kb, args)
                   for s in args.specs]
        stats = store.stats()
    payload = {"provider": args.provider, "budget": args.budget, "device": args.device, "target": args.target,
               "store": {"documents": stats["documents"], "chunks": stats["chunks"], "kernels": stats["kernels"]},
               "specs": results}
    path = write_results("retrieval_value", payload, packages=["torch", "triton", "chromadb", "sentence-transformers"])
    print(f"{'spec':<28} {'arm':<18} {'passed':>6} {'best':>7} {'tokens':>7} {'passages':>8} {'kernel':>6}")
    for r in results:
        for arm in ("with_retrieval", "without_retrieval"):
            a = r[arm]
            print(f"{Path(r['spec']).stem:<28} {arm:<18} {a['passed']:>3}/{a['candidates']:<2} "
                  f"{a['best_fitness']:>7.3g} {a['prompt_tokens_mean'] or 0:>7.0f} {a['passages_per_prompt'] or 0:>8.1f} "
                  f"{a['prompts_with_kernel_code']:>3}/{a['prompts']:<2}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
