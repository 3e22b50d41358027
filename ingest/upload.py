"""The ingestor the HTTP server is handed for uploads (kb_server.api.ingestor.Ingestor), over the pipeline.

Usage: from ingest.upload import PipelineIngestor; create_app(settings, ingestor=PipelineIngestor())
"""

from __future__ import annotations

from pathlib import Path

from ingest.pipeline import IngestOptions, document_id, id_anchors, ingest_paths
from kb_server.api.ingestor import UploadOptions, UploadResult
from kb_server.config import KBSettings
from kb_server.store import Store


class PipelineIngestor:
    """One uploaded file through ingest.pipeline.ingest_paths."""

    def ingest_file(self, store: Store, path: Path, options: UploadOptions) -> UploadResult:
        report = ingest_paths(store, [path], IngestOptions(accelerator=options.accelerator, vendor=options.vendor,
                                                            kind=options.kind))
        problems = list(report.errors) + [why for _, why in report.skipped]
        return UploadResult(chunks_written=report.chunks_written, unchanged=report.unchanged > 0, problems=problems)

    def document_id(self, path: Path, settings: KBSettings) -> str:
        return document_id(path, "doc", id_anchors(settings))
