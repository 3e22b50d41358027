"""The knowledge base's read tools over the Model Context Protocol (stdio), with the official `mcp`
package, major version 2 (its `MCPServer`, formerly FastMCP).

Usage: python -m kb_server.mcp_server      (or: kkb mcp); settings from KKB_* (KKB_HOME, KKB_CORPUS_DIR)

Tools: search, accelerator_facts, fact_lookup, build_prompt, kernels, search_kernels, get_kernel, documents.
Each answers with the JSON shape of the HTTP route and of `kkb VERB --json` (search: {query, k, hits};
kernels: {kernels}; documents: {documents}; fact_lookup: {accelerator, question, matches}). An unknown
accelerator id in a filter is an error that lists the known ids. The store opens on the first tool call
that needs it, so the handshake is quick.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import threading
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from kb_server import prompt as prompt_builder
from kb_server.api.models import DocumentList, KernelList, SearchResults
from kb_server.api.settings import ServerSettings
from kb_server.factlookup import lookup, resolve_accelerator
from kb_server.facts import AcceleratorFacts, load_all_facts
from kb_server.schemas import DEFAULT_BACKEND, SearchFilters


class _KB:
    """Settings, facts and the store, opened once and shared by the tools."""

    def __init__(self, settings: ServerSettings | None = None):
        self.settings = settings or ServerSettings()
        facts_dir = self.settings.corpus_dir / "accelerators"
        if facts_dir.is_dir():
            load_all_facts(facts_dir)  # an invalid corpus facts file stops start-up, naming file and field
        self._store = None
        self._lock = threading.Lock()

    @property
    def facts(self) -> dict[str, AcceleratorFacts]:
        """The store's facts, re-read when another process ingested facts since the last call."""
        return self.store.accelerators()

    @property
    def store(self):
        with self._lock:
            if self._store is None:
                from kb_server.store import Store

                self._store = Store(self.settings)
            return self._store


def _named_errors(fn):
    """Bad input (unknown accelerator, no matching fact, bad spec) reaches the client with its message."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (LookupError, ValueError) as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def argument_problem(exc: ValidationError) -> str:
    """A tool's argument errors as one line naming each argument (pydantic's own text points at a web page)."""
    parts = []
    for e in exc.errors(include_url=False):
        name = ".".join(str(x) for x in e.get("loc", ())) or "arguments"
        got = "" if e.get("type") == "missing" else f" (got {e.get('input')!r})"
        parts.append(f"argument '{name}': {e.get('msg', 'invalid').lower()}{got}")
    return "; ".join(parts)


class _KBServer(MCPServer):
    """MCPServer whose argument errors read as one line naming the argument."""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{name}: {argument_problem(exc.__cause__)}") from exc.__cause__
            raise


def build_server(settings: ServerSettings | None = None) -> MCPServer:
    kb = _KB(settings)
    server = _KBServer("kernelkb", instructions="Hardware facts, passages and winning kernels for GPU kernel "
                       "writing. Ask fact_lookup for one number; search for passages; build_prompt for a "
                       "whole retrieval-augmented prompt for a KernelBench spec.")

    @server.tool()
    @_named_errors
    def search(query: str, k: int = 8, accelerator: str | None = None, vendor: str | None = None,
               kind: str | None = None) -> dict[str, Any]:
        """Hybrid search over the knowledge base's passages; filters combine with AND."""
        if not 1 <= k <= kb.settings.max_k:
            raise ValueError(f"k must be between 1 and {kb.settings.max_k}")
        filters = SearchFilters(accelerator=accelerator, vendor=vendor, kind=kind)
        hits = kb.store.search(query, k=k, filters=filters)
        return SearchResults(query=query, k=k, hits=hits).model_dump(mode="json")

    @server.tool()
    @_named_errors
    def accelerator_facts(accelerator: str) -> dict[str, Any]:
        """All structured facts of one accelerator (id or alias), each with value, unit and source."""
        return resolve_accelerator(kb.facts, accelerator).model_dump(mode="json")

    @server.tool()
    @_named_errors
    def fact_lookup(accelerator: str, question: str) -> dict[str, Any]:
        """Answer a fact question such as 'shared memory' or 'bf16 peak': value, unit, source, score."""
        return lookup(resolve_accelerator(kb.facts, accelerator), question).model_dump(mode="json")

    @server.tool()
    @_named_errors
    def build_prompt(spec_source: str, accelerator: str, backend: str = DEFAULT_BACKEND, token_budget: int = 6000,
                     extra_queries: list[str] | None = None, retrieval: bool = True) -> dict[str, Any]:
        """A retrieval-augmented prompt for a KernelBench spec (its source; never executed): the target's
        facts, passages for its ops and bottleneck, and part of the nearest library kernel."""
        bundle = prompt_builder.build_prompt(kb.store, spec_source, accelerator, backend, token_budget,
                                             extra_queries=extra_queries or [], retrieval=retrieval)
        return bundle.model_dump(mode="json")

    @server.tool()
    @_named_errors
    def kernels(op_family: str | None = None, backend: str | None = None,
                accelerator: str | None = None) -> dict[str, Any]:
        """Winning kernels in the library, filtered by op family, backend and accelerator."""
        records = kb.store.list_kernels(op_family=op_family, backend=backend, accelerator=accelerator)
        return KernelList(kernels=records).model_dump(mode="json")

    @server.tool()
    @_named_errors
    def search_kernels(query: str, k: int = 4, op_family: str | None = None,
                       backend: str | None = None) -> dict[str, Any]:
        """Library kernels closest to a query (op names or a signature)."""
        records = kb.store.search_kernels(query, k=k, op_family=op_family, backend=backend)
        return KernelList(kernels=records).model_dump(mode="json")

    @server.tool()
    @_named_errors
    def get_kernel(kernel_id: str) -> dict[str, Any]:
        """One kernel record of the library by id."""
        record = kb.store.get_kernel(kernel_id)
        if record is None:
            raise ValueError(f"no kernel with id {kernel_id!r}; the kernels tool lists them")
        return record.model_dump(mode="json")

    @server.tool()
    @_named_errors
    def documents() -> dict[str, Any]:
        """Every document, facts file and kernel file in the knowledge base: name, title, accelerator, kind,
        size and date."""
        return DocumentList(documents=kb.store.documents()).model_dump(mode="json")

    return server


