"""The YAML front matter of a corpus document: one schema, its accepted synonyms, and named problems.

Usage: read = read_front_matter(text, "docs/gaudi3.md"); read.front, read.body, read.warnings

A document may start with a `---` fenced YAML block. Its fields are `title`, `accelerator`, `vendor`,
`kind`, `sources` and `tags`; the spellings people write for them are accepted as the same field
(FIELD_SYNONYMS: `accelerators`, `chips`, `gpu`; `source`, `urls`; `type`, `category` ...), and so are
the usual words for a kind (kb_server.schemas.KIND_SYNONYMS: `architecture` is `arch`). Values are
normalised (lower case, runs of other characters as '-').

Errors (the file is not ingested): YAML that does not parse, a key written twice, one field written
under two spellings where it takes one value, a field of the wrong type. Warnings (the file is
ingested; `kkb ingest --strict` makes them errors): a field this schema does not know (kept as the
document's metadata, with the nearest known name when there is one; fields under `metadata:` are kept
without a word) and a kind outside KNOWN_KINDS (kept as written). Each names the file, the line and
the field. Accelerator ids and vendors are checked against the knowledge base's facts by the pipeline.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kb_server.schemas import KIND_SYNONYMS, KNOWN_KINDS, normalize_id

__all__ = ["FIELDS", "FIELD_SYNONYMS", "KNOWN_KINDS", "FrontMatter", "FrontMatterError", "FrontMatterRead",
           "FrontMatterWarning", "parse_front_matter", "read_front_matter", "validate_yaml_block"]

Scalar = str | int | float | bool
_FIELD_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

FIELDS = ("title", "accelerator", "vendor", "kind", "sources", "tags")
LIST_FIELDS = {"accelerator", "sources", "tags"}  # two spellings of one of these add up; of the others, clash
METADATA_KEY = "metadata"  # a mapping of the author's own fields, kept without a warning
# Spellings (normalised: lower case, '-' and ' ' as '_') that mean one of FIELDS.
FIELD_SYNONYMS: dict[str, str] = {
    **{k: "accelerator" for k in ("accelerators", "accelerator_id", "accelerator_ids", "chip", "chips", "gpu",
                                  "gpus", "device", "devices", "hardware", "target", "targets")},
    **{k: "vendor" for k in ("vendors", "manufacturer", "maker", "company")},
    **{k: "kind" for k in ("kinds", "type", "doc_type", "doctype", "category", "document_type")},
    **{k: "title" for k in ("name", "heading")},
    **{k: "sources" for k in ("source", "url", "urls", "link", "links", "reference", "references", "refs",
                              "source_url", "source_urls")},
    **{k: "tags" for k in ("tag", "keywords", "labels")},
}


def _as_list(value: object) -> object:
    # A single value is the common case in hand-written front matter.
    return [value] if isinstance(value, str | int | float) and not isinstance(value, bool) else value


class FrontMatter(BaseModel):
    """Metadata of one document. Missing fields fall back to the ingest's options (accelerator any, ...)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    title: str | None = None  # None: the first heading, else the file name
    accelerator: list[str] | None = None  # e.g. ["h100", "h200"] or ["any"]
    vendor: str | None = None  # any vendor, e.g. "nvidia", "aurora-silicon"
    kind: str | None = None  # KNOWN_KINDS name the usual ones (synonyms mapped); others kept as written
    sources: list[str] = Field(default_factory=list)  # public addresses the facts came from
    tags: list[str] = Field(default_factory=list)

    @field_validator("accelerator", "sources", "tags", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return _as_list(value)

    @field_validator("accelerator", "sources", "tags", mode="after")
    @classmethod
    def _strings(cls, value: list[Any] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(str(v).strip() for v in value if str(v).strip()))

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

    @field_validator("vendor", mode="after")
    @classmethod
    def _normalised(cls, value: str | None) -> str | None:
        return (normalize_id(value) or None) if value is not None else None

    @field_validator("kind", mode="after")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        kind = normalize_id(value) if value is not None else ""
        return KIND_SYNONYMS.get(kind, kind) or None

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value.strip() or None if isinstance(value, str) else value

    @property
    def source_urls(self) -> list[str]:
        return list(self.sources)

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


# ---------------------------------------------------------------- problems, with file and line
class FrontMatterError(ValueError):
    """An invalid front matter (or sidecar, or facts) block: `path:line: field 'x': what is wrong`."""

    def __init__(self, path: object, line: int, field: str | None, message: str):
        self.path, self.line, self.field = str(path), line, field
        where = f"field '{field}': " if field else ""
        super().__init__(f"{path}:{line}: {where}{message}")


@dataclass(frozen=True)
class FrontMatterWarning:
    """Something a document's author likely did not mean; the file still ingests (unless --strict)."""

    path: str
    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"field '{self.field}': " if self.field else ""
        return f"{self.path}:{self.line}: {where}{self.message}"


@dataclass(frozen=True)
class FrontMatterRead:
    """A document's front matter (None when it has none), its body, and what is worth a warning."""

    front: FrontMatter | None
    body: str
    warnings: list[FrontMatterWarning] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # field -> file line of its key
    keys: dict[str, str] = field(default_factory=dict)  # field -> the key as the author wrote it


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


def _compose(yaml_text: str, path: object, first_line: int) -> tuple[yaml.Node | None, object]:
    """The YAML's node tree and value; an error naming the line for YAML that does not parse or repeats a key."""
    try:
        node = yaml.compose(yaml_text)
        raw = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + (mark.line if mark else 0)
        raise FrontMatterError(path, line, None, f"not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    _check_repeated_keys(node, path, first_line)
    return node, raw


def _check_repeated_keys(node: yaml.Node | None, path: object, first_line: int, where: str = "") -> None:
    """YAML keeps the last of two equal keys without a word; a repeated key is refused, both lines named."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value)
            line = first_line + key.start_mark.line
            if name in seen:
                raise FrontMatterError(path, line, where + name, f"written twice (lines {seen[name]} and {line}); "
                                                                 "keep one")
            seen[name] = line
            _check_repeated_keys(value, path, first_line, f"{where}{name}.")
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_repeated_keys(item, path, first_line, f"{where}{i}.")


def _validation_problem(exc: ValidationError, line_of, first_line: int) -> tuple[int, str | None, str]:
    """(file line, field, message) of a pydantic error; further errors are added to the message."""
    found, seen = [], set()
    for err in exc.errors():
        # a union's members (`function-wrap[...]`, `literal['measured']`) are not fields: one error per field
        loc = tuple(p for p in err["loc"] if isinstance(p, int) or _FIELD_PART.match(str(p)))
        rel = line_of(loc)
        line = first_line + rel if rel is not None else max(first_line - 1, 1)
        name = ".".join(map(str, loc)) or None
        if (line, name) in seen:
            continue
        seen.add((line, name))
        if err["type"] == "missing":
            msg = "is required but missing"
        elif err.get("input") is None and loc:
            msg = "is empty: fill it in"
        elif len(loc) < len(err["loc"]) and loc[-1] == "source":
            msg = f"{err['msg']}; a source is a public https address, or 'measured' with measured_on and method"
        else:
            msg = err["msg"]
        found.append((line, name, msg))
    line, name, msg = found[0]
    also = "; ".join(f"line {ln}: field '{f}': {m}" for ln, f, m in found[1:])
    return line, name, msg + (f" (also {also})" if also else "")


def validate_yaml_block(model: type[BaseModel], yaml_text: str, path: object, first_line: int) -> BaseModel:
    """Validate a YAML block against `model`; errors name path, file line and field.

    `first_line` is the file line (1-based) of the block's first YAML line. A missing field points
    at the line before the block (the opening `---` for front matter).
    """
    node, raw = _compose(yaml_text, path, first_line)
    if not isinstance(raw, dict):
        raise FrontMatterError(path, first_line, None, "expected a mapping of fields (key: value)")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise FrontMatterError(path, *_validation_problem(exc, lambda loc: yaml_line(node, loc), first_line)) from exc


def _field_key(key: str) -> str:
    return key.strip().lower().replace("-", "_").replace(" ", "_")


def _suggestion(key: str) -> str:
    close = difflib.get_close_matches(_field_key(key), [*FIELDS, *FIELD_SYNONYMS], n=1, cutoff=0.75)
    if not close:
        return ""
    meant = FIELD_SYNONYMS.get(close[0], close[0])
    return f" (did you mean '{meant}'?)"


def read_front_matter(text: str, path: object = "<text>") -> FrontMatterRead:
    """The front matter of a markdown text checked against the schema (see the module docstring)."""
    yaml_text, body, _ = split_front_matter(text, path)
    if yaml_text is None:
        return FrontMatterRead(None, text)
    if not yaml_text.strip():  # an empty block: no metadata, as if there were none
        return FrontMatterRead(FrontMatter(), body)
    first = 2  # the file line of the block's first YAML line
    node, raw = _compose(yaml_text, path, first)
    if not isinstance(raw, dict) or not isinstance(node, yaml.MappingNode):
        raise FrontMatterError(path, first, None, "expected a mapping of fields (key: value)")
    key_lines = {str(k.value): first + k.start_mark.line for k, _ in node.value}
    mapped: dict[str, object] = {}
    lines: dict[str, int] = {}
    keys: dict[str, str] = {}
    warnings: list[FrontMatterWarning] = []
    for key, value in raw.items():
        written = str(key)
        line = key_lines.get(written, first)
        name = _field_key(written)
        if name == METADATA_KEY:
            if not isinstance(value, dict):
                raise FrontMatterError(path, line, written, "expected a mapping of your own fields (name: value)")
            for inner, inner_value in value.items():
                if str(inner) in mapped:
                    raise FrontMatterError(path, line, f"{written}.{inner}", f"'{inner}' is also a field above")
                mapped[str(inner)] = inner_value
            continue
        canonical = name if name in FIELDS else FIELD_SYNONYMS.get(name)
        if canonical is None:
            canonical = written
            warnings.append(FrontMatterWarning(
                str(path), line, written, f"not a field of the front matter ({', '.join(FIELDS)}){_suggestion(written)}"
                "; kept as the document's metadata (put it under `metadata:` to say so)"))
        if canonical in mapped:
            if canonical not in LIST_FIELDS:
                raise FrontMatterError(path, line, written, f"'{keys[canonical]}' (line {lines[canonical]}) already "
                                                            f"gives the {canonical}; keep one")
            merged = _as_list(mapped[canonical])
            mapped[canonical] = [*(merged if isinstance(merged, list) else [merged]), *_listed(value)]
            continue
        mapped[canonical] = value
        lines[canonical], keys[canonical] = line, written
    try:
        front = FrontMatter.model_validate(mapped)
    except ValidationError as exc:
        def line_of(loc: tuple) -> int | None:
            name = str(loc[0]) if loc else ""
            return lines[name] - first if name in lines else yaml_line(node, loc)

        line, name, message = _validation_problem(exc, line_of, first)
        head, _, rest = (name or "").partition(".")
        named = keys.get(head, head) + (f".{rest}" if rest else "")  # the key as written: what the author sees
        raise FrontMatterError(path, line, named or None, message) from exc
    if front.kind is not None and front.kind not in KNOWN_KINDS:
        warnings.append(FrontMatterWarning(
            str(path), lines.get("kind", first), keys.get("kind", "kind"),
            f"kind '{front.kind}' is not one of {', '.join(KNOWN_KINDS)}; kept as written, so only "
            f"`--kind {front.kind}` finds it"))
    return FrontMatterRead(front, body, warnings, lines, keys)


def _listed(value: object) -> list:
    value = _as_list(value)
    return value if isinstance(value, list) else [value]


def parse_front_matter(text: str, path: object = "<text>") -> tuple[FrontMatter | None, str]:
    """(FrontMatter or None when the file has none, the body after the block); warnings are dropped."""
    read = read_front_matter(text, path)
    return read.front, read.body
