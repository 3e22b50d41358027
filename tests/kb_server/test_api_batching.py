"""The server's query-embedding batcher: concurrent queries share model calls, results unchanged."""

from __future__ import annotations

import threading

import numpy as np

from kb_server.api.batching import BatchingEmbedder
from kb_server.config import KBSettings
from kb_server.embeddings import Embedder


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
