"""The YAML front matter every corpus document carries, and its validation.

A document starts with a `---` fenced YAML block. An invalid block fails with the file, the
line of the offending key and the field's name, so a team adding a new accelerator's docs sees
exactly what to fix.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator


class DocKind(str, Enum):
    arch = "arch"  # architecture: compute units, memory hierarchy, generations
    isa = "isa"  # instruction-set notes (PTX/SASS, CDNA ISA, MTIA engines)
    guide = "guide"  # programming guides (Triton, CUDA, CuTe DSL, HIP)
    playbook = "playbook"  # optimisation recipes: when, how to recognise, expected gain
    kernel = "kernel"  # a kernel's write-up (kernel sources themselves go to the kernel collection)
    rules = "rules"  # what the harness accepts and rejects


class Vendor(str, Enum):
    nvidia = "nvidia"
    amd = "amd"
    meta = "meta"
    any = "any"


class FrontMatter(BaseModel):
    """Metadata of one document. `accelerator` is an id from corpus/accelerators/ or `any`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=3, max_length=200)
    accelerator: list[str] = Field(min_length=1)  # e.g. ["h100", "h200"] or ["any"]
    vendor: Vendor
    kind: DocKind
    sources: list[HttpUrl] = Field(default_factory=list)  # public addresses the facts came from
    tags: list[str] = Field(default_factory=list)

    @field_validator("accelerator", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        # A single id is the common case in hand-written front matter.
        return [value] if isinstance(value, str) else value

    @field_validator("accelerator")
    @classmethod
    def _ids_are_slugs(cls, value: list[str]) -> list[str]:
        for acc in value:
            if not acc or not all(c.isalnum() or c in "-_" for c in acc) or acc != acc.lower():
                raise ValueError(f"accelerator id {acc!r} must be lower-case letters, digits, '-' or '_'")
        return value
