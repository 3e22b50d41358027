"""Request and response bodies of the HTTP API, named by purpose. The records themselves (Hit,
KernelRecord, AcceleratorFacts, PromptBundle) come from kb_server.schemas, facts and prompt."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kb_server.schemas import (
    DEFAULT_BACKEND,
    MAX_K,
    DocumentSummary,
    Hit,
    KernelMeasurement,
    KernelRecord,
    SearchFilters,
)

# Static bounds keep the OpenAPI schema honest; the settings may set tighter ones (checked in the routes).
QUERY_MAX = 10_000
K_MAX = MAX_K  # the most hits one search may ask for: the same bound as the server's setting max_k


class Health(BaseModel):
    status: Literal["ok"]
    store: Literal["open", "not opened"]
    accelerators: int


class SearchQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=QUERY_MAX)
    k: int = Field(default=8, ge=1, le=K_MAX)
    filters: SearchFilters | None = None
    mode: Literal["hybrid", "dense", "lexical"] = "hybrid"


class SearchResults(BaseModel):
    """POST /v1/search, `kkb search --json` and the MCP tool `search`: one shape."""

    query: str
    k: int
    hits: list[Hit]


class KernelList(BaseModel):
    """GET /v1/kernels, POST /v1/kernels/search, `kkb kernels --json` and the MCP tools `kernels` and
    `search_kernels`: one shape."""

    kernels: list[KernelRecord]


class PromptRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec_source: str = Field(min_length=1)  # the spec's Python source; read, never executed
    accelerator: str = Field(min_length=1, max_length=100)
    backend: str = Field(default=DEFAULT_BACKEND, min_length=1, max_length=20)  # triton | cuda | cute | hip
    token_budget: int = Field(default=6000, ge=1)
    extra_queries: list[str] = Field(default_factory=list, max_length=8)  # e.g. a measured bottleneck's query
    retrieval: bool = True  # False: facts, rules and task only (the baseline that measures what retrieval adds)


class KernelCreate(BaseModel):
    """A KernelRecord whose id may be left out (then the store uses a hash of backend and source)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:-]+$")
    name: str = Field(min_length=1, max_length=200)
    op_family: str = Field(min_length=1, max_length=100)
    op_signature: str = Field(min_length=1, max_length=1000)
    backend: str = Field(min_length=1, max_length=20)
    source: str = Field(min_length=1)
    description: str = ""
    tunables: dict[str, list[int | float | str]] = Field(default_factory=dict)
    dtypes: list[str] = Field(default_factory=list)
    accelerators: list[str] = Field(default_factory=list)
    measurements: list[KernelMeasurement] = Field(default_factory=list)
    path: str | None = None


class KernelCreated(BaseModel):
    id: str


class DocumentCreated(BaseModel):
    document_id: str  # the document that holds the uploaded bytes
    name: str  # its name: the upload's own, or that of the document that already held the same bytes
    file_hash: str  # sha256 of the uploaded bytes; the file is stored as uploads/<file_hash><suffix>
    chunks: int  # chunks written now (0 when the same bytes were already ingested)
    unchanged: bool = False  # the same bytes were ingested before
    warnings: list[str] = Field(default_factory=list)  # "name:line: field 'x': ..." (ingested all the same)
    same_as: str | None = None  # another document already held these bytes: nothing new was stored
    replaced: list[str] = Field(default_factory=list)  # ids of earlier uploads of the same name, now gone


class DocumentList(BaseModel):
    """GET /v1/documents and `kkb documents --json`."""

    documents: list[DocumentSummary]


class KernelSearch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=QUERY_MAX)
    k: int = Field(default=4, ge=1, le=K_MAX)
    op_family: str | None = Field(default=None, min_length=1, max_length=100)
    backend: str | None = Field(default=None, min_length=1, max_length=20)
