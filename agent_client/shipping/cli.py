"""The verbs: `kkb export-kernel`, and `kkb bench` on an exported module (registered by kernelkb_cli.py).

Usage: kkb export-kernel SESSION_OR_RECORD -o my_op.py [--min-speedup 1.0] [--node n0003] [--spec SPEC.py]
       kkb bench my_op.py [--shapes batch_size=64 ...] [--device cuda:0] [--no-update] [--json out.json]
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated

import typer


def _find_record(ref: str, home: Path | None):
    """A kernel record by id or unique id prefix (None when the library has none)."""
    from agent_client.kb import LocalKB

    kb = LocalKB.from_home(home)
    record = kb.store.get_kernel(ref)
    if record is not None:
        return record
    matches = [r for r in kb.store.list_kernels() if r.id.startswith(ref)] if len(ref) >= 6 else []
    if len(matches) > 1:
        raise typer.BadParameter(f"{ref!r} names {len(matches)} kernel records: {[r.id for r in matches]}")
    return matches[0] if matches else None


def export_kernel(
    source: Annotated[str, typer.Argument(help="a session id (or its folder), or a kernel record id")],
    out: Annotated[Path, typer.Option("-o", "--out", help="the module to write, e.g. my_op.py")],
    min_speedup: Annotated[float, typer.Option(help="the kernel runs where its measured speedup is at least "
                                                    "this (0: wherever it was right)")] = 1.0,
    node: Annotated[str | None, typer.Option(help="a node of the session (default: its best passing one)")] = None,
    spec: Annotated[Path | None, typer.Option(help="the spec it was judged on, where the session is gone")] = None,
    home: Annotated[Path | None, typer.Option(help="KKB_HOME (store and sessions)")] = None,
) -> None:
    """Write a session's winner (or a library record) as one module: a PyTorch custom op that runs the kernel
    where it was measured to win and the reference everywhere else."""
    from agent_client.config import ClientSettings
    from agent_client.session.store import SessionStore
    from agent_client.shipping.plan import ExportError
    from agent_client.shipping.sources import plan_from_record, plan_from_session
    from agent_client.shipping.writer import render_module

    settings = ClientSettings(home=home) if home else ClientSettings()
    folder = Path(source) if Path(source).is_dir() else settings.sessions_dir / source
    try:
        if (folder / "session.sqlite").exists():
            store = SessionStore.open(folder)
            try:
                plan = plan_from_session(store, node, min_speedup, spec)
            finally:
                store.close()
        else:
            record = _find_record(source, home)
            if record is None:
                raise ExportError(f"{source!r} is neither a session under {settings.sessions_dir} nor a kernel "
                                  "record of the library (`kkb kernels` lists them)")
            plan = plan_from_record(record, settings.sessions_dir, spec, min_speedup)
        if not out.name.endswith(".py") or not out.stem.isidentifier():
            raise ExportError(f"-o {out}: name a Python module file, e.g. my_op.py")
        text = render_module(plan, out.stem)
        compile(text, str(out), "exec")  # a module that does not parse is never written
    except ExportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out}: op {plan.op_name} from {plan.info.get('source')}")
    _echo_where(plan.entries)
    if not any(e["correct"] and (e["speedup"] or 0) >= plan.min_speedup for e in plan.entries):
        typer.echo(f"the kernel wins nowhere at MIN_SPEEDUP {plan.min_speedup:g}: every call runs the reference "
                   "(--min-speedup 0 runs it wherever it was right)")


def _echo_where(entries) -> None:
    for e in entries:
        how = ("wrong" if not e["correct"] else "checked, not timed" if e["speedup"] is None
               else f"{e['speedup']:.3g}x over {e['basis']}")
        typer.echo(f"  {e['variant']} on {e['device_name']}: {how}")


def bench_export(module_path: Path, shapes: list[str], device: str | None, trials: int, timeout: float | None,
                 compile_baseline: bool, update: bool, json_out: Path | None) -> None:
    """`kkb bench` on a module written by export-kernel: judge it at the named shapes, add the rows.
    Exit status as the harness's: 0 every verdict passed, 1 one did not (its rows still join the table)."""
    from agent_client.shipping.plan import ExportError
    from agent_client.shipping.reverify import reverify
    from agent_client.shipping.variants import ShapesError, parse_shapes
    from harness.config import EvalConfig
    from harness.jobs import default_device
    from harness.spec import SpecError

    device = device or default_device()
    config = EvalConfig(trials=trials, time_compile_baseline=compile_baseline, timeout_s=timeout)
    try:
        results = reverify(module_path, [parse_shapes(s) for s in shapes], device, config, write=update)
    except (ExportError, ShapesError, SpecError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    for r in results:
        typer.echo(f"{r.shapes}: {r.status}" + (" (a new plan of the general lowering)" if r.relowered else "")
                   + ("" if r.status == "passed" else f": {'; '.join(r.reasons)[:400]}"))
        _echo_where(r.entries)
    typer.echo(f"{'added to the dispatch table of' if update else 'not written to'} {module_path}")
    if json_out is not None:
        json_out.write_text(json.dumps([r.to_dict() for r in results], indent=1, default=str), encoding="utf-8")
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
                                kwargs.get("json_out"))
        if shapes:
            raise typer.BadParameter("--shapes judges a module written by kkb export-kernel; "
                                     f"{kwargs.get('spec')} is not one")
        return bench(**kwargs)

    params = list(sig.parameters.values()) + extra
    wrapped.__signature__ = sig.replace(parameters=params)
    wrapped.__annotations__ = {p.name: p.annotation for p in params}
    wrapped.__name__, wrapped.__doc__ = bench.__name__, bench.__doc__
    return wrapped
