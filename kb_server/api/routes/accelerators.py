"""GET /v1/accelerators, GET /v1/accelerators/{id}, GET /v1/facts?accelerator=h100&q=shared memory."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kb_server.api.deps import FactsDep, ReadAccess
from kb_server.factlookup import FactAnswer, lookup, resolve_accelerator
from kb_server.facts import AcceleratorFacts

router = APIRouter(prefix="/v1", tags=["accelerators"], dependencies=[ReadAccess])


@router.get("/accelerators", response_model=list[AcceleratorFacts])
async def list_accelerators(facts: FactsDep) -> list[AcceleratorFacts]:
    return [facts[k] for k in sorted(facts)]


@router.get("/accelerators/{accelerator_id}", response_model=AcceleratorFacts)
async def get_accelerator(accelerator_id: str, facts: FactsDep) -> AcceleratorFacts:
    return resolve_accelerator(facts, accelerator_id)  # AcceleratorNotFound -> 404 naming the known ids


@router.get("/facts", response_model=FactAnswer)
async def facts_question(
    facts: FactsDep,
    accelerator: Annotated[str, Query(min_length=1, max_length=100, description="id or alias, e.g. h100")],
    q: Annotated[str, Query(min_length=1, max_length=500, description="e.g. 'shared memory', 'bf16 peak'")],
    limit: Annotated[int, Query(ge=1, le=20)] = 5,
) -> FactAnswer:
    """The facts that best answer `q`, with value, unit, source and score; 404 lists the fields."""
    return lookup(resolve_accelerator(facts, accelerator), q, limit=limit)
