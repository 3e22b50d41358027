"""The `kkb` command: a thin layer that registers each package's verbs.

Usage: kkb --help | kkb --version
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import tempfile
from importlib import metadata
from pathlib import Path

import typer

app = typer.Typer(help="kernelkb: hardware knowledge base and kernel tuning.", no_args_is_help=True)


def _version() -> str:
    try:
        return metadata.version("kernelkb")
    except metadata.PackageNotFoundError:  # the source tree on sys.path, not installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"kernelkb {_version()}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.",
                                       callback=_print_version, is_eager=True)) -> None:
    """kernelkb: hardware knowledge base and kernel tuning."""

# Each entry: (module, function names it offers as verbs). A module that is missing is skipped so a
# partial install (e.g. the harness alone on a CUDA machine) still offers what it has.
_VERBS = {
    "ingest.cli": ["ingest"],
    "kb_server.cli": ["search", "kernels"],
    "kb_server.documents_cli": ["documents"],
    "kb_server.prompt_cli": ["prompt"],
    "kb_server.api_cli": ["serve", "mcp", "facts"],
    "harness.cli": ["bench"],
    "agent_client.cli": ["tune", "report", "export"],
    "agent_client.session.cli": ["sessions"],
    "agent_client.shipping.cli": ["export-kernel"],
}

_OURS = {"ingest", "kb_server", "harness", "agent_client"}


def _ingest_pipeline():
    from ingest.upload import PipelineIngestor

    return PipelineIngestor()


# Verbs assembled here from two packages that do not import each other: the server is handed the
# ingest pipeline for its uploads.
_ASSEMBLED = {("kb_server.api_cli", "serve"): lambda module: module.make_serve(_ingest_pipeline),
              ("harness.cli", "bench"): lambda module: _bench_with_exports(module.make_bench(_card_lookup()))}


def _card_lookup():
    """`kkb bench` judges by the card the device is (agent_client/card.py: pyyaml only, so a bare CUDA machine
    has it too); the harness itself only receives the numbers."""
    from agent_client.card import card_peaks
    from harness.config import HardwarePeaks

    return lambda device: HardwarePeaks.from_dict(card_peaks(device).hardware_peaks())


def _bench_with_exports(bench):
    """`kkb bench` also judges modules written by `kkb export-kernel` (agent_client/shipping): the harness
    knows nothing of exports, so the two meet here."""
    try:
        from agent_client.shipping.cli import bench_with_exports
    except ModuleNotFoundError:  # the harness alone, without the agent client's dependencies
        return bench
    return bench_with_exports(bench)


def output_problem(path: Path) -> str | None:
    """Why the file `path` cannot be written (None: it can): it is a folder, or its folder can neither be made
    nor written. Asked before a verb starts, so a session or a suite never ends on a path it cannot write;
    the check leaves nothing behind (a probe file in the nearest folder there is, removed at once)."""
    if path.is_dir():
        return f"-o {path}: is a folder; name the file to write in it"
    if path.exists():
        try:
            with path.open("ab"):  # appends nothing: the file is left as it is
                return None
        except OSError as exc:
            return f"-o {path}: cannot be written ({exc.strerror})"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"-o {path}: {folder} is a file, not a folder"
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".kkb-probe-")
    except OSError as exc:
        return f"-o {path}: nothing can be written in {folder} ({exc.strerror})"
    os.close(handle)
    os.unlink(probe)
    return None


def _output_checked(verb):
    """`verb` with its -o/--output path checked before any work: one line naming the path, exit 2."""
    if "output" not in inspect.signature(verb).parameters:
        return verb

    @functools.wraps(verb)  # typer reads the signature and the annotations through __wrapped__
    def checked(*args, **kwargs):
        problem = output_problem(Path(kwargs["output"])) if kwargs.get("output") else None
        if problem:
            typer.echo(f"error: {problem}", err=True)
            raise typer.Exit(2)
        return verb(*args, **kwargs)

    return checked


def _unavailable(verb: str, missing: str):
    def command() -> None:
        typer.echo(f"kkb {verb}: this install lacks the package {missing!r} that the verb needs; "
                   f"install kernelkb with its dependencies (pip install -e .)", err=True)
        raise typer.Exit(2)
    return command


for module_name, verbs in _VERBS.items():
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # A verb whose third-party dependency is missing (fastapi on a bare CUDA machine) is left out;
        # a missing module of our own is a real error.
        if (exc.name or "").split(".")[0] in _OURS:
            raise
        for verb in verbs:
            app.command(name=verb, help=f"(unavailable here: needs the missing package {exc.name!r})",
                        context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
                _unavailable(verb, exc.name or "?"))
        continue
    for verb in verbs:
        assemble = _ASSEMBLED.get((module_name, verb))
        fn = assemble(module) if assemble else getattr(module, verb.replace("-", "_"), None)
        if fn is not None:
            app.command(name=verb)(_output_checked(fn))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
