"""Retrieval quality of the knowledge base: recall@5 and MRR for dense, lexical (BM25) and hybrid search.

Usage: .venv/bin/python benchmarks/bench_retrieval.py [--questions benchmarks/retrieval_questions.yaml]
       [--k 5] [--depth 20] [--corpus corpus] [--merge]

1. Loads the questions: a YAML list of {question, documents}; `documents` are repo-relative paths, any of
   which holds the answer. `--merge` first writes retrieval_questions.yaml from the per-area files
   (retrieval_questions_nvidia.yaml and retrieval_questions_amd_mtia.yaml).
2. Ingests the whole corpus into a fresh temporary store (real chromadb, real embeddings, real BM25)
   through ingest.pipeline.ingest_paths, so nothing is shared with a user's store.
3. For every question and mode, asks Store.search for `--depth` chunks, dedupes them by document in rank
   order, and scores: a question is a hit at k when an expected document is among the first k distinct
   documents; its reciprocal rank is 1/rank of the first expected document (0 when none appears).
   Chunk-level recall@k (an expected document among the first k chunks, before dedupe) is reported too.
Writes benchmarks/results/retrieval-<UTC time>.json through benchmarks/common.py (machine, versions, date,
command, per-mode metrics and latency quantiles, the questions each mode missed) and prints a short table
last. CPU only; no GPU needed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import quantiles_ms, write_results

MODES = ("lexical", "dense", "hybrid")  # dense not first: right after ingest the store is still busy
PART_FILES = ("retrieval_questions_nvidia.yaml", "retrieval_questions_amd_mtia.yaml")


@dataclass(frozen=True)
class Question:
    text: str
    documents: tuple[str, ...]  # repo-relative paths; any one answers the question


def load_questions(path: Path) -> list[Question]:
    """The questions of one YAML file; errors name the file and the item."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise TypeError(f"{path}: expected a YAML list of {{question, documents}}")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or set(item) != {"question", "documents"}:
            raise ValueError(f"{path}: item {i} must have exactly the keys question and documents")
        docs = tuple(str(d) for d in item["documents"])
        missing = [d for d in docs if not (ROOT / d).is_file()]
        if not str(item["question"]).strip() or not docs or missing:
            raise ValueError(f"{path}: item {i} is empty or names missing documents {missing}")
        out.append(Question(str(item["question"]).strip(), docs))
    return out


def merge_question_files(bench_dir: Path, target: Path) -> int:
    """Merge the per-area question files into `target`; returns the number of questions.

    A question asked in more than one file appears once, with the union of the answer documents: an
    area file may name its own documents as further answers to another area's question.
    """
    lines = ["# Merged retrieval questions: written by benchmarks/bench_retrieval.py --merge from",
             "# " + " and ".join(PART_FILES) + ". Edit those files, not this one.",
             "# A question present in both files is listed once with the union of its documents."]
    merged: dict[str, list[str]] = {}
    for name in PART_FILES:
        for q in load_questions(bench_dir / name):
            docs = merged.setdefault(q.text, [])
            docs += [d for d in q.documents if d not in docs]
    items = [{"question": text, "documents": docs} for text, docs in merged.items()]
    target.write_text("\n".join(lines) + "\n" + yaml.safe_dump(items, sort_keys=False, width=120), encoding="utf-8")
    return len(items)


def _doc_key(source: str, corpus: Path) -> str:
    """A chunk's source as a repo-style path (`corpus/docs/...`), the form the question files use.

    Sources are relative to the ingest's working directory or absolute; a corpus outside the repo is
    keyed relative to its parent, so `--corpus /elsewhere/corpus` still matches `corpus/...` paths.
    """
    path = Path(source)
    path = (path if path.is_absolute() else Path.cwd() / path).resolve()
    for base in (ROOT, corpus.parent):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return source


def score(ranked_docs: list[str], ranked_chunk_docs: list[str], expected: tuple[str, ...], k: int) -> dict:
    """Hit@k over distinct documents, hit@k over raw chunks, and the reciprocal rank (distinct documents)."""
    want = set(expected)
    rank = next((i + 1 for i, d in enumerate(ranked_docs) if d in want), None)
    return {"hit": rank is not None and rank <= k, "chunk_hit": any(d in want for d in ranked_chunk_docs[:k]),
            "rr": 1.0 / rank if rank else 0.0, "rank": rank}


