"""The HTTP server's settings: the knowledge base's settings plus the server's limits (env prefix KKB_).

Usage: ServerSettings(home=tmp_path, api_key="secret", max_upload_bytes=1 << 20)
"""

from __future__ import annotations

from pydantic import Field

from kb_server.config import KBSettings


class ServerSettings(KBSettings):
    """KBSettings and what only the server needs; every limit answers with a 4xx naming the field."""

    read_requires_key: bool = False  # KKB_READ_REQUIRES_KEY: reads need the bearer token too
    max_request_bytes: int = Field(default=1 << 20, ge=1024)  # JSON bodies; a spec or a kernel fits in 1 MiB
    max_upload_bytes: int = Field(default=20 << 20, ge=1024)  # one uploaded document (a datasheet PDF)
    max_query_chars: int = Field(default=2000, ge=1)  # a search query; longer ones are not questions
    max_spec_chars: int = Field(default=200_000, ge=1)  # a KernelBench spec's source
    max_token_budget: int = Field(default=100_000, ge=1)  # /v1/prompt token_budget
    # torch intra-op threads of the server process. Concurrent requests already run in parallel
    # threads; with 2+ OpenMP threads each, a busy machine spin-waits (a query took 1.5 s, not 75 ms).
    torch_threads: int = Field(default=1, ge=1)
