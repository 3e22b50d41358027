"""The process-wide store built from the environment's settings, and `search()` over it.

Usage: from kb_server.default_store import search; hits = search("wgmma tile shapes", k=8,
       filters=SearchFilters(accelerator="h100"))
"""

from __future__ import annotations

import threading

from kb_server.config import get_settings
from kb_server.schemas import Hit, SearchFilters
from kb_server.search import Mode
from kb_server.store import Store

_DEFAULT_STORE: Store | None = None
_DEFAULT_LOCK = threading.Lock()


def get_store() -> Store:
    """The process-wide store built from `get_settings()` (opened on first use)."""
    global _DEFAULT_STORE
    with _DEFAULT_LOCK:
        if _DEFAULT_STORE is None:
            _DEFAULT_STORE = Store(get_settings())
        return _DEFAULT_STORE


def search(query: str, k: int = 8, filters: SearchFilters | None = None, mode: Mode = "hybrid") -> list[Hit]:
    """Search the default store (see Store.search)."""
    return get_store().search(query, k=k, filters=filters, mode=mode)
