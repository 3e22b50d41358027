"""The `kkb search` and `kkb kernels` verbs.

Usage: kkb search "wgmma tile shapes" [-k 8] [--accelerator h100] [--vendor nvidia] [--kind isa]
                  [--mode hybrid|dense|lexical] [--kb URL] [--json]
       kkb kernels [--op-family softmax] [--backend triton] [--accelerator h100] [--kb URL] [--json]
       kkb kernels show ID [--json]          # one record: where it wins, where it loses, where it is untested

Both read the embedded store under KKB_HOME, or with --kb URL (or KKB_KB_URL) a running `kkb serve`.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

KB_HELP = "a running knowledge-base server (`kkb serve`), e.g. http://host:8700; default: the embedded store"
KB_ENV = "KKB_KB_URL"
EMPTY_STORE_HINT = ("the knowledge base holds no documents: `kkb ingest` adds the corpus that ships with kernelkb "
                    "(documents, accelerator facts, library kernels)")


class _Remote:
    """The store's read calls that these verbs make, answered by a running server."""

    def __init__(self, url: str):
        from kb_server.client import KBClient

        self.client = KBClient(url)

    def search(self, query, k, filters, mode):
        return self.client.search(query, k=k, filters=filters, mode=mode)

    def stats(self) -> dict:
        return self.client.stats()

    def list_kernels(self, op_family=None, backend=None, accelerator=None):
        return self.client.kernels(op_family=op_family, backend=backend, accelerator=accelerator)

    def get_kernel(self, kernel_id: str):
        from kb_server.client import KBError

        try:
            return self.client.kernel(kernel_id)
        except KBError as exc:
            if exc.status == 404:
                return None
            raise


def _store(kb: str | None = None):
    if kb:
        return _Remote(kb)
    from kb_server.config import get_settings
    from kb_server.store import Store

    return Store(get_settings())


def empty_store_hint(kb: str | None = None) -> str | None:
    """How to fill the knowledge base when it holds no documents (None when it holds some, or cannot say):
    why a search finds nothing and a prompt has no passages. Shown on stderr, so --json stays valid."""
    try:
        documents = _store(kb).stats().get("documents")
    except Exception:  # noqa: BLE001 - a hint only: the answer that was asked for stands without it
        return None
    return EMPTY_STORE_HINT if documents == 0 else None


def _unreachable(kb: str, exc: Exception) -> typer.Exit:
    typer.echo(f"error: the knowledge-base server at {kb}: {exc}", err=True)
    return typer.Exit(2)


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", "--k", min=1, help="How many hits.")] = 8,
    accelerator: Annotated[str | None, typer.Option(help="Accelerator id (documents for 'any' match too).")] = None,
    vendor: Annotated[str | None, typer.Option(help="nvidia | amd | meta | any")] = None,
    kind: Annotated[str | None, typer.Option(help="arch | isa | guide | playbook | kernel | rules")] = None,
    mode: Annotated[str, typer.Option(help="hybrid | dense | lexical")] = "hybrid",
    kb: Annotated[str | None, typer.Option("--kb", envvar=KB_ENV, help=KB_HELP)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {query, k, hits} as JSON: the body of POST "
                                                          "/v1/search.")] = False,
) -> None:
    """Search the knowledge base (dense + BM25, fused by reciprocal rank)."""
    from kb_server.api.models import SearchResults
    from kb_server.client import KBError
    from kb_server.schemas import SearchFilters
    from kb_server.search import UnknownAcceleratorFilter

    try:
        hits = _store(kb).search(query, k=k, filters=SearchFilters(accelerator=accelerator, vendor=vendor, kind=kind),
                                 mode=mode)
    except UnknownAcceleratorFilter as exc:
        raise typer.BadParameter(str(exc), param_hint="--accelerator") from exc
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except KBError as exc:
        if exc.status == 422:  # a bad argument, named by the server (an unknown accelerator lists the known ids)
            hint = "--accelerator" if exc.field == "filters.accelerator" else None
            raise typer.BadParameter(str(exc.problem.get("detail", exc)), param_hint=hint) from exc
        raise _unreachable(kb, exc) from exc
    except Exception as exc:  # a connection error from a server: its message says what to fix
        if not kb:
            raise
        raise _unreachable(kb, exc) from exc
    hint = None if hits else empty_store_hint(kb)
    if hint:
        typer.echo(hint, err=True)
    if json_out:
        typer.echo(SearchResults(query=query, k=k, hits=hits).model_dump_json(indent=2))
        return
    if not hits:
        typer.echo("no hits")
        return
    console = Console()
    for rank, hit in enumerate(hits, start=1):
        c = hit.chunk
        dense = f"{hit.dense_score:.3f}" if hit.dense_score is not None else "-"
        lexical = f"{hit.lexical_score:.2f}" if hit.lexical_score is not None else "-"
        console.print(f"[bold]{rank}. {' > '.join(c.heading_path)}[/bold]  [dim]{c.source}  "
                      f"score {hit.score:.4f} (dense {dense}, bm25 {lexical})  "
                      f"{','.join(c.accelerator)}/{c.vendor}/{c.kind}[/dim]", highlight=False)
        text = c.text if len(c.text) <= 600 else c.text[:600] + " ..."
        console.print(text, markup=False, highlight=False)
        console.print()


