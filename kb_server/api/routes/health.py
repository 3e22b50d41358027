"""GET /health (liveness, no auth) and GET /v1/stats."""

from __future__ import annotations

from fastapi import APIRouter, Request

from kb_server.api.deps import FactsDep, ReadAccess, StoreDep
from kb_server.api.models import Health

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health)
async def health(request: Request, facts: FactsDep) -> Health:
    opened = request.app.state.store is not None
    return Health(status="ok", store="open" if opened else "not opened", accelerators=len(facts))


@router.get("/v1/stats", dependencies=[ReadAccess])
def stats(store: StoreDep, facts: FactsDep) -> dict:
    """Documents, chunks, kernels, model and store mode, plus the number of accelerators."""
    return {**store.stats(), "accelerators": len(facts)}
