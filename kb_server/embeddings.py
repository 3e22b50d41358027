"""The sentence-transformers embedder: loaded lazily, once per process, offline.

Usage: from kb_server.embeddings import get_embedder; vectors = get_embedder(model).encode(texts)
Vectors are L2-normalised float32, so cosine similarity is a dot product (chromadb uses cosine space).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np


class Embedder:
    """Encodes texts with one sentence-transformers model; the model loads on first use."""

    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu"):
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self._lock = threading.RLock()  # guards the model load and the query cache
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.texts_encoded = 0  # how many texts this embedder has encoded (tests check re-ingest skips)

    @property
    def model(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()  # no "Loading weights" bar on every start

                    self._model = SentenceTransformer(self.model_name, device=self.device)
        return self._model

    @property
    def dimension(self) -> int:
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    def encode(self, texts: Sequence[str], progress: Callable[[int], None] | None = None,
               window: int = 512) -> np.ndarray:
        """Embed `texts` (normalised float32, shape [n, dim]).

        Texts are sorted by length once, then encoded in windows so a progress callback can be told
        how many are done; sorting keeps padding as low as one big encode call would.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), window):
            idx = order[start : start + window]
            vecs = self.model.encode([texts[i] for i in idx], batch_size=self.batch_size,
                                     normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)
            out[idx] = vecs
            self.texts_encoded += len(idx)
            if progress is not None:
                progress(len(idx))
        return out

    def encode_query(self, query: str) -> np.ndarray:
        """One query's vector, with a small LRU cache (agents repeat queries within a session)."""
        with self._lock:
            cached = self._query_cache.get(query)
            if cached is not None:
                self._query_cache.move_to_end(query)
                return cached
        vec = self.model.encode(query, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False).astype(np.float32)
        with self._lock:
            self._query_cache[query] = vec
            if len(self._query_cache) > 1024:
                self._query_cache.popitem(last=False)
        return vec


_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(model: str, batch_size: int = 64) -> Embedder:
    """The process-wide embedder for `model` (one model load per process)."""
    with _EMBEDDERS_LOCK:
        if model not in _EMBEDDERS:
            _EMBEDDERS[model] = Embedder(model, batch_size=batch_size)
        return _EMBEDDERS[model]
