"""POST /v1/prompt: a retrieval-augmented prompt for a spec, an accelerator and a backend."""

from __future__ import annotations

from fastapi import APIRouter

from kb_server.api.deps import ReadAccess, SettingsDep, StoreDep
from kb_server.api.errors import Problem
from kb_server.api.models import PromptRequest
from kb_server.prompt import PromptBundle, build_prompt

router = APIRouter(prefix="/v1", tags=["prompt"], dependencies=[ReadAccess])


@router.post("/prompt", response_model=PromptBundle)
def prompt(body: PromptRequest, store: StoreDep, settings: SettingsDep) -> PromptBundle:
    """The spec is parsed, never executed: its ops become the retrieval queries. An unknown accelerator
    answers 404 listing the known ids; a budget below what the sections need, 422 saying how much."""
    if len(body.spec_source) > settings.max_spec_chars:
        raise Problem(422, f"spec_source is {len(body.spec_source)} characters; the limit is "
                      f"{settings.max_spec_chars}", field="spec_source")
    if body.token_budget > settings.max_token_budget:
        raise Problem(422, f"token_budget {body.token_budget} is over the limit {settings.max_token_budget}",
                      field="token_budget")
    for i, q in enumerate(body.extra_queries):
        if not q.strip() or len(q) > settings.max_query_chars:
            raise Problem(422, f"extra_queries[{i}] is blank or over {settings.max_query_chars} characters",
                          field=f"extra_queries.{i}")
    return build_prompt(store, body.spec_source, body.accelerator, body.backend,
                        token_budget=body.token_budget, extra_queries=body.extra_queries, retrieval=body.retrieval)
