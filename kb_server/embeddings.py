"""The sentence-transformers embedder: loaded lazily, once per process, offline.

Usage: from kb_server.embeddings import get_embedder; vectors = get_embedder(model).encode(texts)
Vectors are L2-normalised float32, so cosine similarity is a dot product (chromadb uses cosine space).

Queries go through a TorchScript trace of the same model (same weights, same kernels: vectors equal the
sentence-transformers ones to ~1e-7, checked when the trace is made). Its forward is one call that
releases the GIL throughout; the eager model takes and drops the GIL at every one of its ~100 ops, and
on a busy 2-core server each re-take waits for other Python threads (a batch of 8 queries took 645 ms
instead of 43 ms next to one busy Python thread, measured here). When the model does not trace, or the
trace disagrees, queries use the eager model. A process's first query batch, before the model is loaded,
goes through kb_server.query_encoder instead (the same forward without importing sentence-transformers,
which was most of a one-shot `kkb search`).
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

log = logging.getLogger("kb_server")
_TRACE_TOLERANCE = 1e-5  # largest element-wise difference accepted between traced and eager vectors
_TRACE_PROBE = ["warm up", "shared memory per SM on H100",
                "How many bytes per cycle does one LDS bank deliver on CDNA3 with ds_read_b128?"]


class Embedder:
    """Encodes texts with one sentence-transformers model; the model loads on first use."""

    def __init__(self, model: str, batch_size: int = 64, device: str = "cpu"):
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self._lock = threading.RLock()  # guards the model load and the query cache
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._traced = None  # the TorchScript query forward, False when the model does not trace
        self._light = None  # kb_server.query_encoder's encoder, False where the model folder is not its shape
        self._forwards = 0  # query forwards so far in this process
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
        return self.encode_queries([query])[0]

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        """Query vectors, cached ones from the LRU cache, the others in one forward of the model."""
        out: list[np.ndarray | None] = [None] * len(queries)
        with self._lock:
            for i, q in enumerate(queries):
                cached = self._query_cache.get(q)
                if cached is not None:
                    self._query_cache.move_to_end(q)
                    out[i] = cached
        missing = list(dict.fromkeys(q for q, v in zip(queries, out) if v is None))
        if missing:
            fresh = dict(zip(missing, self.forward_queries(missing)))
            with self._lock:
                self._query_cache.update(fresh)
                while len(self._query_cache) > 1024:
                    self._query_cache.popitem(last=False)
            out = [v if v is not None else fresh[q] for q, v in zip(queries, out)]
        return out

    def forward_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Normalised float32 vectors of `queries` in one model call (no cache). The first call of a process
        runs eager: making the trace costs seconds, which a one-shot `kkb search` or `kkb prompt` would
        spend on its only call; a server traces on its second."""
        with self._lock:
            self._forwards += 1
            first = self._forwards == 1
        if first and self._model is None:
            light = self._light_encoder()
            if light:
                return light.encode(list(queries))
        traced = None if first else self._query_forward()
        if traced:
            return _run_traced(self.model, traced, list(queries))
        return self.model.encode(list(queries), batch_size=max(1, len(queries)), normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def _light_encoder(self):
        if self._light is None:
            from pathlib import Path

            from kb_server.query_encoder import QueryEncoder, UnsupportedModel

            with self._lock:
                try:
                    self._light = QueryEncoder.load(self.model_name) if Path(self.model_name).is_dir() else False
                except UnsupportedModel as exc:
                    log.info("queries through the full model: %s", exc)
                    self._light = False
        return self._light

    def _query_forward(self):
        if self._traced is None:
            with self._lock:
                if self._traced is None:
                    self._traced = _trace(self.model) or False
        return self._traced


def _tokenize(model, texts: list[str]) -> dict:
    tokenize = getattr(model, "preprocess", None) or model.tokenize
    return tokenize(texts)


def _run_traced(model, traced, texts: list[str]) -> np.ndarray:
    import torch

    features = _tokenize(model, texts)
    with torch.inference_mode():
        vectors = traced(features["input_ids"], features["attention_mask"], features["token_type_ids"])
    return vectors.numpy().astype(np.float32, copy=False)


def _trace(model):
    """A TorchScript trace of transformer + mean pooling + normalisation, or None (then: eager).

    Only for the layout of all-MiniLM-L6-v2 and its kin (Transformer, mean Pooling, optional
    Normalize); the trace is accepted only when it matches the eager vectors on probe texts of
    different lengths, alone and in a padded batch.
    """
    import torch

    try:
        names = [type(m).__name__ for m in model]
        if names[:2] != ["Transformer", "Pooling"] or names[2:] not in ([], ["Normalize"]):
            return None
        if getattr(model[1], "pooling_mode", None) != "mean" and not getattr(model[1], "pooling_mode_mean_tokens",
                                                                              False):
            return None
        _name_no_loss(model[0].auto_model)
        wrapper = _mean_pooled(model[0].auto_model).eval()
        example = _tokenize(model, _TRACE_PROBE)
        if "token_type_ids" not in example:
            return None
        # The tracer warns of two Python conditions in transformers' masking (padding of the mask; causal
        # attention): for this encoder with a full attention mask both are the same for every input.
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit is deprecated, not gone; eager is the fallback
            warnings.simplefilter("ignore", FutureWarning)
            traced = torch.jit.trace(wrapper, (example["input_ids"], example["attention_mask"],
                                               example["token_type_ids"]), check_trace=False, strict=False)
        for probe in (_TRACE_PROBE, _TRACE_PROBE[-1:], _TRACE_PROBE[:1]):
            eager = model.encode(probe, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
            diff = float(np.abs(_run_traced(model, traced, probe) - eager).max())
            if diff > _TRACE_TOLERANCE:
                log.warning("the traced query encoder differs from the model by %.2g; using the eager model", diff)
                return None
        return traced
    except Exception as exc:  # noqa: BLE001  any tracing failure only costs speed
        log.warning("cannot trace the query encoder (%s); using the eager model", exc)
        return None


def _name_no_loss(transformer) -> None:
    """torch.jit.trace reads every attribute of each submodule, and reading transformers' `loss_function`
    on an encoder without a loss type logs "`loss_type=None` ... unrecognized" once per process. The
    embedder never computes a loss, so it names none (the property's setter), and the read stays quiet."""
    prop = getattr(type(transformer), "loss_function", None)
    if isinstance(prop, property) and prop.fset is not None:
        transformer.loss_function = None


def _mean_pooled_class():
    import torch

    class MeanPooled(torch.nn.Module):
        """last_hidden_state -> mask-weighted mean -> L2 normalisation, as the sentence-transformers modules do."""

        def __init__(self, transformer):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    return MeanPooled


def _mean_pooled(transformer):
    """The traced module (its class is made on first use: torch is imported lazily)."""
    return _mean_pooled_class()(transformer)


_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(model: str, batch_size: int = 64) -> Embedder:
    """The process-wide embedder for `model` (one model load per process)."""
    with _EMBEDDERS_LOCK:
        if model not in _EMBEDDERS:
            _EMBEDDERS[model] = Embedder(model, batch_size=batch_size)
        return _EMBEDDERS[model]
