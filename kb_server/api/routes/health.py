"""GET /health (liveness, no auth) and GET /v1/stats."""

from __future__ import annotations

from fastapi import APIRouter, Request

from kb_server.api.deps import FactsDep, ReadAccess, StoreDep
from kb_server.api.models import Health

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health)
async def health(request: Request) -> Health:
    """Liveness: never opens the store; the accelerators counted are the corpus's until it is open."""
    store = request.app.state.store
    facts = store.accelerators() if store is not None else request.app.state.facts
    return Health(status="ok", store="open" if store is not None else "not opened", accelerators=len(facts))


@router.get("/v1/stats", dependencies=[ReadAccess])
def stats(store: StoreDep, facts: FactsDep) -> dict:
    """Documents, chunks, kernels, model and store mode, plus the number of accelerators."""
    return {**store.stats(), "accelerators": len(facts)}
