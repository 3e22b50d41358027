"""Adapt a library kernel to a spec: the spec's module as written, the library's kernel, a generated forward.

Usage: code = adapt(library_source, spec_source, forward_lines, note)

A candidate must build the same parameters as the reference under the same seed, so `ModelNew` subclasses
the spec's own `Model` (kept as the user wrote it, `super(Model, self)` and submodules included, less its
input functions) and only its forward is generated: it calls the library's launchers, never the spec's
forward. The library source comes last, so its launchers keep their names whatever the spec defines.
"""

from __future__ import annotations

from agent_client.lowering.emit import spec_body


class AdaptError(ValueError):
    """The spec cannot be adapted to a library kernel (the message says why)."""


def adapt(library_source: str, spec_source: str, forward_lines: list[str], note: str) -> str:
    """A complete candidate: spec module, library kernel (its ModelNew renamed), generated forward."""
    library = library_source.replace("class ModelNew(", "class _LibraryModelNew(")
    body = "\n".join("        " + line for line in forward_lines)
    return (
        f"# kernelkb offline provider: {note}\n"
        "# ---- the reference module, as written (ModelNew builds the same parameters) ----\n"
        f"{spec_body(spec_source)}\n\n"
        "# ---- the library kernel ----\n"
        f"{library.rstrip()}\n\n\n"
        "class ModelNew(Model):\n"
        "    def forward(self, *inputs):\n"
        f"{body}\n"
    )
