"""The YAML front matter every corpus document carries, and its validation.

A document starts with a `---` fenced YAML block. An invalid block fails with the file, the
line of the offending key and the field's name, so a team adding a new accelerator's docs sees
exactly what to fix.
"""

from __future__ import annotations

from enum import Enum

import yaml
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, field_validator


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


# ---------------------------------------------------------------- parsing, with file and line in errors
# (added by the ingest: the fields above are the schema; below is how a file's block is read)



class FrontMatterError(ValueError):
    """An invalid front matter (or sidecar) block: `path:line: field 'x': what is wrong`."""

    def __init__(self, path: object, line: int, field: str | None, message: str):
        self.path, self.line, self.field = str(path), line, field
        where = f"field '{field}': " if field else ""
        super().__init__(f"{path}:{line}: {where}{message}")


def split_front_matter(text: str, path: object = "<text>") -> tuple[str | None, str, int]:
    """(yaml text or None, body, number of lines before the body). The block opens on line 1."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text, 0
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 1
    raise FrontMatterError(path, 1, None, "the front matter opened with '---' on line 1 is never closed")


def yaml_line(node: yaml.Node | None, loc: tuple) -> int | None:
    """0-based line (within the YAML text) of the key or item at pydantic error location `loc`."""
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if match is None:
                return line
            line, node = match[0].start_mark.line, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line
        else:
            return line
    return line


def validate_yaml_block(model: type[BaseModel], yaml_text: str, path: object, first_line: int) -> BaseModel:
    """Validate a YAML block against `model`; errors name path, file line and field.

    `first_line` is the file line (1-based) of the block's first YAML line. A missing field points
    at the line before the block (the opening `---` for front matter).
    """
    try:
        node = yaml.compose(yaml_text)
        raw = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + (mark.line if mark else 0)
        raise FrontMatterError(path, line, None, f"not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(raw, dict):
        raise FrontMatterError(path, first_line, None, "expected a mapping of fields (key: value)")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        found = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            rel = yaml_line(node, loc)
            line = first_line + rel if rel is not None else max(first_line - 1, 1)
            msg = err["msg"] if err["type"] != "missing" else "is required but missing"
            found.append((line, ".".join(map(str, loc)) or None, msg))
        line, field, msg = found[0]
        also = "; ".join(f"line {ln}: field '{f}': {m}" for ln, f, m in found[1:])
        raise FrontMatterError(path, line, field, msg + (f" (also {also})" if also else "")) from exc


def parse_front_matter(text: str, path: object = "<text>") -> tuple[FrontMatter | None, str]:
    """(FrontMatter or None when the file has none, the body after the block)."""
    yaml_text, body, _ = split_front_matter(text, path)
    if yaml_text is None:
        return None, text
    return validate_yaml_block(FrontMatter, yaml_text, path, first_line=2), body
