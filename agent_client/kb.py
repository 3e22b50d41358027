"""The knowledge base as the agent client sees it: one small Protocol, two implementations.

Usage: kb = open_kb(url=None, home=Path("~/.local/share/kernelkb"))   # LocalKB over the embedded store
       kb = open_kb(url="http://127.0.0.1:8700")                     # HttpKB over the HTTP API

LocalKB wraps kb_server.store.Store (and kb_server.prompt.build_prompt); HttpKB wraps
kb_server.client.KBClient. Both are imported lazily so that a session that talks to a remote
server needs neither chromadb nor sentence-transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kb_server.facts import AcceleratorFacts
    from kb_server.prompt import PromptBundle
    from kb_server.schemas import Hit, KernelRecord, SearchFilters


@runtime_checkable
class KnowledgeBase(Protocol):
    def search(self, query: str, k: int = 8, filters: SearchFilters | None = None) -> list[Hit]: ...

    def accelerator(self, accelerator_id: str) -> AcceleratorFacts: ...

    def prompt(
        self, spec_source: str, accelerator: str, backend: str, token_budget: int, extra_queries=(),
        retrieval: bool = True,
    ) -> PromptBundle: ...

    def kernels(
        self, op_family: str | None = None, backend: str | None = None, accelerator: str | None = None
    ) -> list[KernelRecord]: ...

    def search_kernels(
        self, query: str, k: int = 4, op_family: str | None = None, backend: str | None = None
    ) -> list[KernelRecord]: ...

    def add_kernel(self, record: KernelRecord) -> str: ...


class UnknownAcceleratorError(KeyError):
    """An accelerator id that the knowledge base has no facts for; the message lists the known ids."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class LocalKB:
    """The embedded store (chromadb under KKB_HOME) in this process."""

    def __init__(self, store: Any):
        self.store = store

    @classmethod
    def from_home(cls, home: Path | None = None) -> LocalKB:
        from kb_server.config import KBSettings
        from kb_server.store import Store

        settings = KBSettings(home=home) if home is not None else KBSettings()
        return cls(Store(settings))

    def search(self, query, k=8, filters=None):
        return self.store.search(query, k=k, filters=filters)

    def accelerator(self, accelerator_id):
        facts = self.store.accelerators()
        found = _find_accelerator(facts, accelerator_id)
        if found is None:
            raise UnknownAcceleratorError(
                f"accelerator {accelerator_id!r} is not in the knowledge base; known: {sorted(facts)}"
            )
        return found

    def prompt(self, spec_source, accelerator, backend, token_budget, extra_queries=(), retrieval=True):
        from kb_server.prompt import build_prompt

        return build_prompt(
            self.store, spec_source, accelerator, backend,
            token_budget=token_budget, extra_queries=list(extra_queries), retrieval=retrieval,
        )

    def kernels(self, op_family=None, backend=None, accelerator=None):
        return self.store.list_kernels(op_family=op_family, backend=backend, accelerator=accelerator)

    def search_kernels(self, query, k=4, op_family=None, backend=None):
        return self.store.search_kernels(query, k=k, op_family=op_family, backend=backend)

    def add_kernel(self, record):
        return self.store.add_kernel(record)


class HttpKB:
    """The KB server over HTTP, through kb_server.client.KBClient."""

    def __init__(self, client: Any):
        self.client = client

    @classmethod
    def from_url(cls, url: str, api_key: str | None = None) -> HttpKB:
        from kb_server.client import KBClient

        return cls(KBClient(url, api_key=api_key) if api_key else KBClient(url))

    def search(self, query, k=8, filters=None):
        return self.client.search(query, k=k, filters=filters)

    def accelerator(self, accelerator_id):
        return self.client.accelerator(accelerator_id)

    def prompt(self, spec_source, accelerator, backend, token_budget, extra_queries=(), retrieval=True):
        return self.client.prompt(
            spec_source, accelerator, backend, token_budget=token_budget, extra_queries=list(extra_queries),
            retrieval=retrieval,
        )

    def kernels(self, op_family=None, backend=None, accelerator=None):
        return self.client.kernels(op_family=op_family, backend=backend, accelerator=accelerator)

    def search_kernels(self, query, k=4, op_family=None, backend=None):
        return self.client.search_kernels(query, k=k, op_family=op_family, backend=backend)

    def add_kernel(self, record):
        return self.client.add_kernel(record)


def _find_accelerator(facts: dict, accelerator_id: str):
    wanted = accelerator_id.lower()
    if wanted in facts:
        return facts[wanted]
    for item in facts.values():
        if wanted in (a.lower() for a in item.aliases):
            return item
    return None


def open_kb(url: str | None = None, home: Path | None = None, api_key: str | None = None) -> KnowledgeBase:
    """HttpKB when a URL is given, else LocalKB over the embedded store under `home`."""
    if url:
        return HttpKB.from_url(url, api_key=api_key)
    return LocalKB.from_home(home)
