"""The `kkb ingest` verb.

Usage: kkb ingest [PATH...] [--accelerator h100] [--vendor nvidia] [--kind guide] [--prune] [--strict] [--json]
       kkb ingest path/to/accelerators/new-chip.yaml     # an accelerator's facts, answered at once
       kkb ingest notes/ chip.yaml --kb http://host:8700  # upload documents and facts files to a running server

With no PATH, the corpus that ships with kernelkb is ingested. Files that cannot be read as what they are
(malformed YAML, a key written twice, a field of the wrong type, a fact without its unit or source) are
listed with file, line and field; the others are ingested; the exit code is 1. Warnings (a front matter
field the schema does not know, an unusual kind, an accelerator id without facts) are listed too, and
with --strict they refuse the file. With --kb (or KKB_KB_URL) documents (md, pdf, html) and accelerator
facts files (yaml) go to a running `kkb serve` through its upload route, under their own names (writes
need KKB_API_KEY unless the server is on loopback); kernels are ingested where the server's store lives.
A progress bar shows on stderr while a long ingest reads and embeds, except under --json.
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

from ingest.pipeline import IngestError, IngestOptions, IngestReport, ingest_paths


def ingest(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Files or folders to ingest (md, pdf, html, txt, kernel+yaml, facts yaml); default: the bundled corpus.")
    ] = None,
    accelerator: Annotated[list[str] | None, typer.Option(
        help="Accelerator id(s) for files without front matter (repeat or comma-separate); default any.")] = None,
    vendor: Annotated[str | None, typer.Option(
        help="Vendor for files without front matter; default: inferred from the accelerators' facts.")] = None,
    kind: Annotated[str, typer.Option(help="Kind for files without front matter: arch, isa, guide, playbook, "
                                           "kernel, rules, or another word.")] = "guide",
    prune: Annotated[bool, typer.Option(help="Delete stored documents whose files are gone.")] = False,
    strict: Annotated[bool, typer.Option(help="Refuse a file that has warnings (an unknown front matter field, "
                                              "kind, accelerator id or vendor) instead of ingesting it.")] = False,
    kb: Annotated[str | None, typer.Option("--kb", envvar="KKB_KB_URL", help=(
        "a running knowledge-base server (`kkb serve`), e.g. http://host:8700, to upload documents and facts "
        "files to; default: the embedded store"))] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON (no progress bar).")] = False,
) -> None:
    """Ingest documents, kernels and accelerator facts into the knowledge base (unchanged files are skipped)."""
    from kb_server.config import bundled_corpus_dir, get_settings
    from kb_server.store import Store, StoreError

    err = Console(stderr=True)
    accs = tuple(a.strip() for item in (accelerator or ["any"]) for a in item.split(",") if a.strip())
    if kb:
        if prune or not paths:
            raise typer.BadParameter("with --kb, name the documents to upload (no --prune: the server's store "
                                     "is pruned where it lives)")
        _upload(kb, paths, accs, vendor, kind, strict, json_out, err)
        return
    options = IngestOptions(accelerator=accs or ("any",), vendor=vendor, kind=kind, prune=prune, strict=strict)
    started = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, transient=True, disable=json_out) as bar:

        def progress(label: str, total: int):
            task = bar.add_task(label, total=total)
            return lambda n: bar.advance(task, n)

        try:
            report = ingest_paths(Store(get_settings()), paths or [bundled_corpus_dir()], options,
                                  progress=None if json_out else progress)
        except (IngestError, StoreError) as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from exc
    _print_problems(report, err)
    summary = {"written": len(report.written), "unchanged": report.unchanged, "deleted": len(report.deleted),
               "kernels": len(report.kernels), "facts": len(report.facts), "chunks_embedded": report.chunks_written,
               "skipped": len(report.skipped), "errors": len(report.errors), "warnings": len(report.warnings),
               "seconds": round(time.perf_counter() - started, 2)}
    if json_out:
        typer.echo(json.dumps({**summary, "written_sources": report.written, "deleted_sources": report.deleted,
                               "facts_ids": report.facts, "skipped_files": report.skipped,
                               "error_lines": report.errors, "warning_lines": report.warnings,
                               "same_content": report.duplicates}, indent=2))
    else:
        for source in report.deleted:  # what --prune removed, by name: a deletion is never only a count
            typer.echo(f"deleted {source} (its file is gone)")
        typer.echo(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in summary.items()))
    if report.errors:
        raise typer.Exit(1)


def _print_problems(report: IngestReport, err: Console) -> None:
    def lines(head: str, items: list[str]) -> None:
        err.print(head, highlight=False)
        for line in items:
            err.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)

    if report.duplicates:
        lines(f"{len(report.duplicates)} file(s) hold the same content as a stored document (stored once):",
              [f"{path}: the same bytes as document {held}" for path, held in report.duplicates])
    if report.warnings:
        lines(f"[yellow]warning:[/yellow] {len(report.warnings)} warning(s), ingested all the same "
              "(--strict refuses them):", report.warnings)
    if report.skipped:
        lines(f"[yellow]warning:[/yellow] skipped {len(report.skipped)} file(s):",
              [f"{path}: {why}" for path, why in report.skipped])
    if report.errors:
        lines(f"[red]error:[/red] {len(report.errors)} file(s) not ingested; fix them and ingest again:",
              report.errors)


DOCUMENT_SUFFIXES = (".md", ".markdown", ".pdf", ".html", ".htm", ".txt")  # what the server's upload route ingests
FACTS_SUFFIXES = (".yaml", ".yml")  # ... and accelerator facts files


def _uploadable(path: Path) -> list[tuple[Path, str]]:
    """(file, the name it is uploaded under) for the documents and facts files under `path`."""
    from ingest.facts import is_facts_file

    if not path.is_dir():
        return [(path, path.name)]
    out = []
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        if any(part.startswith(".") for part in f.relative_to(path).parts):
            continue
        suffix = f.suffix.lower()
        if suffix in DOCUMENT_SUFFIXES or (suffix in FACTS_SUFFIXES and is_facts_file(f)):
            out.append((f, f.relative_to(path).as_posix()))
    return out


def _upload(kb: str, paths: list[Path], accelerator: tuple[str, ...], vendor: str | None, kind: str, strict: bool,
            json_out: bool, err: Console) -> None:
    """Each document and facts file under PATHS through POST /v1/documents; other files are named, not sent."""
    import httpx

    from kb_server.client import KBClient, KBError
    from kb_server.config import get_settings

    files, errors, warnings = [], [], []
    for path in paths:
        if not path.exists():
            errors.append(f"{path}: no such file or directory")
            continue
        for f, name in _uploadable(path):
            if f.suffix.lower() in DOCUMENT_SUFFIXES + FACTS_SUFFIXES:
                files.append((f, name))
            else:  # a file named on the command line that cannot be uploaded
                errors.append(f"{f}: a server takes documents (md, pdf, html, txt) and accelerator facts files (yaml); "
                              "ingest kernels where its store lives")
    written, unchanged, chunks, ids = 0, 0, 0, []
    started = time.perf_counter()
    with KBClient(kb, api_key=get_settings().api_key) as client:
        for f, name in files:
            try:
                created = client.add_document(f, accelerator=[a for a in accelerator if a != "any"],
                                              vendor=vendor, kind=kind, name=name, strict=strict)
            except KBError as exc:  # the server's detail names the file, the line and the field
                errors.append(str(exc.problem.get("detail")) if exc.status == 422 else f"{f}: {exc}")
                continue
            except (httpx.HTTPError, OSError) as exc:
                errors.append(f"{f}: {exc}")
                continue
            ids.append(created.document_id)
            warnings += created.warnings
            unchanged += created.unchanged
            written += not created.unchanged
            chunks += created.chunks
    report = IngestReport(errors=errors, warnings=warnings)
    _print_problems(report, err)
    summary = {"server": kb, "written": written, "unchanged": unchanged, "chunks_embedded": chunks,
               "errors": len(errors), "warnings": len(warnings), "seconds": round(time.perf_counter() - started, 2)}
    if json_out:
        typer.echo(json.dumps({**summary, "document_ids": ids, "error_lines": errors, "warning_lines": warnings},
                              indent=2))
    else:
        typer.echo(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in summary.items()))
    if errors:
        raise typer.Exit(1)
