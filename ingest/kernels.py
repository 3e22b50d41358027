"""Kernel source files with a sidecar -> KernelRecord (one record per kernel, the source whole).

Usage: record = read_kernel(Path("corpus/kernels/softmax/kernel.py"))
The sidecar is `<stem>.yaml` (or `.yml`) next to the source, e.g. kernel.py + kernel.yaml; its
fields are those of KernelRecord except `source` (the file) and `id` (the hash of backend and
source, unless the sidecar gives one). Errors name the sidecar, its line and the field. The source is
bundled: shared helpers the kernel imports are inlined (ingest/bundle.py), so a record is one candidate.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ingest.bundle import BundleError, bundled_source
from ingest.frontmatter import FrontMatterError, validate_yaml_block
from kb_server.kernel_store import kernel_id
from kb_server.schemas import KernelMeasurement, KernelRecord

KERNEL_SUFFIXES = {".py", ".cu", ".hip"}


class KernelSidecar(BaseModel):
    """The fields a kernel.yaml may carry (KernelRecord less the source)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    name: str = Field(min_length=1)
    op_family: str = Field(min_length=1)
    op_signature: str = Field(min_length=1)
    backend: str = Field(pattern=r"^(triton|cuda|cute|hip)$")
    description: str = ""
    tunables: dict[str, list[int | float | str]] = Field(default_factory=dict)
    dtypes: list[str] = Field(default_factory=list)
    accelerators: list[str] = Field(default_factory=list)
    measurements: list[KernelMeasurement] = Field(default_factory=list)


def sidecar_for(source: Path) -> Path | None:
    for suffix in (".yaml", ".yml"):
        candidate = source.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def read_kernel(source: Path, display_path: str | None = None) -> KernelRecord:
    sidecar = sidecar_for(source)
    if sidecar is None:
        raise FrontMatterError(source, 1, None, f"no sidecar {source.with_suffix('.yaml').name} next to the kernel")
    meta = validate_yaml_block(KernelSidecar, sidecar.read_text(encoding="utf-8"), sidecar, first_line=1)
    try:
        code = bundled_source(source)
    except BundleError as exc:
        raise FrontMatterError(exc.path, exc.line, None, exc.reason) from exc
    fields = meta.model_dump(exclude={"id"})
    return KernelRecord(id=meta.id or kernel_id(code, meta.backend), source=code,
                        path=display_path or str(source), **fields)
