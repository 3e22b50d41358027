"""POST /v1/documents (upload a document, md, pdf or html, or an accelerator facts file, yaml, with its
metadata), GET /v1/documents (every file in the store: name, title, accelerator, kind, size, date),
DELETE /v1/documents/{id} (its chunks or facts, and an upload's stored file).

An upload keeps its own name (shown in hits, listings and errors) and is stored under a content-hash
name inside `home/uploads`, then ingested by the ingestor the app was handed (kb_server.api.ingestor.
Ingestor; `kkb serve` hands it the ingest pipeline) under the write lock; the answer comes only after
both are durable, so an acknowledged document survives a crash of the server. The same bytes are stored
once: an upload of content the store already holds (uploaded, or ingested from a local file) answers
with that document. A new upload under the name of an earlier one replaces it. Start-up (kb_server.main)
removes what an interrupted upload left: temporaries, and the chunks and file of an upload whose registry
entry was never written. Without an ingestor, uploads answer 501.
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
from kb_server.api.models import DocumentCreated, DocumentList
from kb_server.schemas import normalize_id

router = APIRouter(prefix="/v1/documents", tags=["documents"])
_LIST = re.compile(r"[,\s]+")

Text = Annotated[str | None, Form(max_length=2000)]


@router.get("", response_model=DocumentList, dependencies=[ReadAccess])
def list_documents(store: StoreDep) -> DocumentList:
    """Every document, facts file and kernel file in the store, by name."""
    return DocumentList(documents=store.documents())


@router.post("", response_model=DocumentCreated, status_code=201, dependencies=[WriteAccess])
def add_document(
    request: Request, store: StoreDep, settings: SettingsDep, lock: WriteLockDep,
    file: Annotated[UploadFile, File(description="an .md, .pdf or .html document, or a .yaml facts file")],
    accelerator: Text = None,  # comma-separated ids, e.g. "h100,h200"; default "any"
    vendor: Text = None,  # any vendor (normalised, e.g. "nvidia", "aurora-silicon"); default: from the facts
    kind: Text = None,  # arch | isa | guide | playbook | kernel | rules, or another word; default "guide"
    strict: Annotated[bool, Form()] = False,  # warnings (unknown fields, kinds, accelerator ids) refuse it
) -> DocumentCreated:
    """Metadata here applies to PDF, HTML and markdown without front matter; front matter wins."""
    ingestor = _ingestor(request)
    suffix = uploads.suffix_of(file.filename)
    name = uploads.display_name(file.filename, suffix)
    options = _options(accelerator, vendor, kind, name, strict)
    uploads.check_content(file.file.read(4096), suffix, name)
    file.file.seek(0)
    directory = uploads.uploads_dir(settings.home)
    with lock:  # one writer: the stored file, its chunks and its registry entry go in together
        path, file_hash, _ = uploads.save(file.file, directory, suffix, settings.max_upload_bytes, name)
        result = ingestor.ingest_file(store, path, options)
        if result.problems or result.document_id is None:  # the detail names the file, line and field
            _discard(path, store)
            why = "; ".join(result.problems) or f"{name}: {uploads.NO_TEXT}"
            raise Problem(422, f"file {name!r} could not be ingested: {why}", field="file")
        registry = store.registry()
        if result.same_as is not None:  # the same bytes are stored already: this copy goes
            _discard(path, store)
        replaced = [] if result.same_as else _replace_earlier(store, registry, directory, name, result.document_id)
    held = registry.get(result.document_id, {})
    return DocumentCreated(document_id=result.document_id, name=str(held.get("name") or name), file_hash=file_hash,
                           chunks=result.chunks_written, unchanged=result.unchanged, warnings=result.warnings,
                           same_as=result.same_as, replaced=replaced)


@router.delete("/{document_id}", status_code=204, dependencies=[WriteAccess])
def delete_document(document_id: str, store: StoreDep, settings: SettingsDep, lock: WriteLockDep) -> None:
    """Removes the document's chunks (a kernel file's record, a facts file's facts) and, for an upload, the
    stored file; a file of a local ingest stays where it is (the store never deletes a user's files)."""
    with lock:
        source = store.registry().get(document_id, {}).get("source", "")
        if not store.delete_document(document_id):
            raise Problem(404, f"no document with id {document_id!r}; GET /v1/documents lists them",
                          field="document_id")
        if source:
            _discard(Path(source), store, uploads.uploads_dir(settings.home))


def _ingestor(request: Request) -> Ingestor:
    ingestor = getattr(request.app.state, "ingestor", None)
    if ingestor is None:
        raise Problem(501, "this server takes no uploads: it was built without an ingestor (`kkb serve` hands it "
                      "the ingest pipeline; `kkb ingest` adds files to the same store)", field="file",
                      slug="no-ingestor")
    return ingestor


def _discard(path: Path, store, directory: Path | None = None) -> None:
    """Remove a stored upload that no document was read from (never a file outside the uploads folder)."""
    sources = {m.get("source") for m in store.registry().values()}
    uploads.discard_unreferenced(path, sources, directory or path.parent)


def _replace_earlier(store, registry: dict[str, dict], directory: Path, name: str, keep: str) -> list[str]:
    """Earlier uploads under the same name go (their chunks or facts, then their files): the new one
    replaces them, as a changed local file replaces what it held. Runs after the new one is durable."""
    replaced = []
    for document_id, meta in sorted(registry.items()):
        source = Path(meta.get("source", ""))
        if document_id != keep and meta.get("name") == name and source.parent.resolve() == directory.resolve():
            store.delete_document(document_id)
            _discard(source, store, directory)
            replaced.append(document_id)
    return replaced


def _options(accelerator: str | None, vendor: str | None, kind: str | None, name: str,
             strict: bool) -> UploadOptions:
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
    for field_name, value in (("vendor", vendor), ("kind", kind)):
        if value is not None:
            named[field_name] = normalize_id(value)
            if not named[field_name]:
                raise Problem(422, f"{field_name} {value!r} has no letters or digits to keep", field=field_name)
    return UploadOptions(accelerator=tuple(accs) or ("any",), vendor=named.get("vendor"),
                         kind=named.get("kind") or "guide", name=name, strict=strict)


def recover_uploads(store, home: Path, ingestor: Ingestor | None) -> list[Path]:
    """At start-up: drop what interrupted uploads left (temporaries; chunks and files of uploads
    whose registry entry was never written, i.e. that were never acknowledged). Without an ingestor
    (which knows the ids of uploads) nothing is touched."""
    if ingestor is None:
        return []
    directory = uploads.uploads_dir(home)
    keep = {Path(s).name for s in store.document_sources().values() if s and Path(s).parent == directory}
    return uploads.sweep(directory, keep,
                         on_orphan=lambda path: store.delete_document(ingestor.document_id(path, store.settings)))
