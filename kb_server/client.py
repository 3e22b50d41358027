"""KBClient: a small typed client of the knowledge base's HTTP API (httpx), with timeouts and retries.

Usage: with KBClient("http://127.0.0.1:8700") as kb: hits = kb.search("wgmma tile shapes", k=5)

Retries: connection errors, timeouts, 5xx and 429 are retried with exponential backoff (honouring
Retry-After); 4xx answers are not, and raise KBError carrying the server's problem body. Every
write is an upsert keyed by content, so repeating one after a lost answer is safe.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import httpx

from kb_server.api.models import DocumentCreated, DocumentList, KernelList, SearchResults
from kb_server.factlookup import FactAnswer
from kb_server.facts import AcceleratorFacts
from kb_server.prompt import PromptBundle
from kb_server.schemas import DocumentSummary, Hit, KernelRecord, SearchFilters

RETRY_STATUS = {429, 500, 502, 503, 504}
MAX_BACKOFF_S = 5.0


class KBError(RuntimeError):
    """The server answered with an error; `problem` is its JSON problem body (type, title, detail, field)."""

    def __init__(self, status: int, problem: dict, method: str, url: str):
        detail = problem.get("detail") or problem.get("title") or "error"
        field = f" (field: {problem['field']})" if problem.get("field") else ""
        super().__init__(f"{method} {url} -> {status}: {detail}{field}")
        self.status, self.problem = status, problem
        self.field = problem.get("field")


class KBClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30.0, retries: int = 3,
                 backoff_s: float = 0.25, transport: httpx.BaseTransport | None = None):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # ---- reads
    def health(self) -> dict:
        return self._request("GET", "/health").json()

    def stats(self) -> dict:
        return self._request("GET", "/v1/stats").json()

    def search(self, query: str, k: int = 8, filters: SearchFilters | dict | None = None,
               mode: str = "hybrid") -> list[Hit]:
        if isinstance(filters, SearchFilters):
            filters = filters.model_dump(exclude_none=True)
        body = {"query": query, "k": k, "filters": filters, "mode": mode}
        return SearchResults.model_validate(self._request("POST", "/v1/search", json=body).json()).hits

    def accelerators(self) -> list[AcceleratorFacts]:
        return [AcceleratorFacts.model_validate(a) for a in self._request("GET", "/v1/accelerators").json()]

    def accelerator(self, accelerator_id: str) -> AcceleratorFacts:
        return AcceleratorFacts.model_validate(self._request("GET", f"/v1/accelerators/{accelerator_id}").json())

    def facts(self, accelerator: str, q: str, limit: int = 5) -> FactAnswer:
        params = {"accelerator": accelerator, "q": q, "limit": limit}
        return FactAnswer.model_validate(self._request("GET", "/v1/facts", params=params).json())

    def prompt(self, spec_source: str, accelerator: str, backend: str, token_budget: int = 6000,
               extra_queries: Sequence[str] = (), retrieval: bool = True) -> PromptBundle:
        body = {"spec_source": spec_source, "accelerator": accelerator, "backend": backend,
                "token_budget": token_budget, "extra_queries": list(extra_queries), "retrieval": retrieval}
        return PromptBundle.model_validate(self._request("POST", "/v1/prompt", json=body).json())

    def kernels(self, op_family: str | None = None, backend: str | None = None,
                accelerator: str | None = None) -> list[KernelRecord]:
        params = {k: v for k, v in {"op_family": op_family, "backend": backend, "accelerator": accelerator}.items()
                  if v is not None}
        return KernelList.model_validate(self._request("GET", "/v1/kernels", params=params).json()).kernels

    def kernel(self, kernel_id: str) -> KernelRecord:
        return KernelRecord.model_validate(self._request("GET", f"/v1/kernels/{kernel_id}").json())

    def search_kernels(self, query: str, k: int = 4, op_family: str | None = None,
                       backend: str | None = None) -> list[KernelRecord]:
        body = {"query": query, "k": k, "op_family": op_family, "backend": backend}
        return KernelList.model_validate(self._request("POST", "/v1/kernels/search", json=body).json()).kernels

    def documents(self) -> list[DocumentSummary]:
        """Every document, facts file and kernel file in the store: name, title, accelerator, kind, size, date."""
        return DocumentList.model_validate(self._request("GET", "/v1/documents").json()).documents

    # ---- writes
    def add_kernel(self, record: KernelRecord | dict) -> str:
        body = record.model_dump(mode="json") if isinstance(record, KernelRecord) else dict(record)
        if not body.get("id"):
            body.pop("id", None)  # the server (store) then derives it from backend and source
        return self._request("POST", "/v1/kernels", json=body).json()["id"]

    def add_document(self, path: str | Path, *, accelerator: Sequence[str] = (), vendor: str | None = None,
                     kind: str | None = None, name: str | None = None, strict: bool = False) -> DocumentCreated:
        """Upload an md, pdf or html document, or a yaml accelerator facts file, under `name` (default: the
        file's name); a markdown file's own front matter wins over the metadata given here."""
        path = Path(path)
        form = {"accelerator": ",".join(accelerator) or None, "vendor": vendor, "kind": kind,
                "strict": "true" if strict else None}
        data = path.read_bytes()
        response = self._request("POST", "/v1/documents", data={k: v for k, v in form.items() if v is not None},
                                 files={"file": (name or path.name, data)})
        return DocumentCreated.model_validate(response.json())

    def delete_document(self, document_id: str) -> bool:
        """True when deleted, False when the server did not know it."""
        try:
            self._request("DELETE", f"/v1/documents/{document_id}")
        except KBError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # ---- transport
    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, url, **kwargs)
            except httpx.TransportError:  # connect errors, timeouts, a dropped connection
                if attempt >= self.retries:
                    raise
            else:
                if response.status_code < 400:
                    return response
                if response.status_code not in RETRY_STATUS or attempt >= self.retries:
                    raise KBError(response.status_code, _problem(response), method, url)
                retry_after = _retry_after(response)
                if retry_after is not None:
                    time.sleep(min(retry_after, MAX_BACKOFF_S))
                    attempt += 1
                    continue
            time.sleep(min(self.backoff_s * 2**attempt, MAX_BACKOFF_S) * (0.5 + random.random() / 2))
            attempt += 1


def _problem(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except ValueError:
        return {"status": response.status_code, "detail": response.text[:500]}
    return body if isinstance(body, dict) else {"status": response.status_code, "detail": str(body)[:500]}


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None
