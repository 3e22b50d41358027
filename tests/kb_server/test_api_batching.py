"""The server's batchers: concurrent queries share model calls (BatchingEmbedder) and whole searches
share batches (SearchBatcher, Store.search_many), with the results of one-at-a-time searches."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from kb_server.api.batching import BatchingEmbedder, SearchBatcher
from kb_server.config import KBSettings
from kb_server.embeddings import Embedder
from kb_server.schemas import SearchFilters
from kb_server.search import SearchRequest
from kb_server.store import Store
from tests.kb_server.kbdata import seed


def test_concurrent_queries_are_batched_and_equal_to_single_encodes():
    model = KBSettings().model
    plain, batching = Embedder(model), BatchingEmbedder(model)
    queries = [f"shared memory tile case {i} with {'wgmma ' * (i % 4)}operands" for i in range(12)]
    expected = [plain.encode_query(q) for q in queries]
    batching.encode_query("warm up")  # model load outside the race
    start = threading.Barrier(len(queries))
    got: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        start.wait()
        got[i] = batching.encode_query(queries[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert batching.batches - 1 < len(queries)  # fewer model calls than queries
    for i, q in enumerate(queries):  # same vectors as one-at-a-time (padding only changes float noise)
        np.testing.assert_allclose(got[i], expected[i], atol=1e-5)
        assert batching.encode_query(q) is got[i]  # and cached like the plain embedder


def test_traced_query_encoder_matches_the_model():
    """The GIL-free traced forward gives the sentence-transformers vectors (same weights), alone and padded."""
    embedder = Embedder(KBSettings().model)
    queries = ["smem", "wgmma tile shapes on H100", "How many bytes per cycle does one LDS bank deliver? " * 3,
               "long " * 400]  # the last one is truncated at the model's 256 word pieces
    assert embedder._query_forward(), "the model should trace; the eager fallback is much slower on a busy server"
    eager = embedder.model.encode(queries, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(embedder.forward_queries(queries), eager, atol=1e-5)  # one padded batch
    for q, vec in zip(queries, eager):
        np.testing.assert_allclose(embedder.forward_queries([q])[0], vec, atol=1e-5)  # alone


# (mode, filters): every branch of Store.search_many; unfiltered dense searches share one chromadb query
_CASES = [("hybrid", None), ("dense", None), ("lexical", None),
          ("hybrid", SearchFilters(accelerator="h100")), ("dense", SearchFilters(vendor="amd")),
          ("lexical", SearchFilters(kind="guide"))]
_QUERIES = ["shared memory per SM", "softmax rows in LDS", "matmul tiling with tensor cores",
            "welford layer norm", "228 KiB", "row max and sum in registers"]


@pytest.fixture(scope="module")
def seeded_store(tmp_path_factory, embedder):
    store = Store(KBSettings(home=tmp_path_factory.mktemp("kkb-batch")), embedder=embedder)
    seed(store)
    return store


def _key(hits):
    return [(h.chunk.id, round(h.score, 6), h.dense_score is None or round(h.dense_score, 4),
             h.lexical_score is None or round(h.lexical_score, 4)) for h in hits]


def test_search_many_returns_the_hits_of_single_searches(seeded_store):
    requests = [SearchRequest(q, k, f, m) for q in _QUERIES for (m, f) in _CASES for k in (3, 8)]
    single = [_key(seeded_store.search(r.query, k=r.k, filters=r.filters, mode=r.mode)) for r in requests]
    assert any(single), "the fixture should find something"
    assert [_key(h) for h in seeded_store.search_many(requests)] == single


def test_concurrent_searches_through_the_batcher_return_the_hits_of_single_searches(seeded_store):
    requests = [SearchRequest(f"{q} ({i})", 8, f, m) for i, q in enumerate(_QUERIES) for (m, f) in _CASES]
    expected = [_key(seeded_store.search(r.query, k=r.k, filters=r.filters, mode=r.mode)) for r in requests]
    batcher = SearchBatcher(seeded_store)
    start = threading.Barrier(len(requests))
    got: dict[int, list] = {}

    def run(i: int) -> None:
        r = requests[i]
        start.wait()
        got[i] = _key(batcher.search(r.query, k=r.k, filters=r.filters, mode=r.mode))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert batcher.batches < len(requests)  # searches shared batches
    assert [got[i] for i in range(len(requests))] == expected


def test_batcher_names_bad_arguments_and_survives_them(seeded_store):
    batcher = SearchBatcher(seeded_store)
    with pytest.raises(ValueError, match="k=0"):
        batcher.search("x", k=0)
    with pytest.raises(ValueError, match="empty"):
        batcher.search("   ")
    assert batcher.search("shared memory per SM", k=2)


def test_batcher_serves_more_searches_than_a_batch_holds_without_hanging(seeded_store):
    """More callers than max_batch, lexical-only batches (which leave the model free) mixed in."""
    batcher = SearchBatcher(seeded_store, max_batch=3)
    requests = [SearchRequest(f"{_QUERIES[i % len(_QUERIES)]} #{i}", 4, None, ("lexical", "hybrid")[i % 3 == 0])
                for i in range(40)]
    got: dict[int, list] = {}

    def run(i: int) -> None:
        r = requests[i]
        got[i] = _key(batcher.search(r.query, k=r.k, mode=r.mode))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a search never returned"
    assert [got[i] for i in range(len(requests))] == [
        _key(seeded_store.search(r.query, k=r.k, mode=r.mode)) for r in requests]


def test_a_process_s_first_query_forward_makes_no_trace(monkeypatch):
    """A one-shot `kkb search` makes one forward: tracing would cost it seconds for nothing. The first forward
    runs eager; the second traces (a server's)."""
    from kb_server import embeddings

    made = []
    monkeypatch.setattr(embeddings, "_trace", lambda model: made.append(model) or False)
    embedder = Embedder(KBSettings().model)
    embedder.forward_queries(["smem"])
    assert made == []
    embedder.forward_queries(["smem per SM"])
    assert len(made) == 1