def run(questions: list[Question], corpus: Path, k: int, depth: int) -> dict:
    from ingest.pipeline import ingest_paths
    from kb_server.config import KBSettings
    from kb_server.store import Store

    with tempfile.TemporaryDirectory(prefix="kkb-retrieval-") as tmp:
        settings = KBSettings(home=Path(tmp), corpus_dir=corpus)
        store = Store(settings)
        t0 = time.perf_counter()
        report = ingest_paths(store, [corpus])
        ingest_s = time.perf_counter() - t0
        stats = store.stats()
        results: dict = {"ingest": {"seconds": round(ingest_s, 2), "documents": stats["documents"],
                                    "chunks": stats["chunks"], "skipped": report.skipped},
                         "settings": {k: getattr(settings, k) for k in ("chunk_max_tokens", "chunk_overlap_tokens",
                                                                        "candidates_per_retriever", "rrf_k")},
                         "modes": {}}
        for mode in MODES:
            store.search(questions[0].text, k=depth, mode=mode)  # warm-up: first query loads indexes
            per_q, lat_s = [], []
            for q in questions:
                t0 = time.perf_counter()
                hits = store.search(q.text, k=depth, mode=mode)
                lat_s.append(time.perf_counter() - t0)
                chunk_docs = [_doc_key(h.chunk.source, corpus) for h in hits]
                docs = list(dict.fromkeys(chunk_docs))  # dedupe, keeping rank order
                per_q.append({"question": q.text, **score(docs, chunk_docs, q.documents, k), "top": docs[:k]})
            n = len(per_q)
            results["modes"][mode] = {
                f"recall@{k}": round(sum(r["hit"] for r in per_q) / n, 4),
                f"chunk_recall@{k}": round(sum(r["chunk_hit"] for r in per_q) / n, 4),
                "mrr": round(sum(r["rr"] for r in per_q) / n, 4),
                "latency": quantiles_ms(lat_s),
                "misses": [{"question": r["question"], "rank": r["rank"], "top": r["top"]}
                           for r in per_q if not r["hit"]],
            }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=ROOT / "benchmarks" / "retrieval_questions.yaml")
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus")
    parser.add_argument("--k", type=int, default=5, help="cut-off for recall (distinct documents)")
    parser.add_argument("--depth", type=int, default=20, help="chunks requested per search before dedupe")
    parser.add_argument("--merge", action="store_true", help="first write --questions from the per-area files")
    args = parser.parse_args()
    if args.merge:
        n = merge_question_files(ROOT / "benchmarks", args.questions)
        print(f"merged {n} questions into {args.questions}")
    if not args.questions.is_file():
        parser.error(f"{args.questions} does not exist; run with --merge or pass --questions")
    questions = load_questions(args.questions)
    results = run(questions, args.corpus.resolve(), args.k, max(args.depth, args.k))
    report = {
        "questions_file": str(args.questions.relative_to(ROOT) if args.questions.is_relative_to(ROOT)
                              else args.questions),
        "n_questions": len(questions), "k": args.k, "depth": args.depth, **results,
    }
    path = write_results("retrieval", report, packages=["chromadb", "sentence-transformers", "bm25s", "torch"])
    _print_summary(report, path)
    return 0


def _print_summary(report: dict, path: Path) -> None:
    k = report["k"]
    ing = report["ingest"]
    print(f"{report['n_questions']} questions; corpus: {ing['documents']} documents, {ing['chunks']} chunks, "
          f"ingested in {ing['seconds']} s")
    print(f"{'mode':<8} {'recall@' + str(k):>9} {'chunk_r@' + str(k):>10} {'MRR':>6} {'p50 ms':>7} {'misses':>7}")
    for mode, m in report["modes"].items():
        print(f"{mode:<8} {m[f'recall@{k}']:>9.3f} {m[f'chunk_recall@{k}']:>10.3f} {m['mrr']:>6.3f} "
              f"{m['latency']['p50_ms']:>7.1f} {len(m['misses']):>7}")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
