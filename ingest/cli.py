"""The `kkb ingest` verb.

Usage: kkb ingest [PATH...] [--accelerator h100] [--vendor nvidia] [--kind guide] [--prune] [--json]
       kkb ingest path/to/accelerators/new-chip.yaml     # an accelerator's facts, answered at once
       kkb ingest notes/ --kb http://host:8700           # upload md, pdf and html files to a running server

With no PATH, the corpus that ships with kernelkb is ingested. Files that cannot be read as what they are
(malformed YAML, a field of the wrong type, a fact without its unit or source) are listed with file, line
and field; the others are ingested; the exit code is 1. With --kb (or KKB_KB_URL) the documents go to a
running `kkb serve` through its upload route (writes need KKB_API_KEY unless the server is on loopback);
kernels and facts files are ingested where the server's store lives.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ingest.pipeline import IngestError, IngestOptions, ingest_paths


def ingest(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Files or folders to ingest (md, pdf, html, kernel+yaml); default: the bundled corpus.")] = None,
    accelerator: Annotated[list[str] | None, typer.Option(
        help="Accelerator id(s) for files without front matter (repeat or comma-separate); default any.")] = None,
    vendor: Annotated[str | None, typer.Option(
        help="Vendor for files without front matter; default: inferred from the accelerators' facts.")] = None,
    kind: Annotated[str, typer.Option(help="Kind for files without front matter: arch, isa, guide, playbook, "
                                           "kernel, rules, or another word.")] = "guide",
    prune: Annotated[bool, typer.Option(help="Delete stored documents whose files are gone.")] = False,
    kb: Annotated[str | None, typer.Option("--kb", envvar="KKB_KB_URL", help=(
        "a running knowledge-base server (`kkb serve`), e.g. http://host:8700, to upload documents to; "
        "default: the embedded store"))] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Ingest documents and kernels into the knowledge base (unchanged files are skipped)."""
    from kb_server.config import bundled_corpus_dir, get_settings
    from kb_server.store import Store, StoreError

    err = Console(stderr=True)
    accs = tuple(a.strip() for item in (accelerator or ["any"]) for a in item.split(",") if a.strip())
    if kb:
        if prune or not paths:
            raise typer.BadParameter("with --kb, name the documents to upload (no --prune: the server's store "
                                     "is pruned where it lives)")
        _upload(kb, paths, accs, vendor, kind, json_out, err)
        return
    options = IngestOptions(accelerator=accs or ("any",), vendor=vendor, kind=kind, prune=prune)
    started = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, transient=True) as bar:

        def progress(label: str, total: int):
            task = bar.add_task(label, total=total)
            return lambda n: bar.advance(task, n)

        try:
            report = ingest_paths(Store(get_settings()), paths or [bundled_corpus_dir()], options,
                                  progress=progress)
        except (IngestError, StoreError) as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from exc
    if report.skipped:
        err.print(f"[yellow]warning:[/yellow] skipped {len(report.skipped)} file(s):", highlight=False)
        for path, why in report.skipped:
            err.print(f"  {path}: {why}", markup=False, highlight=False, soft_wrap=True)
    if report.errors:
        err.print(f"[red]error:[/red] {len(report.errors)} file(s) not ingested; fix them and ingest again:",
                  highlight=False)
        for line in report.errors:
            err.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    summary = {"written": len(report.written), "unchanged": report.unchanged, "deleted": len(report.deleted),
               "kernels": len(report.kernels), "facts": len(report.facts), "chunks_embedded": report.chunks_written,
               "skipped": len(report.skipped), "errors": len(report.errors),
               "seconds": round(time.perf_counter() - started, 2)}
    if json_out:
        typer.echo(json.dumps({**summary, "written_sources": report.written, "deleted_sources": report.deleted,
                               "facts_ids": report.facts, "skipped_files": report.skipped,
                               "error_lines": report.errors}, indent=2))
    else:
        typer.echo(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in summary.items()))
    if report.errors:
        raise typer.Exit(1)


UPLOADABLE = (".md", ".markdown", ".pdf", ".html", ".htm")  # what the server's upload route accepts


def _upload(kb: str, paths: list[Path], accelerator: tuple[str, ...], vendor: str | None, kind: str,
            json_out: bool, err: Console) -> None:
    """Each md, pdf and html file under PATHS through POST /v1/documents; other files are named, not sent."""
    import httpx

    from kb_server.client import KBClient, KBError
    from kb_server.config import get_settings

    files, errors = [], []
    for path in paths:
        found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in found:
            if f.suffix.lower() in UPLOADABLE:
                files.append(f)
            elif not path.is_dir():  # a file named on the command line that cannot be uploaded
                errors.append(f"{f}: a server takes md, pdf and html uploads; ingest kernels and facts files "
                              "where its store lives")
    written, unchanged, chunks, ids = 0, 0, 0, []
    started = time.perf_counter()
    with KBClient(kb, api_key=get_settings().api_key) as client:
        for f in files:
            try:
                created = client.add_document(f, accelerator=[a for a in accelerator if a != "any"],
                                              vendor=vendor, kind=kind)
            except (KBError, httpx.HTTPError, OSError) as exc:  # KBError names the field and what to fix
                errors.append(f"{f}: {exc}")
                continue
            ids.append(created.document_id)
            unchanged += created.unchanged
            written += not created.unchanged
            chunks += created.chunks
    for line in errors:
        err.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    summary = {"server": kb, "written": written, "unchanged": unchanged, "chunks_embedded": chunks,
               "errors": len(errors), "seconds": round(time.perf_counter() - started, 2)}
    if json_out:
        typer.echo(json.dumps({**summary, "document_ids": ids, "error_lines": errors}, indent=2))
    else:
        typer.echo(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in summary.items()))
    if errors:
        raise typer.Exit(1)