def kernels(
    action: Annotated[str | None, typer.Argument(help="show: one record, with where it wins")] = None,
    kernel_id: Annotated[str | None, typer.Argument(help="with show: the record's id, a unique prefix of it, or "
                                                        "its name")] = None,
    op_family: Annotated[str | None, typer.Option(help="e.g. softmax")] = None,
    backend: Annotated[str | None, typer.Option(help="triton | cuda | cute | hip")] = None,
    accelerator: Annotated[str | None, typer.Option(help="Accelerator id.")] = None,
    kb: Annotated[str | None, typer.Option("--kb", envvar=KB_ENV, help=KB_HELP)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {kernels} as JSON (the body of GET /v1/kernels); "
                                                          "with show, {record, where}.")] = False,
) -> None:
    """List kernel records in the library; `kkb kernels show ID` shows one with where it wins."""
    if action is not None:
        if action != "show" or not kernel_id:
            raise typer.BadParameter(f"{action!r}: the only action is `kkb kernels show ID`")
        _show(kernel_id, json_out, kb)
        return
    try:
        records = _store(kb).list_kernels(op_family=op_family, backend=backend, accelerator=accelerator)
    except Exception as exc:
        if not kb:
            raise
        raise _unreachable(kb, exc) from exc
    if json_out:
        from kb_server.api.models import KernelList

        typer.echo(KernelList(kernels=records).model_dump_json(indent=2))
        return
    if not records and not (op_family or backend or accelerator):
        typer.echo("the knowledge base holds no kernels: `kkb ingest` adds the library in corpus/kernels "
                   "(the offline mode reads it from there meanwhile)", err=True)
        return
    table = Table("id", "name", "op family", "signature", "backend", "accelerators", "measurements")
    # the id and the name are what `kkb kernels show` takes: never cut, on any terminal width
    table.columns[0].no_wrap, table.columns[0].min_width = True, 12
    table.columns[1].overflow = "fold"
    for r in records:
        table.add_row(r.id[:12], r.name, r.op_family, r.op_signature, r.backend, ",".join(r.accelerators),
                      str(len(r.measurements)))
    Console().print(table)


def _matching(records: list, typed: str) -> list:
    """Records that `typed` names: a name, an id prefix, or an id as a narrow table cut it ("ab3b17b…")."""
    typed = typed.strip().rstrip("…").rstrip(".")
    by_name = [r for r in records if r.name == typed]
    return by_name or ([r for r in records if r.id.startswith(typed)] if typed else [])


def _show(kernel_id: str, json_out: bool, kb: str | None) -> None:
    store = _store(kb)
    try:
        record = store.get_kernel(kernel_id)
        matches = [] if record else _matching(store.list_kernels(), kernel_id)
    except Exception as exc:
        if not kb:
            raise
        raise _unreachable(kb, exc) from exc
    if record is None:
        if len(matches) != 1:
            known = "several match" if matches else "none matches; `kkb kernels` lists them"
            raise typer.BadParameter(f"kernel {kernel_id!r}: {known}")
        record = matches[0]
    where = {kind: [m.describe() for m in record.measurements if m.outcome == kind]
             for kind in ("wins", "loses", "untested")}
    where["untested"].append("any other shape, dtype or accelerator: not measured")
    if json_out:
        typer.echo(json.dumps({"record": record.model_dump(), "where": where}, indent=2))
        return
    typer.echo(f"{record.id}  {record.name}\n{record.op_family}: {record.op_signature}  ({record.backend})")
    if record.description:
        typer.echo(record.description)
    if record.tunables:
        typer.echo(f"tunables: {record.tunables}")
    for kind in ("wins", "loses", "untested"):
        typer.echo(f"{kind}:")
        for line in where[kind] or ["(none)"]:
            typer.echo(f"  {line}")
