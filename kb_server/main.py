"""Builds the FastAPI app of the knowledge base; `kkb serve` runs it under uvicorn.

Usage: uvicorn --factory kb_server.main:create_app   (or: kkb serve --port 8700)
"""

from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from kb_server.api import docs_page, errors
from kb_server.api.deps import open_store
from kb_server.api.ingestor import Ingestor
from kb_server.api.limits import BodyLimitMiddleware
from kb_server.api.routes import accelerators, documents, health, kernels, prompt, search
from kb_server.api.settings import ServerSettings
from kb_server.facts import load_all_facts

log = logging.getLogger("kb_server")


def _warm_up(store, torch_threads: int) -> None:
    """Load the embedding model and the BM25 index now, so the first requests are not the slow ones."""
    import torch

    torch.set_num_threads(torch_threads)
    store.embedder.encode_query("warm up")
    store.refresh_lexical()


def create_app(settings: ServerSettings | None = None, store=None, bound_host: str | None = None,
               open_store_at_startup: bool = True, ingestor: Ingestor | None = None) -> FastAPI:
    """The app. Facts load here, so an invalid facts file stops start-up (FactsError names file and field).

    `bound_host` is the address uvicorn binds (writes without KKB_API_KEY need loopback); when None
    each request's socket address decides. `ingestor` turns uploads into documents (kb_server does not
    import the ingest package: `kkb serve` hands it in); without one, uploads answer 501.
    """
    settings = settings or ServerSettings()
    facts_dir = settings.corpus_dir / "accelerators"
    facts = load_all_facts(facts_dir) if facts_dir.is_dir() else {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if open_store_at_startup:
            store_ = await run_in_threadpool(open_store, app)
            await run_in_threadpool(_warm_up, store_, settings.torch_threads)
            removed = await run_in_threadpool(documents.recover_uploads, store_, settings.home, ingestor)
            for path in removed:
                log.warning("removed %s: left by an interrupted upload", path)
        yield

    app = FastAPI(title="kernelkb knowledge base", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Hardware facts, hybrid search, retrieval-augmented prompts and the kernel library.")
    app.state.settings = settings
    app.state.facts = facts
    app.state.store = store
    app.state.store_open_lock = threading.Lock()
    app.state.write_lock = threading.Lock()  # one writer at a time: embedded chromadb is not safe otherwise
    app.state.bound_host = bound_host
    app.state.ingestor = ingestor
    errors.install(app)
    for area in (health, search, accelerators, prompt, kernels, documents):
        app.include_router(area.router)
    app.include_router(docs_page.router)  # /docs rendered here: Swagger UI would load from a CDN
    app.add_middleware(BodyLimitMiddleware, max_request_bytes=settings.max_request_bytes,
                       max_upload_bytes=settings.max_upload_bytes)
    return app
