"""POST /v1/search: hybrid (or dense / lexical) search over the chunks."""

from __future__ import annotations

import time

from fastapi import APIRouter, Response

from kb_server.api.deps import ReadAccess, SearcherDep, SettingsDep
from kb_server.api.errors import Problem
from kb_server.api.models import SearchQuery, SearchResults
from kb_server.search import UnknownFilter

router = APIRouter(prefix="/v1", tags=["search"], dependencies=[ReadAccess])


@router.post("/search", response_model=SearchResults)
def search(body: SearchQuery, searcher: SearcherDep, settings: SettingsDep) -> Response:
    """Hybrid search; the Server-Timing header says how long the store took (ms), batch wait included.

    Concurrent searches are batched (SearchBatcher): each gets the hits it would get alone. The body is
    serialised once by pydantic (the response model documents it; FastAPI does not validate it again).
    """
    if len(body.query) > settings.max_query_chars:
        raise Problem(422, f"query is {len(body.query)} characters; the limit is {settings.max_query_chars}",
                      field="query")
    if body.k > settings.max_k:
        raise Problem(422, f"k is {body.k}; the limit is {settings.max_k}", field="k")
    if not body.query.strip():
        raise Problem(422, "query is blank", field="query")
    t0 = time.perf_counter()
    try:
        hits = searcher.search(body.query, k=body.k, filters=body.filters, mode=body.mode)
    except UnknownFilter as exc:  # 422, not unrelated passages (or none): the known values are listed
        raise Problem(422, str(exc), field=exc.field, slug=exc.slug, extra={"known": exc.known}) from exc
    except ValueError as exc:
        raise Problem(422, str(exc), field="filters") from exc
    timing = f"store;dur={(time.perf_counter() - t0) * 1000:.2f}"
    return Response(SearchResults(query=body.query, k=body.k, hits=hits).model_dump_json(),
                    media_type="application/json", headers={"Server-Timing": timing})
