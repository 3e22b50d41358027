"""Dynamic batching for the server: concurrent searches share one model call and one chromadb query.

Usage: store = Store(settings, embedder=BatchingEmbedder(settings.model, settings.embed_batch_size))
       hits = SearchBatcher(store).search("wgmma tile shapes", k=8)     # from many threads at once

One search at a time runs alone, with no added wait. While a batch is being encoded, the searches that
arrive queue up and go together in the next one: on 2 CPU cores MiniLM encodes ~70 single queries/s
but ~200/s in batches of 8 (measured here), so throughput grows with load. SearchBatcher batches whole
searches (Store.search_many); BatchingEmbedder batches the query vectors of other callers that search
one query at a time (the prompt builder).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from kb_server.embeddings import Embedder
from kb_server.schemas import Hit, SearchFilters
from kb_server.search import Mode, SearchRequest
from kb_server.store import Store

MAX_BATCH = 32  # a larger batch only delays the queries at its end


@dataclass
class _Slot:
    query: str
    vector: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class BatchingEmbedder(Embedder):
    """An Embedder whose encode_query batches concurrent callers (leader/followers, no timer)."""

    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu"):
        super().__init__(model, batch_size=batch_size, device=device)
        self._cv = threading.Condition(self._lock)  # the same lock guards the query cache in both classes
        self._queue: list[_Slot] = []
        self._busy = False
        self.batches = 0  # model calls made by encode_query (tests and the benchmark read it)

    def encode_queries(self, queries) -> list[np.ndarray]:
        """One query joins the batch of concurrent callers; several are already a batch (one forward)."""
        if len(queries) == 1:
            return [self.encode_query(queries[0])]
        return super().encode_queries(queries)

    def encode_query(self, query: str) -> np.ndarray:
        with self._cv:
            cached = self._query_cache.get(query)
            if cached is not None:
                self._query_cache.move_to_end(query)
                return cached
            slot = _Slot(query)
            self._queue.append(slot)
            while not slot.done and self._busy:
                self._cv.wait()
            if slot.done:
                return _result(slot)
            self._busy = True  # this thread leads: it encodes everything queued so far
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        try:
            vectors = self.forward_queries([s.query for s in batch])
            for s, v in zip(batch, vectors):
                s.vector = v
        except BaseException as exc:  # noqa: BLE001  every waiter of the batch gets the error, not a hang
            for s in batch:
                s.error = exc
        finally:
            with self._cv:
                self.batches += 1
                for s in batch:
                    s.done = True
                    if s.vector is not None:
                        self._query_cache[s.query] = s.vector
                while len(self._query_cache) > 1024:
                    self._query_cache.popitem(last=False)
                self._busy = False
                self._cv.notify_all()
        return _result(slot)


def _result(slot: _Slot) -> np.ndarray:
    if slot.error is not None:
        raise slot.error
    return slot.vector


@dataclass
class _Search:
    request: SearchRequest
    taken: bool = False  # a leader has put it in its batch
    done: bool = False
    hits: list[Hit] | None = None
    error: BaseException | None = None
    # set (under the batcher's lock) when the search is done, or when it may lead: one wake-up per event,
    # not a notify_all that wakes every waiting request thread
    wake: threading.Event = field(default_factory=threading.Event)


class SearchBatcher:
    """Concurrent searches of one store, run as batches of Store.search_many in a pipeline.

    A caller that finds no batch in the embedding stage leads: it takes the searches queued (up to
    MAX_BATCH, its own among them) and hands their queries to the model thread (one forward, which
    releases the GIL throughout), ranks them with BM25 meanwhile, then finishes the batch (one chromadb
    query, one read of the winners). The embedding stage is free again as soon as the forward ends, so
    the model encodes batch n+1 while the Python work of batch n runs on the other core. Every search
    gets the hits it would get alone; a lone search runs at once, with no added wait.
    """

    def __init__(self, store: Store, max_batch: int = MAX_BATCH):
        self.store = store
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Search] = []  # waiting for a leader, oldest first
        self._embedding = False  # a batch is in the model thread
        self._model = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kkb-embed")
        self.batches = 0  # batches run (tests and the benchmark read it)

    def search(self, query: str, k: int = 8, filters: SearchFilters | None = None,
               mode: Mode = "hybrid") -> list[Hit]:
        """Store.search, sharing the work with concurrent callers; bad arguments raise ValueError at once."""
        item = _Search(self.store.check_search(SearchRequest(query, k, filters, mode)))
        with self._lock:
            self._queue.append(item)
            batch = None if self._embedding else self._take(item)
        while batch is None:
            item.wake.wait()
            with self._lock:
                if item.done:
                    return _hits(item)
                if not item.taken and not self._embedding:
                    batch = self._take(item)
                else:  # taken by a leader, or another leader got the model first: wait again
                    item.wake.clear()
        requests = [s.request for s in batch]
        try:
            vectors = None
            if any(r.dense for r in requests):
                try:
                    future: Future = self._model.submit(self.store.embed_queries, requests)
                except BaseException:
                    self._embedding_done(None)
                    raise
                future.add_done_callback(self._embedding_done)
                vectors = future.result
            for s, hits in zip(batch, self.store.search_many(requests, vectors)):
                s.hits = hits
        except BaseException as exc:  # noqa: BLE001  every search of the batch gets the error, not a hang
            for s in batch:
                s.error = exc
        finally:
            with self._lock:
                for s in batch:
                    s.done = True
                    s.wake.set()
        return _hits(item)

    def _take(self, item: _Search) -> list[_Search]:
        """Lead a batch: `item` and the oldest queued searches (call with the lock held)."""
        others = [s for s in self._queue if s is not item][: self.max_batch - 1]
        batch = [*others, item]
        taken = {id(s) for s in batch}
        self._queue = [s for s in self._queue if id(s) not in taken]
        for s in batch:
            s.taken = True
        self._embedding = any(s.request.dense for s in batch)
        if not self._embedding and self._queue:  # the model stays free: the next search may lead at once
            self._queue[0].wake.set()
        self.batches += 1
        return batch

    def _embedding_done(self, _future: Future | None) -> None:
        with self._lock:
            self._embedding = False
            if self._queue:  # the oldest waiting search leads the next batch
                self._queue[0].wake.set()


def _hits(item: _Search) -> list[Hit]:
    if item.error is not None:
        raise item.error
    return item.hits
