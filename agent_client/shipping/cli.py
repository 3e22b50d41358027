"""The verbs: `kkb export-kernel`, and `kkb bench` on an exported module (registered by kernelkb_cli.py).

Usage: kkb export-kernel SESSION_OR_RECORD -o my_op.py [--min-speedup 1.0] [--node n0003] [--spec SPEC.py]
                         [--kb URL] [--json]
       kkb bench my_op.py [--shapes batch_size=64 ...] [--device cuda:0] [--no-update] [-o rows.json] [--json]
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated

import typer


def _find_record(ref: str, home: Path | None, kb_url: str | None = None):
    """A kernel record of the library (the embedded store, or the server at kb_url) by id or unique id prefix
    (None when the library has none)."""
    from agent_client.kb import open_kb

    records = open_kb(kb_url, home).kernels()
    exact = [r for r in records if r.id == ref]
    if exact:
        return exact[0]
    matches = [r for r in records if r.id.startswith(ref)] if len(ref) >= 6 else []
    if len(matches) > 1:
        raise typer.BadParameter(f"{ref!r} names {len(matches)} kernel records: {[r.id for r in matches]}")
    return matches[0] if matches else None


def export_kernel(
    source: Annotated[str, typer.Argument(help="a session id (or its folder), or a kernel record id")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the module to write, e.g. my_op.py")],
    min_speedup: Annotated[float, typer.Option(min=0, help="the kernel runs where its measured speedup is at "
                                                           "least this (0: wherever it was right)")] = 1.0,
    node: Annotated[str | None, typer.Option(help="a node of the session (default: its best passing one)")] = None,
    spec: Annotated[Path | None, typer.Option(help="the spec it was judged on, where the session is gone")] = None,
    home: Annotated[Path | None, typer.Option(help="KKB_HOME (store and sessions)")] = None,
    kb: Annotated[str | None, typer.Option("--kb", envvar="KKB_KB_URL", help=(
        "a running knowledge-base server (`kkb serve`) whose library holds the record; default: the embedded "
        "store"))] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print what was written, and where the kernel runs, "
                                                          "as JSON.")] = False,
) -> None:
    """Write a winner (a session's or a library record) as one PyTorch custom-op module.

    The module runs the kernel where it was measured to win and the reference everywhere else."""
    from agent_client.cli_settings import settings_or_exit
    from agent_client.session.store import SessionStore
    from agent_client.shipping.plan import ExportError
    from agent_client.shipping.sources import plan_from_record, plan_from_session
    from agent_client.shipping.writer import render_module

    settings = settings_or_exit(home)
    folder = Path(source) if Path(source).is_dir() else settings.sessions_dir / source
    try:
        if (folder / "session.sqlite").exists():
            store = SessionStore.open(folder)
            try:
                plan = plan_from_session(store, node, min_speedup, spec)
            finally:
                store.close()
        else:
            try:
                record = _find_record(source, home, kb)
            except typer.BadParameter:
                raise
            except Exception as exc:  # a server that cannot answer (KBError, a connection error), named
                if not kb:
                    raise
                raise ExportError(f"the knowledge-base server at {kb}: {exc}") from exc
            if record is None:
                raise ExportError(f"{source!r} is neither a session under {settings.sessions_dir} nor a kernel "
                                  "record of the library (`kkb kernels` lists them)")
            plan = plan_from_record(record, settings.sessions_dir, spec, min_speedup)
        if not output.name.endswith(".py") or not output.stem.isidentifier():
            raise ExportError(f"-o {output}: name a Python module file, e.g. my_op.py")
        text = render_module(plan, output.stem)
        compile(text, str(output), "exec")  # a module that does not parse is never written
    except ExportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    wins = any(e["correct"] and (e["speedup"] or 0) >= plan.min_speedup for e in plan.entries)
    if json_out:
        typer.echo(json.dumps({"output": str(output), "op": plan.op_name, "source": plan.info.get("source"),
                               "min_speedup": plan.min_speedup, "wins_somewhere": wins, "entries": list(plan.entries)},
                              indent=2, default=str))
        return
    typer.echo(f"wrote {output}: op {plan.op_name} from {plan.info.get('source')}")
    _echo_where(plan.entries)
    if not wins:
        typer.echo(f"the kernel wins nowhere at MIN_SPEEDUP {plan.min_speedup:g}: every call runs the reference "
                   "(--min-speedup 0 runs it wherever it was right)")


def _echo_where(entries, err: bool = False) -> None:
    for e in entries:
        how = ("wrong" if not e["correct"] else "checked, not timed" if e["speedup"] is None
               else f"{e['speedup']:.3g}x over {e['basis']}")
        typer.echo(f"  {e['variant']} on {e['device_name']}: {how}", err=err)


def bench_export(module_path: Path, shapes: list[str], device: str | None, trials: int, timeout: float | None,
                 compile_baseline: bool, update: bool, output: Path | None, json_out: bool) -> None:
    """`kkb bench` on a module written by export-kernel: judge it at the named shapes, add the rows.
    Exit status as the harness's: 0 every verdict passed, 1 one did not (its rows still join the table)."""
    from agent_client.shipping.plan import ExportError
    from agent_client.shipping.reverify import reverify
    from agent_client.shipping.variants import ShapesError, parse_shapes
    from harness.config import EvalConfig
    from harness.executor import check_device
    from harness.jobs import default_device
    from harness.spec import SpecError

    try:  # a GPU this machine lacks: named before anything runs, as for a spec
        device = check_device(device) if device else default_device()
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    config = EvalConfig(trials=trials, time_compile_baseline=compile_baseline, timeout_s=timeout)
    try:
        results = reverify(module_path, [parse_shapes(s) for s in shapes], device, config, write=update)
    except (ExportError, ShapesError, SpecError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    for r in results:  # on stderr where stdout carries --json
        typer.echo(f"{r.shapes}: {r.status}" + (" (a new plan of the general lowering)" if r.relowered else "")
                   + ("" if r.status == "passed" else f": {'; '.join(r.reasons)[:400]}"), err=json_out)
        _echo_where(r.entries, err=json_out)
    typer.echo(f"{'added to the dispatch table of' if update else 'not written to'} {module_path}", err=json_out)
    text = json.dumps([r.to_dict() for r in results], indent=1, default=str)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    if json_out:
        typer.echo(text)
    if any(r.status != "passed" for r in results):
        raise typer.Exit(1)


def is_export(path: Path | None) -> bool:
    try:
        return path is not None and path.is_file() and "KKB_EXPORT_FORMAT" in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def bench_with_exports(bench):
    """The harness's `kkb bench`, plus --shapes and --update for modules written by export-kernel."""
    sig = inspect.signature(bench, eval_str=True)
    extra = [
        inspect.Parameter("shapes", inspect.Parameter.KEYWORD_ONLY, default=[], annotation=Annotated[
            list[str], typer.Option(help="with an exported module: shapes to judge it at, NAME=VALUE[,...] "
                                         "(the spec's size constants or get_inputs defaults); repeatable")]),
        inspect.Parameter("update", inspect.Parameter.KEYWORD_ONLY, default=True, annotation=Annotated[
            bool, typer.Option(help="with an exported module: add the results to its dispatch table")]),
    ]

    def wrapped(**kwargs):
        shapes, update = kwargs.pop("shapes"), kwargs.pop("update")
        if is_export(kwargs.get("spec")):
            return bench_export(kwargs["spec"], shapes, kwargs.get("device"), kwargs.get("trials", 3),
                                kwargs.get("timeout"), kwargs.get("compile_baseline", True), update,
                                kwargs.get("output"), kwargs.get("json_out", False))
        if shapes:
            raise typer.BadParameter("--shapes judges a module written by kkb export-kernel; "
                                     f"{kwargs.get('spec')} is not one")
        return bench(**kwargs)

    params = list(sig.parameters.values()) + extra
    wrapped.__signature__ = sig.replace(parameters=params)
    wrapped.__annotations__ = {p.name: p.annotation for p in params}
    wrapped.__name__, wrapped.__doc__ = bench.__name__, bench.__doc__
    return wrapped
