"""The verbs `serve`, `mcp` and `facts` of `kkb` (registered by kernelkb_cli.py).

Usage: kkb serve --port 8700 [--json] | kkb mcp | kkb facts h100 "shared memory" [--kb URL] [--json]
       (also: python -m kb_server.api_cli serve --port 8700, a server without uploads: kernelkb_cli.py
       builds `kkb serve` with make_serve(<the ingest pipeline>), since kb_server does not import ingest)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from kb_server.api.deps import LOOPBACK
from kb_server.api.ingestor import Ingestor
from kb_server.api.settings import ServerSettings
from kb_server.cli import KB_ENV, KB_HELP
from kb_server.facts import FactsError


def make_serve(ingestor_factory: Callable[[], Ingestor] | None = None):
    """The `serve` verb, with the ingestor that turns uploads into documents (None: no uploads)."""

    def serve(
        host: Annotated[str, typer.Option(help="address to bind; writes need KKB_API_KEY unless loopback")
                        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="TCP port")] = 8700,
        home: Annotated[Path | None, typer.Option(help="store directory (default: KKB_HOME)")] = None,
        corpus_dir: Annotated[Path | None, typer.Option(help="corpus with accelerators/*.yaml")] = None,
        log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
        json_out: Annotated[bool, typer.Option("--json", help="Print where it serves as one JSON line before "
                                                               "the server's log.")] = False,
    ) -> None:
        """Serve the knowledge base over HTTP (OpenAPI docs at /docs)."""
        import uvicorn

        from kb_server.main import create_app

        overrides = {k: v for k, v in {"home": home, "corpus_dir": corpus_dir}.items() if v is not None}
        settings = ServerSettings(**overrides)
        try:
            app = create_app(settings, bound_host=host, ingestor=ingestor_factory() if ingestor_factory else None)
        except FactsError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        if settings.api_key is None and host not in LOOPBACK:
            logging.getLogger("kb_server").warning("no KKB_API_KEY and bound to %s: writes are refused", host)
        if json_out:
            url = f"http://{host}:{port}"
            typer.echo(json.dumps({"url": url, "openapi": f"{url}/docs", "home": str(settings.home),
                                   "uploads": ingestor_factory is not None}))
        # One process: the write lock and the store's in-memory indexes live in it; searches use its threads.
        uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)

    return serve


serve = make_serve()  # without uploads; `kkb serve` (kernelkb_cli.py) is make_serve(<the ingest pipeline>)


def mcp() -> None:
    """Serve the read tools (search, facts, prompt, kernels) over MCP on stdio."""
    from kb_server.mcp_server import main

    main()


def facts(
    accelerator: Annotated[str | None, typer.Argument(help="accelerator id or alias, e.g. h100")] = None,
    question: Annotated[list[str] | None, typer.Argument(help="e.g. shared memory, 'bf16 peak', HBM bandwidth")
                        ] = None,
    template: Annotated[str | None, typer.Option(help="write a commented facts file to fill for a new accelerator "
                                                      "of this id (every field, its unit, a source per fact)")
                        ] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="with --template: the file to write "
                                                                        "(default ID.yaml here; never overwritten)")
                      ] = None,
    kb: Annotated[str | None, typer.Option("--kb", envvar=KB_ENV, help=KB_HELP)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")] = False,
) -> None:
    """Answer a hardware fact question (value, unit and source), or write a facts file to fill (--template)."""
    from kb_server.factlookup import FactNotFound, lookup, resolve_accelerator

    if template is not None:
        _write_template(template, output, json_out)
        return
    if not accelerator or not question:
        raise typer.BadParameter("name an accelerator and a question (kkb facts h100 shared memory), or write "
                                 "a facts file to fill with --template ID")
    q = " ".join(question)
    try:
        if kb:
            from kb_server.client import KBClient

            with KBClient(kb) as client:
                answer = client.facts(accelerator, q)
        else:  # the store's facts: the corpus files and every facts file ingested since
            from kb_server.store import Store

            answer = lookup(resolve_accelerator(Store(ServerSettings()).accelerators(), accelerator), q)
    except (LookupError, FactsError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1 if isinstance(exc, FactNotFound) else 2) from exc
    except Exception as exc:  # KBError from a server (its problem body says what to fix), or no server there
        typer.echo(f"error: the knowledge-base server at {kb}: {exc}" if kb else f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if json_out:
        typer.echo(json.dumps(answer.model_dump(), indent=2))
        return
    for m in answer.matches:
        typer.echo(f"{answer.accelerator} {m.field} = {m.value:g} {m.unit}  (score {m.score:.2f}; source {m.source})")


def _write_template(accelerator_id: str, output: Path | None, json_out: bool) -> None:
    from kb_server.facts_template import facts_template
    from kb_server.schemas import normalize_id

    acc = normalize_id(accelerator_id)
    if not acc:
        raise typer.BadParameter(f"{accelerator_id!r} has no letters or digits to make an id of",
                                 param_hint="--template")
    path = output or Path(f"{acc}.yaml")
    if path.stem != acc:
        raise typer.BadParameter(f"a facts file is named after its id: {acc}.yaml, not {path.name}",
                                 param_hint="--output")
    if path.exists():
        typer.echo(f"error: {path} exists; fill that one, or remove it first", err=True)
        raise typer.Exit(2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(facts_template(acc), encoding="utf-8")
    if json_out:
        typer.echo(json.dumps({"written": str(path), "accelerator": acc}))
    else:
        typer.echo(f"wrote {path}: fill it in, then `kkb ingest {path}`")


if __name__ == "__main__":
    _app = typer.Typer(no_args_is_help=True)
    for _verb in (serve, mcp, facts):
        _app.command()(_verb)
    _app()
