"""The `kkb` command: a thin layer that registers each package's verbs.

Usage: kkb --help
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(help="kernelkb: hardware knowledge base and kernel tuning.", no_args_is_help=True)

# Each entry: (module, function names it offers as verbs). A module that is missing is skipped so a
# partial install (e.g. the harness alone on a GPU box) still offers what it has.
_VERBS = {
    "ingest.cli": ["ingest"],
    "kb_server.cli": ["search", "kernels"],
    "kb_server.api_cli": ["serve", "mcp", "facts"],
    "harness.cli": ["bench"],
    "agent_client.cli": ["tune", "report", "export"],
}

_OURS = {"ingest", "kb_server", "harness", "agent_client"}
_MISSING: dict[str, str] = {}

for module_name, verbs in _VERBS.items():
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # A verb whose third-party dependency is missing (fastapi on a bare GPU box) is left out;
        # a missing module of our own is a real error.
        if (exc.name or "").split(".")[0] in _OURS:
            raise
        _MISSING[module_name] = exc.name or "?"
        continue
    for verb in verbs:
        fn = getattr(module, verb, None)
        if fn is not None:
            app.command(name=verb)(fn)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
