"""Dependencies of the routes, as Annotated aliases: SettingsDep, StoreDep, SearcherDep, FactsDep,
WriteLockDep, and the two guards ReadAccess / WriteAccess (bearer token, KKB_API_KEY).

Writes need the token; with no token configured the server takes writes only when bound to loopback.
Reads are open unless `read_requires_key` is set.
"""

from __future__ import annotations

import secrets
import threading
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from kb_server.api.batching import BatchingEmbedder, SearchBatcher
from kb_server.api.errors import Problem
from kb_server.api.settings import ServerSettings
from kb_server.facts import AcceleratorFacts
from kb_server.store import Store

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_bearer = HTTPBearer(auto_error=False, description="KKB_API_KEY")


# The dependencies are `async def` and never block: FastAPI would run a plain `def` dependency in the
# thread pool, one thread hop per dependency per request (measured: several ms each on busy cores).


async def get_settings(request: Request) -> ServerSettings:
    return request.app.state.settings


async def get_facts(request: Request) -> dict[str, AcceleratorFacts]:
    """The store's facts (corpus files and ingested ones), re-read when another process ingested facts."""
    store = await get_store(request)
    return await run_in_threadpool(store.accelerators)


async def get_store(request: Request) -> Store:
    """The app's store, opened on first use (start-up opens it eagerly when serving)."""
    store = request.app.state.store
    return store if store is not None else await run_in_threadpool(open_store, request.app)


def open_store(app) -> Store:
    state = app.state
    if state.store is None:
        with state.store_open_lock:
            if state.store is None:
                settings = state.settings
                state.store = Store(settings, embedder=BatchingEmbedder(settings.model, settings.embed_batch_size))
    return state.store


async def get_searcher(request: Request) -> SearchBatcher:
    """The batcher of the app's store: concurrent /v1/search requests share model calls and chromadb queries."""
    store = await get_store(request)
    state = request.app.state
    searcher = getattr(state, "searcher", None)
    if searcher is None or searcher.store is not store:
        with state.store_open_lock:  # held for microseconds: no await inside
            searcher = getattr(state, "searcher", None)
            if searcher is None or searcher.store is not store:
                state.searcher = searcher = SearchBatcher(store)
    return searcher


async def get_write_lock(request: Request) -> threading.Lock:
    return request.app.state.write_lock


def _token_ok(settings: ServerSettings, credentials: HTTPAuthorizationCredentials | None) -> bool:
    return (credentials is not None and settings.api_key is not None
            and secrets.compare_digest(credentials.credentials.encode(), settings.api_key.encode()))


def _unauthorized(detail: str) -> Problem:
    return Problem(401, detail, field="Authorization", slug="unauthorized",
                   headers={"WWW-Authenticate": "Bearer"})


def _bound_to_loopback(request: Request) -> bool:
    host = request.app.state.bound_host
    if host is None:  # not told: the address of the socket this request came in on
        server = request.scope.get("server")
        host = server[0] if server else None
    return host in LOOPBACK


async def require_read(request: Request,
                       credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    settings = request.app.state.settings
    if settings.read_requires_key and not _token_ok(settings, credentials):
        raise _unauthorized("this server requires the bearer token (KKB_API_KEY) for reads")


async def require_write(request: Request,
                        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    settings = request.app.state.settings
    if settings.api_key is None:
        if not _bound_to_loopback(request):
            raise Problem(403, "writes are refused: no KKB_API_KEY is configured and the server is not bound "
                          "to loopback; set KKB_API_KEY or bind to 127.0.0.1", slug="writes-disabled")
        return
    if not _token_ok(settings, credentials):
        raise _unauthorized("writes need the bearer token: send 'Authorization: Bearer <KKB_API_KEY>'")


SettingsDep = Annotated[ServerSettings, Depends(get_settings)]
FactsDep = Annotated[dict[str, AcceleratorFacts], Depends(get_facts)]
StoreDep = Annotated[Store, Depends(get_store)]
SearcherDep = Annotated[SearchBatcher, Depends(get_searcher)]
WriteLockDep = Annotated[threading.Lock, Depends(get_write_lock)]
ReadAccess = Depends(require_read)
WriteAccess = Depends(require_write)
