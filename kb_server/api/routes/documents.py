"""POST /v1/documents (upload an md, pdf or html file with its metadata), GET /v1/documents,
DELETE /v1/documents/{id}.

An upload is stored under a content-hash name inside `home/uploads` and ingested by the ingestor the
app was handed (kb_server.api.ingestor.Ingestor; `kkb serve` hands it the ingest pipeline) under the
write lock; the answer comes only after both are durable, so an acknowledged document survives a crash
of the server. Start-up (kb_server.main) removes what an interrupted upload left: temporaries, and the
chunks and file of an upload whose registry entry was never written. Without an ingestor, uploads
answer 501.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile

from kb_server.api import uploads
from kb_server.api.deps import ReadAccess, SettingsDep, StoreDep, WriteAccess, WriteLockDep
from kb_server.api.errors import Problem
from kb_server.api.ingestor import Ingestor, UploadOptions
from kb_server.api.models import DocumentCreated, DocumentSummary
from kb_server.schemas import normalize_id

router = APIRouter(prefix="/v1/documents", tags=["documents"])
_LIST = re.compile(r"[,\s]+")

Text = Annotated[str | None, Form(max_length=2000)]


@router.get("", response_model=list[DocumentSummary], dependencies=[ReadAccess])
def list_documents(store: StoreDep) -> list[DocumentSummary]:
    return [DocumentSummary(document_id=i, file_hash=h) for i, h in sorted(store.document_hashes().items())]


@router.post("", response_model=DocumentCreated, status_code=201, dependencies=[WriteAccess])
def add_document(
    request: Request, store: StoreDep, settings: SettingsDep, lock: WriteLockDep,
    file: Annotated[UploadFile, File(description="an .md, .pdf or .html file")],
    accelerator: Text = None,  # comma-separated ids, e.g. "h100,h200"; default "any"
    vendor: Text = None,  # any vendor (normalised, e.g. "nvidia", "aurora-silicon"); default: from the facts
    kind: Text = None,  # arch | isa | guide | playbook | kernel | rules, or another word; default "guide"
) -> DocumentCreated:
    """Metadata here applies to PDF, HTML and markdown without front matter; front matter wins."""
    ingestor = _ingestor(request)
    suffix = uploads.suffix_of(file.filename)
    options = _options(accelerator, vendor, kind)
    uploads.check_content(file.file.read(4096), suffix, file.filename or "")
    file.file.seek(0)
    directory = uploads.uploads_dir(settings.home)
    with lock:  # one writer: the stored file, its chunks and its registry entry go in together
        path, file_hash, _ = uploads.save(file.file, directory, suffix, settings.max_upload_bytes)
        result = ingestor.ingest_file(store, path, options)
        if result.problems:  # front matter of the wrong type, naming the line and field; an unreadable file
            _discard(path, store)
            raise Problem(422, f"file {file.filename!r} could not be ingested: {'; '.join(result.problems)}",
                          field="file")
        doc_id = ingestor.document_id(path, store.settings)
    if doc_id not in store.document_hashes():
        raise Problem(422, f"file {file.filename!r} holds no text to index", field="file")
    return DocumentCreated(document_id=doc_id, file_hash=file_hash, chunks=result.chunks_written,
                           unchanged=result.unchanged)


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


def _ingestor(request: Request) -> Ingestor:
    ingestor = getattr(request.app.state, "ingestor", None)
    if ingestor is None:
        raise Problem(501, "this server takes no uploads: it was built without an ingestor (`kkb serve` hands it "
                      "the ingest pipeline; `kkb ingest` adds files to the same store)", field="file",
                      slug="no-ingestor")
    return ingestor


def _discard(path: Path, store) -> None:
    if path.name.split(".", 1)[0] not in set(store.document_hashes().values()):
        path.unlink(missing_ok=True)


def _options(accelerator: str | None, vendor: str | None, kind: str | None) -> UploadOptions:
    """The form's metadata, normalised (any vendor, accelerator id or kind); 422 naming the field when a
    value has nothing to keep (only punctuation)."""
    accs = []
    for raw in (a for a in _LIST.split(accelerator or "") if a):
        acc = normalize_id(raw)
        if not acc or len(acc) > 64:
            raise Problem(422, f"accelerator id {raw!r} has no letters or digits to keep (or is over 64)",
                          field="accelerator")
        accs.append(acc)
    named = {}
    for name, value in (("vendor", vendor), ("kind", kind)):
        if value is not None:
            named[name] = normalize_id(value)
            if not named[name]:
                raise Problem(422, f"{name} {value!r} has no letters or digits to keep", field=name)
    return UploadOptions(accelerator=tuple(accs) or ("any",), vendor=named.get("vendor"),
                         kind=named.get("kind") or "guide")


def recover_uploads(store, home: Path, ingestor: Ingestor | None) -> list[Path]:
    """At start-up: drop what interrupted uploads left (temporaries; chunks and files of uploads
    whose registry entry was never written, i.e. that were never acknowledged). Without an ingestor
    (which knows the ids of uploads) nothing is touched."""
    if ingestor is None:
        return []
    return uploads.sweep(uploads.uploads_dir(home), set(store.document_hashes().values()),
                         on_orphan=lambda path: store.delete_document(ingestor.document_id(path, store.settings)))
