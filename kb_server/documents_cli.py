"""The `kkb documents` verb: what the knowledge base holds, file by file, and removing one.

Usage: kkb documents [--kb URL] [--json]          # name, type, title, accelerator, kind, size, date, id
       kkb documents delete ID [--kb URL] [--json] # its chunks (or facts, or kernel) and an upload's stored file

Reads the embedded store under KKB_HOME, or with --kb URL (or KKB_KB_URL) a running `kkb serve` (a delete
there needs KKB_API_KEY unless the server is on loopback). `--json` prints the body of GET /v1/documents.
A document ingested from a local file is removed from the store only: the file stays where it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kb_server.cli import KB_ENV, KB_HELP


def documents(
    action: Annotated[str | None, typer.Argument(help="delete: remove the document ID")] = None,
    document_id: Annotated[str | None, typer.Argument(help="with delete: the id (or a unique prefix) shown "
                                                           "by the listing")] = None,
    kb: Annotated[str | None, typer.Option("--kb", envvar=KB_ENV, help=KB_HELP)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {documents} as JSON (the body of GET "
                                                          "/v1/documents).")] = False,
) -> None:
    """List the documents, facts files and kernel files in the knowledge base; `delete ID` removes one."""
    if action is not None and action != "delete":
        raise typer.BadParameter(f"{action!r}: the only action is `kkb documents delete ID`")
    if action == "delete" and not (document_id or "").strip():
        raise typer.BadParameter("delete: give an id (or a unique prefix of it), or a name, as `kkb documents` "
                                 "lists them")
    try:
        listed = _list(kb)
        if action == "delete":
            _delete(kb, _one(listed, document_id), json_out)
            return
    except typer.Exit:
        raise
    except typer.BadParameter:
        raise
    except Exception as exc:  # KBError or a connection error: its message says what to fix
        if not kb:
            raise
        typer.echo(f"error: the knowledge-base server at {kb}: {exc}", err=True)
        raise typer.Exit(2) from exc
    if json_out:
        from kb_server.api.models import DocumentList

        typer.echo(DocumentList(documents=listed).model_dump_json(indent=2))
        return
    if not listed:
        typer.echo("no documents; `kkb ingest` adds them")
        return
    # one line each, the name last and whole: a narrow terminal wraps it, never cuts it
    typer.echo(f"{'id':<12}  {'type':<8}  {'kind':<8}  {'accelerator':<14}  {'size':>9}  {'ingested':<16}  name (title)")
    for d in listed:
        title = f"  ({d.title})" if d.title and d.title != d.name else ""
        typer.echo(f"{d.document_id[:12]:<12}  {d.type:<8}  {(d.kind or ''):<8}  {','.join(d.accelerator):<14}  "
                   f"{_size(d.size_bytes):>9}  {(d.ingested_at or '')[:16].replace('T', ' '):<16}  {d.name}{title}")


def _list(kb: str | None):
    if kb:
        from kb_server.client import KBClient

        with KBClient(kb) as client:
            return client.documents()
    from kb_server.config import get_settings
    from kb_server.store import Store

    return Store(get_settings()).documents()


def _one(listed, wanted: str):
    """The document `wanted` names: its id, a unique prefix of it, or its name as the listing shows it (the
    path it was ingested from)."""
    matches = ([d for d in listed if d.document_id == wanted]
               or [d for d in listed if d.name == wanted or str(getattr(d, "source", "")) == wanted]
               or [d for d in listed if d.document_id.startswith(wanted)])
    if len(matches) != 1:
        shown = ", ".join(f"{d.document_id[:12]} ({d.name})" for d in matches[:5])
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        why = f"several match: {shown}{more}" if matches else "none matches; `kkb documents` lists them"
        raise typer.BadParameter(f"document {wanted!r}: {why}")
    return matches[0]


def _delete(kb: str | None, doc, json_out: bool) -> None:
    if kb:
        from kb_server.client import KBClient
        from kb_server.config import get_settings

        with KBClient(kb, api_key=get_settings().api_key) as client:
            client.delete_document(doc.document_id)
    else:
        from kb_server.api.uploads import discard_unreferenced
        from kb_server.config import get_settings
        from kb_server.store import Store

        store = Store(get_settings())
        source = store.registry().get(doc.document_id, {}).get("source", "")
        store.delete_document(doc.document_id)
        if source:  # an upload's stored file goes with it; a local file is the user's and stays
            sources = {m.get("source") for m in store.registry().values()}
            discard_unreferenced(Path(source), sources, Path(store.settings.home) / "uploads")
    if json_out:
        typer.echo(json.dumps({"deleted": doc.document_id, "name": doc.name}))
    else:
        typer.echo(f"deleted {doc.name} ({doc.document_id})")


def _size(n: int | None) -> str:
    if n is None:
        return ""
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""
