"""POST /v1/search: hybrid (or dense / lexical) search over the chunks."""

from __future__ import annotations

import time

from fastapi import APIRouter, Response

from kb_server.api.deps import ReadAccess, SettingsDep, StoreDep
from kb_server.api.errors import Problem
from kb_server.api.models import SearchQuery, SearchResults

router = APIRouter(prefix="/v1", tags=["search"], dependencies=[ReadAccess])


@router.post("/search", response_model=SearchResults)
def search(body: SearchQuery, store: StoreDep, settings: SettingsDep, response: Response) -> SearchResults:
    """Hybrid search; the Server-Timing header says how long the store took (ms)."""
    if len(body.query) > settings.max_query_chars:
        raise Problem(422, f"query is {len(body.query)} characters; the limit is {settings.max_query_chars}",
                      field="query")
    if body.k > settings.max_k:
        raise Problem(422, f"k is {body.k}; the limit is {settings.max_k}", field="k")
    if not body.query.strip():
        raise Problem(422, "query is blank", field="query")
    t0 = time.perf_counter()
    hits = store.search(body.query, k=body.k, filters=body.filters, mode=body.mode)
    response.headers["Server-Timing"] = f"store;dur={(time.perf_counter() - t0) * 1000:.2f}"
    return SearchResults(query=body.query, k=body.k, hits=hits)
