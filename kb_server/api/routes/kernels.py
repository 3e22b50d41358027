"""GET /v1/kernels, GET /v1/kernels/{id}, POST /v1/kernels (record a winning kernel)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kb_server.api.deps import ReadAccess, SettingsDep, StoreDep, WriteAccess, WriteLockDep
from kb_server.api.errors import Problem
from kb_server.api.models import KernelCreate, KernelCreated, KernelList, KernelSearch
from kb_server.schemas import KernelRecord

router = APIRouter(prefix="/v1/kernels", tags=["kernels"])
Filter = Annotated[str | None, Query(min_length=1, max_length=100)]


@router.get("", response_model=KernelList, dependencies=[ReadAccess])
def list_kernels(store: StoreDep, op_family: Filter = None, backend: Filter = None,
                 accelerator: Filter = None) -> KernelList:
    return KernelList(kernels=store.list_kernels(op_family=op_family, backend=backend, accelerator=accelerator))


@router.post("/search", response_model=KernelList, dependencies=[ReadAccess])
def search_kernels(body: KernelSearch, store: StoreDep, settings: SettingsDep) -> KernelList:
    """The library's kernels closest to `query` (op names, a signature), optionally by family and backend."""
    if len(body.query) > settings.max_query_chars or not body.query.strip():
        raise Problem(422, f"query is blank or over {settings.max_query_chars} characters", field="query")
    if body.k > settings.max_k:
        raise Problem(422, f"k is {body.k}; the limit is {settings.max_k}", field="k")
    return KernelList(kernels=store.search_kernels(body.query, k=body.k, op_family=body.op_family,
                                                   backend=body.backend))


@router.get("/{kernel_id}", response_model=KernelRecord, dependencies=[ReadAccess])
def get_kernel(kernel_id: str, store: StoreDep) -> KernelRecord:
    record = store.get_kernel(kernel_id)
    if record is None:
        raise Problem(404, f"no kernel with id {kernel_id!r}; GET /v1/kernels lists them", field="kernel_id")
    return record


@router.post("", response_model=KernelCreated, status_code=201, dependencies=[WriteAccess])
def add_kernel(body: KernelCreate, store: StoreDep, lock: WriteLockDep) -> KernelCreated:
    """Answers only after the store has the record (durable): an acknowledged kernel survives a crash."""
    if not body.source.strip():
        raise Problem(422, "source is blank", field="source")
    record = KernelRecord(**{**body.model_dump(), "id": body.id or ""})  # "": the store hashes the source
    with lock:
        new_id = store.add_kernel(record)
    return KernelCreated(id=new_id)
