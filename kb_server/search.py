"""Hybrid retrieval: reciprocal rank fusion of the dense (chromadb) and lexical (BM25) rankings,
and `search()`, the module-level convenience over the default store.

Usage: from kb_server.search import search; hits = search("wgmma tile shapes", k=8,
       filters=SearchFilters(accelerator="h100"))
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kb_server.schemas import Hit, SearchFilters

if TYPE_CHECKING:
    from kb_server.store import Store

Mode = Literal["hybrid", "dense", "lexical"]
MODES: tuple[str, ...] = ("hybrid", "dense", "lexical")


@dataclass(frozen=True)
class SearchRequest:
    """One search of a batch (Store.search_many): the arguments of Store.search."""

    query: str
    k: int = 8
    filters: SearchFilters | None = None
    mode: Mode = "hybrid"

    @property
    def dense(self) -> bool:
        """Whether this search needs the query's vector."""
        return self.mode in ("hybrid", "dense")


def fuse_rrf(rankings: Sequence[Sequence[str]], rrf_k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(id) = sum over rankings of 1 / (rrf_k + rank), rank from 1.

    Ties keep the order in which ids were first seen (the dense ranking first), so results are
    deterministic.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


_DEFAULT_STORE: Store | None = None
_DEFAULT_LOCK = threading.Lock()


def get_store() -> Store:
    """The process-wide store built from `get_settings()` (opened on first use)."""
    global _DEFAULT_STORE
    with _DEFAULT_LOCK:
        if _DEFAULT_STORE is None:
            from kb_server.config import get_settings
            from kb_server.store import Store

            _DEFAULT_STORE = Store(get_settings())
        return _DEFAULT_STORE


def search(query: str, k: int = 8, filters: SearchFilters | None = None, mode: Mode = "hybrid") -> list[Hit]:
    """Search the default store (see Store.search)."""
    return get_store().search(query, k=k, filters=filters, mode=mode)
