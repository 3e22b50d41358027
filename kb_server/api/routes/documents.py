"""POST /v1/documents (upload an md, pdf or html file with its metadata), GET /v1/documents,
DELETE /v1/documents/{id}.

An upload is stored under a content-hash name inside `home/uploads` and ingested by the ingest
pipeline (ingest.pipeline.ingest_paths on that one file) under the write lock; the answer comes only
after both are durable, so an acknowledged document survives a crash of the server. Start-up
(kb_server.main) removes what an interrupted upload left: temporaries, and the chunks and file of
an upload whose registry entry was never written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile

from ingest.frontmatter import DocKind, Vendor
from ingest.pipeline import IngestOptions, document_id, id_anchors, ingest_paths
from kb_server.api import uploads
from kb_server.api.deps import ReadAccess, SettingsDep, StoreDep, WriteAccess, WriteLockDep
from kb_server.api.errors import Problem
from kb_server.api.models import DocumentCreated, DocumentSummary

router = APIRouter(prefix="/v1/documents", tags=["documents"])
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_LIST = re.compile(r"[,\s]+")

Text = Annotated[str | None, Form(max_length=2000)]


@router.get("", response_model=list[DocumentSummary], dependencies=[ReadAccess])
def list_documents(store: StoreDep) -> list[DocumentSummary]:
    return [DocumentSummary(document_id=i, file_hash=h) for i, h in sorted(store.document_hashes().items())]


@router.post("", response_model=DocumentCreated, status_code=201, dependencies=[WriteAccess])
def add_document(
    store: StoreDep, settings: SettingsDep, lock: WriteLockDep,
    file: Annotated[UploadFile, File(description="an .md, .pdf or .html file")],
    accelerator: Text = None,  # comma-separated ids, e.g. "h100,h200"; default "any"
    vendor: Text = None,  # nvidia | amd | meta | any; default: inferred from the accelerators
    kind: Text = None,  # arch | isa | guide | playbook | kernel | rules; default "guide"
) -> DocumentCreated:
    """Metadata here applies to PDF, HTML and markdown without front matter; front matter wins."""
    suffix = uploads.suffix_of(file.filename)
    options = _options(accelerator, vendor, kind)
    uploads.check_content(file.file.read(4096), suffix, file.filename or "")
    file.file.seek(0)
    directory = uploads.uploads_dir(settings.home)
    with lock:  # one writer: the stored file, its chunks and its registry entry go in together
        path, file_hash, _ = uploads.save(file.file, directory, suffix, settings.max_upload_bytes)
        try:
            report = ingest_paths(store, [path], options)
        except ValueError as exc:  # IngestError: invalid front matter, naming the line and field
            _discard(path, store)
            raise Problem(422, f"file {file.filename!r}: {exc}", field="file") from exc
        if report.skipped:
            _discard(path, store)
            why = "; ".join(reason for _, reason in report.skipped)
            raise Problem(422, f"file {file.filename!r} could not be ingested: {why}", field="file")
        doc_id = upload_document_id(path, store.settings)
    if doc_id not in store.document_hashes():
        raise Problem(422, f"file {file.filename!r} holds no text to index", field="file")
    return DocumentCreated(document_id=doc_id, file_hash=file_hash, chunks=report.chunks_written,
                           unchanged=report.unchanged > 0)


@router.delete("/{document_id}", status_code=204, dependencies=[WriteAccess])
def delete_document(document_id: str, store: StoreDep, settings: SettingsDep, lock: WriteLockDep) -> None:
    with lock:
        file_hash = store.document_hashes().get(document_id)
        if not store.delete_document(document_id):
            raise Problem(404, f"no document with id {document_id!r}; GET /v1/documents lists them",
                          field="document_id")
        if file_hash and file_hash not in set(store.document_hashes().values()):
            for path in uploads.uploads_dir(settings.home).glob(f"{file_hash}.*"):
                path.unlink(missing_ok=True)


def upload_document_id(path: Path, settings) -> str:
    """The id the ingest pipeline gives a stored upload (its name under the uploads folder, a content hash)."""
    return document_id(path, "doc", id_anchors(settings))


def _discard(path: Path, store) -> None:
    if path.name.split(".", 1)[0] not in set(store.document_hashes().values()):
        path.unlink(missing_ok=True)


def _options(accelerator: str | None, vendor: str | None, kind: str | None) -> IngestOptions:
    """The form's metadata as IngestOptions; 422 naming the field when a value is not allowed."""
    accs = tuple(a for a in _LIST.split(accelerator or "") if a) or ("any",)
    for acc in accs:
        if not _SLUG.match(acc):
            raise Problem(422, f"accelerator id {acc!r} must be lower-case letters, digits, '-' or '_'",
                          field="accelerator")
    if vendor is not None and vendor not in {v.value for v in Vendor}:
        raise Problem(422, f"vendor {vendor!r} is not one of {', '.join(v.value for v in Vendor)}", field="vendor")
    if kind is not None and kind not in {k.value for k in DocKind}:
        raise Problem(422, f"kind {kind!r} is not one of {', '.join(k.value for k in DocKind)}", field="kind")
    return IngestOptions(accelerator=accs, vendor=vendor, kind=kind or "guide")


def recover_uploads(store, home: Path) -> list[Path]:
    """At start-up: drop what interrupted uploads left (temporaries; chunks and files of uploads
    whose registry entry was never written, i.e. that were never acknowledged)."""
    return uploads.sweep(uploads.uploads_dir(home), set(store.document_hashes().values()),
                         on_orphan=lambda path: store.delete_document(upload_document_id(path, store.settings)))
