"""The ingestor the HTTP server is handed for uploads (kb_server.api.ingestor.Ingestor), over the pipeline.

Usage: from ingest.upload import PipelineIngestor; create_app(settings, ingestor=PipelineIngestor())

An upload is a document (md, pdf, html) or an accelerator facts file (yaml), ingested as `kkb ingest`
ingests a file, under its own name (kept in hits, listings and errors; the bytes are stored under their
hash).
"""

from __future__ import annotations

from pathlib import Path

from ingest.facts import FACTS_SUFFIXES
from ingest.pipeline import IngestOptions, document_id, id_anchors, ingest_paths
from kb_server.api.ingestor import UploadOptions, UploadResult
from kb_server.config import KBSettings
from kb_server.store import Store


class PipelineIngestor:
    """One uploaded file through ingest.pipeline.ingest_paths."""

    def ingest_file(self, store: Store, path: Path, options: UploadOptions) -> UploadResult:
        report = ingest_paths(store, [path], IngestOptions(accelerator=options.accelerator, vendor=options.vendor,
                                                            kind=options.kind, strict=options.strict,
                                                            name=options.name))
        problems = list(report.errors) + [f"{shown}: {why}" for shown, why in report.skipped]
        if problems:
            return UploadResult(0, False, problems, report.warnings)
        if report.duplicates:
            same_as = report.duplicates[0][1]
            return UploadResult(0, True, [], report.warnings, document_id=same_as, same_as=same_as)
        return UploadResult(report.chunks_written, report.unchanged > 0, [], report.warnings,
                            document_id=self.document_id(path, store.settings))

    def document_id(self, path: Path, settings: KBSettings) -> str:
        kind = "facts" if path.suffix.lower() in FACTS_SUFFIXES else "doc"
        return document_id(path, kind, id_anchors(settings))