class _CheckedLines:
    """stdin's lines for the stdio transport. A line that is not a JSON-RPC message is answered here, as
    JSON-RPC 2.0 asks (-32700 parse error for a line that is not JSON, -32600 for JSON that is not a message),
    and not passed on: the package's transport only logs it, and the client would wait for an answer."""

    def __init__(self, lines):
        self.lines = lines
        self.write = None  # the transport's write stream, set once it is open

    async def __aiter__(self):
        async for line in self.lines:
            if not line.strip():
                continue
            problem = _message_problem(line)
            if problem is None:
                yield line
            elif self.write is not None:
                await self.write.send(SessionMessage(mcp_types.JSONRPCError(
                    jsonrpc="2.0", id=problem[2], error=mcp_types.ErrorData(code=problem[0], message=problem[1]))))


def _message_problem(line: str) -> tuple[int, str, str | int | None] | None:
    """(code, message, id) for a line that is not a JSON-RPC message, None for one that is."""
    try:
        value = json.loads(line)
    except ValueError as exc:
        return mcp_types.PARSE_ERROR, f"parse error: the line is not JSON ({exc})", None
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        rid = value.get("id") if isinstance(value, dict) else None
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the message"
        return (mcp_types.INVALID_REQUEST, f"invalid request: not a JSON-RPC 2.0 message ({where}: {first['msg']})",
                rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None)
    return None


async def _serve_stdio(server: MCPServer) -> None:
    """MCPServer.run_stdio_async with stdin's lines checked first (_CheckedLines)."""
    lines = _CheckedLines(anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")))
    lowlevel = server._lowlevel_server  # the package's run_stdio_async takes no stdin of ours
    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        lines.write = write_stream
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout carries the protocol
    settings = ServerSettings()
    import torch

    torch.set_num_threads(settings.torch_threads)  # see ServerSettings.torch_threads
    anyio.run(_serve_stdio, build_server(settings))


if __name__ == "__main__":
    main()
