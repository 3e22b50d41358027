"""Hybrid retrieval, the pure part: a search request and the reciprocal rank fusion of the dense
(chromadb) and lexical (BM25) rankings. Nothing here touches a store (kb_server.store runs searches;
kb_server.default_store offers `search()` over the process-wide store).

Usage: from kb_server.search import fuse_rrf; fuse_rrf([["a", "b"], ["b", "c"]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kb_server.schemas import SearchFilters


class UnknownFilter(ValueError):
    """A search filtered by a value that no document (nor the facts) holds: refused with the known values,
    rather than answered with no hits."""

    what = "value"
    field = "filters"
    slug = "unknown-filter"

    def __init__(self, name: str, known: list[str], close: list[str] | None = None):
        meant = f"did you mean {' or '.join(close)}? " if close else ""
        super().__init__(f"unknown {self.what} {name!r} in the search filter; {meant}known: {', '.join(known)}")
        self.name, self.known = name, known


class UnknownAcceleratorFilter(UnknownFilter):
    """A search filtered by an accelerator id that neither the facts nor any document knows."""

    what, field, slug = "accelerator", "filters.accelerator", "unknown-accelerator"


class UnknownVendorFilter(UnknownFilter):
    """A search filtered by a vendor that neither the facts nor any document names."""

    what, field, slug = "vendor", "filters.vendor", "unknown-vendor"


class UnknownKindFilter(UnknownFilter):
    """A search filtered by a kind that is neither a usual kind nor any document's."""

    what, field, slug = "kind", "filters.kind", "unknown-kind"


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
