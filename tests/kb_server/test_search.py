"""Hybrid search: the tokenizer keeps exact hardware tokens, RRF fuses, and hybrid beats dense-only
on queries where an exact token matters (a made-up instruction name the model never saw)."""

from __future__ import annotations

import random

import pytest

from kb_server.lexical import tokenize
from kb_server.schemas import Chunk
from kb_server.search import fuse_rrf
from kb_server.store import DocumentWrite, chunk_id


@pytest.mark.parametrize("text, expected", [
    ("wgmma.mma_async", ["wgmma.mma_async", "wgmma", "mma", "async"]),  # dotted+underscored: whole and parts
    ("cp.async.bulk", ["cp.async.bulk", "cp", "async", "bulk"]),
    ("MI300X LDS", ["mi300x", "lds"]),  # lower-cased
    ("228 KB", ["228", "kb", "228kb"]),  # a quantity also becomes one token
    ("3.35 TB/s", ["3.35", "3", "35", "tb", "s", "3.35tbs"]),
    ("the __syncthreads() call", ["__syncthreads", "syncthreads", "call"]),  # stopword "the" dropped
])
def test_tokenize_keeps_exact_tokens(text, expected):
    assert tokenize(text) == expected


def test_rrf_rewards_agreement():
    fused = dict(fuse_rrf([["a", "b", "c"], ["c", "b"]], rrf_k=60))
    assert fused["b"] > fused["a"]  # rank 2 + rank 2 beats rank 1 alone
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert [i for i, _ in fuse_rrf([["x"], ["y"]])] == ["x", "y"]  # ties keep first-seen order


def _made_up_names(n: int) -> list[str]:
    """Names built from the same few syllables ("zorqua.sync", "quazor.sync", "zorqua.bulk"...):
    their word pieces overlap heavily, so only the exact token tells them apart."""
    syllables = ["zor", "qua", "vex", "plim", "drub"]
    names = [f"{a}{b}.{s}" for a in syllables for b in syllables if a != b for s in ("sync", "tile", "bulk")]
    return sorted(random.Random(7).sample(names, n))


def test_hybrid_beats_dense_on_exact_token_queries(store):
    names = _made_up_names(24)
    meta = {"source": "isa.md", "title": "ISA", "accelerator": ["any"], "vendor": "any", "kind": "isa"}
    chunks = []
    for i, name in enumerate(names):  # near-identical prose: only the instruction name tells them apart
        text = (f"The {name} instruction copies a {16 * (i % 4 + 1)}x64 tile from global memory into shared "
                f"memory asynchronously and arrives on a barrier when the copy is complete.")
        chunks.append(Chunk(id=chunk_id("isa", ["ISA"], text, meta), document_id="isa", text=text,
                            heading_path=["ISA"], **meta))
    store.upsert_documents([DocumentWrite("isa", chunks, "h")])

    def top1(mode: str) -> float:
        right = sum(name in store.search(f"what does {name} do", k=1, mode=mode)[0].chunk.text for name in names)
        return right / len(names)

    dense, hybrid, lexical = top1("dense"), top1("hybrid"), top1("lexical")
    assert lexical == 1.0
    assert hybrid >= 0.9, f"hybrid top-1 {hybrid:.2f}"
    assert hybrid >= dense + 0.3, f"hybrid {hybrid:.2f} vs dense {dense:.2f}"
