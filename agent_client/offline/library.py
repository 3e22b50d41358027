"""The skill library read straight from `corpus/kernels/` (no store): for machines without the knowledge base.

Usage: kb = CorpusLibrary()                      # the library that ships with kernelkb
       records = kb.kernels(op_family="softmax", backend="triton")

Each family folder with a `kernel.py` and its `kernel.yaml` is one record, its source bundled by
`ingest.bundle.bundled_source`: the same function that makes the knowledge base's records
(ingest/kernels.py) and the library benchmarks' candidates, so the offline provider serves the same
source wherever its records come from. PyYAML and the standard library only (a bare CUDA machine has
no pydantic or chromadb); the sidecar is read for the fields the provider uses, not validated (the
knowledge base's ingest does that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingest.bundle import bundled_source, library_dir


@dataclass(frozen=True)
class LibraryKernel:
    """The fields of a knowledge-base kernel record that the offline provider reads."""

    id: str  # "<folder>/<name>"
    name: str
    op_family: str
    backend: str
    source: str  # kernel.py with its helper modules inlined
    tunables: dict = field(default_factory=dict)  # name -> allowed values (kernel.yaml)
    path: str = ""


class CorpusLibrary:
    """`kernels(op_family, backend)` over a corpus folder, as the knowledge base's interface offers it."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root else library_dir()
        self._records: list[LibraryKernel] | None = None

    def kernels(self, op_family: str | None = None, backend: str | None = None, **_) -> list[LibraryKernel]:
        if self._records is None:
            self._records = read_library(self.root)
        return [r for r in self._records if (op_family is None or r.op_family == op_family)
                and (backend is None or r.backend == backend)]


def read_library(root: Path) -> list[LibraryKernel]:
    """One record per family folder holding kernel.py and kernel.yaml, in folder order."""
    import yaml

    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        sidecar, kernel = folder / "kernel.yaml", folder / "kernel.py"
        if not (sidecar.is_file() and kernel.is_file()):
            continue
        meta = yaml.safe_load(sidecar.read_text(encoding="utf-8")) or {}
        if not isinstance(meta, dict):
            raise TypeError(f"{sidecar}: expected a mapping at the top level")
        name = str(meta.get("name") or folder.name)
        out.append(LibraryKernel(
            id=f"{folder.name}/{name}", name=name, op_family=str(meta.get("op_family") or folder.name),
            backend=str(meta.get("backend") or "triton"), source=bundled_source(kernel),
            tunables=dict(meta.get("tunables") or {}), path=str(kernel)))
    return out
