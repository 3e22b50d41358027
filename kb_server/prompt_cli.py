"""The `kkb prompt` verb: the retrieval-augmented prompt the knowledge base builds for a spec and a target.

Usage: kkb prompt SPEC --target h200 [--backend triton] [--token-budget 6000] [--no-retrieval] [--kb URL]
                  [-o prompt.md] [--json]

The spec is read, never run. The prompt is printed (or written to -o); `--json` prints the body of
POST /v1/prompt (its sections, each with the sources it drew on, and the queries it searched with).
Reads the embedded store under KKB_HOME, or with --kb URL (or KKB_KB_URL) a running `kkb serve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kb_server.cli import KB_ENV, KB_HELP, empty_store_hint


def prompt(
    spec: Annotated[Path, typer.Argument(help="a KernelBench-format spec (Model, get_inputs, get_init_inputs)")],
    target: Annotated[str, typer.Option(help="accelerator id or alias whose facts and documents shape it")],
    backend: Annotated[str, typer.Option(help="triton | cuda | cute | hip")] = "triton",
    token_budget: Annotated[int, typer.Option(min=1, help="tokens the whole prompt may take")] = 6000,
    retrieval: Annotated[bool, typer.Option(help="passages and library kernels; --no-retrieval: facts, rules and "
                                                 "the task only")] = True,
    kb: Annotated[str | None, typer.Option("--kb", envvar=KB_ENV, help=KB_HELP)] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="write the prompt here instead of "
                                                                        "printing it")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the body of POST /v1/prompt as JSON.")] = False,
) -> None:
    """Build the prompt for a spec on a target accelerator: its facts, passages and the nearest library kernel."""
    from kb_server.spec_ops import PromptError

    try:
        source = spec.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: {spec}: cannot be read: {exc}", err=True)
        raise typer.Exit(2) from exc
    try:
        bundle = _build(kb, source, target, backend, token_budget, retrieval)
    except PromptError as exc:
        typer.echo(f"error: {exc.field}: {exc}", err=True)
        raise typer.Exit(2) from exc
    except Exception as exc:  # KBError (its problem body names the field) or no server there
        if not kb:
            raise
        detail = getattr(exc, "problem", {}).get("detail") if hasattr(exc, "problem") else None
        typer.echo(f"error: the knowledge-base server at {kb}: {detail or exc}", err=True)
        raise typer.Exit(2) from exc
    for warning in bundle.warnings:  # on stderr: stdout carries the prompt or its JSON
        typer.echo(f"warning: {warning}", err=True)
    passages = next((len(s.sources) for s in bundle.sections if s.name == "passages"), 0)
    hint = empty_store_hint(kb) if retrieval and not passages else None
    if hint:
        typer.echo(hint, err=True)
    text = bundle.model_dump_json(indent=2) if json_out else bundle.text
    if output is None:
        typer.echo(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text + "\n", encoding="utf-8")
    typer.echo(f"wrote {output}: {bundle.tokens} tokens, {passages} passages", err=json_out)


def _build(kb: str | None, source: str, target: str, backend: str, token_budget: int, retrieval: bool):
    if kb:
        from kb_server.client import KBClient

        with KBClient(kb) as client:
            return client.prompt(source, target, backend, token_budget=token_budget, retrieval=retrieval)
    from kb_server.config import get_settings
    from kb_server.prompt import build_prompt
    from kb_server.store import Store

    return build_prompt(Store(get_settings()), source, target, backend, token_budget=token_budget,
                        retrieval=retrieval)
