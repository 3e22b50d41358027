"""Quality gate: recall@5 of hybrid search over the real, freshly ingested corpus on the committed question
sets. The numbers of record come from `python benchmarks/bench_retrieval.py` (benchmarks/results/
retrieval-*.json: hybrid recall@5 1.000 on the 154 merged questions); this test fails the build when a
change to chunking, embeddings, BM25, fusion or the corpus loses answers.

Scored as the benchmark scores (its own functions): a question is a hit when one of its documents is among
the first 5 distinct documents of a depth-20 search.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_retrieval import _doc_key, load_questions, score

REPO = Path(__file__).resolve().parents[2]
# (question file, recall@5 floor, MRR floor); measured: 1.000 / 0.917 on the merged file
# (retrieval-20261130T132624Z.json in commit 6a0f4b27f), 1.000 / 0.908 in the newest run
GATES = [
    ("retrieval_questions.yaml", 0.95, 0.85),
    ("retrieval_questions_nvidia.yaml", 0.95, 0.85),
    ("retrieval_questions_amd_mtia.yaml", 0.95, 0.85),
]
K, DEPTH = 5, 20


@pytest.mark.slow
@pytest.mark.parametrize(("name", "recall_floor", "mrr_floor"), GATES, ids=[g[0] for g in GATES])
def test_hybrid_recall_at_5_floor(real_corpus, name, recall_floor, mrr_floor):
    store, _ = real_corpus
    questions = load_questions(REPO / "benchmarks" / name)
    assert len(questions) >= 40, f"{name}: {len(questions)} questions"
    per_question = []
    for q in questions:
        hits = store.search(q.text, k=DEPTH, mode="hybrid")
        chunk_docs = [_doc_key(h.chunk.source, REPO / "corpus") for h in hits]
        docs = list(dict.fromkeys(chunk_docs))
        per_question.append((q, score(docs, chunk_docs, q.documents, K), docs[:K]))
    recall = sum(s["hit"] for _, s, _ in per_question) / len(per_question)
    mrr = sum(s["rr"] for _, s, _ in per_question) / len(per_question)
    misses = "\n".join(f"  {q.text!r}: want {list(q.documents)}, got {top}"
                       for q, s, top in per_question if not s["hit"])
    assert recall >= recall_floor, f"{name}: hybrid recall@{K} {recall:.3f} < {recall_floor}:\n{misses}"
    assert mrr >= mrr_floor, f"{name}: hybrid MRR {mrr:.3f} < {mrr_floor}"
