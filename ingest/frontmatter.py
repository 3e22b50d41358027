"""The YAML front matter of a corpus document: an open vocabulary, read leniently, errors named.

A document may start with a `---` fenced YAML block. Any vendor, accelerator id and kind is accepted
(normalised: lower case, runs of other characters as '-'); fields this schema does not know are kept
as the document's metadata; a missing title comes from the first heading. The only errors are YAML
that does not parse and a field of the wrong type (a mapping where a list of ids belongs): each names
the file, the line of the key and the field, so a team adding a new accelerator's docs sees what to fix.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kb_server.schemas import KNOWN_KINDS, normalize_id

__all__ = ["KNOWN_KINDS", "FrontMatter", "FrontMatterError", "parse_front_matter", "validate_yaml_block"]

Scalar = str | int | float | bool


def _as_list(value: object) -> object:
    # A single value is the common case in hand-written front matter.
    return [value] if isinstance(value, str | int | float) and not isinstance(value, bool) else value


class FrontMatter(BaseModel):
    """Metadata of one document. Missing fields fall back to the ingest's options (accelerator any, ...)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    title: str | None = None  # None: the first heading, else the file name
    accelerator: list[str] | None = None  # e.g. ["h100", "h200"] or ["any"]
    vendor: str | None = None  # any vendor, e.g. "nvidia", "aurora-silicon"
    kind: str | None = None  # KNOWN_KINDS name the usual ones; others are kept as written (normalised)
    sources: list[str] = Field(default_factory=list)  # public addresses the facts came from
    source: list[str] = Field(default_factory=list)  # the same, as some authors spell it
    tags: list[str] = Field(default_factory=list)

    @field_validator("accelerator", "sources", "source", "tags", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return _as_list(value)

    @field_validator("accelerator", "sources", "source", "tags", mode="after")
    @classmethod
    def _strings(cls, value: list[Any] | None) -> list[str] | None:
        return None if value is None else [str(v).strip() for v in value if str(v).strip()]

    @field_validator("accelerator", mode="after")
    @classmethod
    def _ids(cls, value: list[str] | None) -> list[str] | None:
        ids = [normalize_id(v) for v in value or []]
        return [i for i in dict.fromkeys(ids) if i] or None

    @field_validator("vendor", "kind", mode="before")
    @classmethod
    def _scalar_id(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("vendor", "kind", mode="after")
    @classmethod
    def _normalised(cls, value: str | None) -> str | None:
        return (normalize_id(value) or None) if value is not None else None

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value.strip() or None if isinstance(value, str) else value

    @property
    def source_urls(self) -> list[str]:
        return list(dict.fromkeys([*self.sources, *self.source]))

    @property
    def metadata(self) -> dict[str, Scalar | list[Scalar]]:
        """Fields this schema does not know, kept as written (nested values as YAML text)."""
        out: dict[str, Scalar | list[Scalar]] = {}
        for key, value in (self.model_extra or {}).items():
            if isinstance(value, Scalar) or (isinstance(value, list) and all(isinstance(v, Scalar) for v in value)):
                out[key] = value
            elif value is not None:
                out[key] = yaml.safe_dump(value, default_flow_style=True, sort_keys=True).strip()
        return out


# ---------------------------------------------------------------- parsing, with file and line in errors
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
    if not yaml_text.strip():  # an empty block: no metadata, as if there were none
        return FrontMatter(), body
    return validate_yaml_block(FrontMatter, yaml_text, path, first_line=2), body
