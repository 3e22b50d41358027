"""What the server needs of an ingestor to accept uploads, as an interface: kb_server never imports ingest.

Usage: create_app(settings, ingestor=PipelineIngestor())   # where `kkb serve` is assembled (kernelkb_cli.py)

The ingest package implements it (ingest/upload.py); a server built without one serves reads and
answers uploads with 501, naming what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kb_server.config import KBSettings
from kb_server.store import Store


@dataclass(frozen=True)
class UploadOptions:
    """The upload form's metadata, for files without front matter (front matter wins)."""

    accelerator: tuple[str, ...] = ("any",)
    vendor: str | None = None  # None: inferred from the accelerators' facts
    kind: str = "guide"
    name: str | None = None  # the file's own name, shown in hits, listings and errors
    strict: bool = False  # warnings (unknown fields, kinds, accelerator ids) refuse the file


@dataclass(frozen=True)
class UploadResult:
    chunks_written: int  # chunks embedded and written now
    unchanged: bool  # the same bytes were already ingested (under this name or another)
    problems: list[str] = field(default_factory=list)  # why the file was not ingested ("file:line: field ...")
    warnings: list[str] = field(default_factory=list)  # ingested all the same ("file:line: field ...")
    document_id: str | None = None  # the document that holds these bytes (None: nothing was stored)
    same_as: str | None = None  # the id of another document that already held the same bytes


class Ingestor(Protocol):
    def ingest_file(self, store: Store, path: Path, options: UploadOptions) -> UploadResult:
        """Ingest one stored upload into `store`; problems are returned, not raised."""
        ...

    def document_id(self, path: Path, settings: KBSettings) -> str:
        """The id the ingest gives the document stored at `path` (an upload under home/uploads)."""
        ...
