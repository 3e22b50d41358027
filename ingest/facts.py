"""Accelerator facts files (the schema of corpus/accelerators/*.yaml) -> validated AcceleratorFacts.

Usage: if is_facts_file(path, given=True): facts = read_facts(path)

A YAML file is a facts file when it was named on the command line, when it sits in a folder named
`accelerators`, when it does not parse (so its error is reported, with its line, not lost), or when its
top level holds any field of the facts schema (`id`, `name`, `vendor`, `memory_bandwidth`, ...; any case,
so `ID:` is reported as a typo); a kernel's sidecar (a YAML file next to a kernel source of the same
name, or a family's kernel.yaml) never is. Any other YAML is `other_yaml`: ingest names it as ignored. Errors name the file, the line and the
field (a fact without its unit or source, a vendor of the wrong type); nothing of a refused file reaches
the store, so the facts an accelerator had before stay.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ingest.frontmatter import FrontMatterError, validate_yaml_block
from ingest.kernels import KERNEL_SUFFIXES
from kb_server.facts import AcceleratorFacts, FactsError, check_file_name

FACTS_SUFFIXES = {".yaml", ".yml"}
FACTS_KEYS = frozenset(AcceleratorFacts.model_fields)  # top-level keys that make a YAML file read as facts
KERNEL_RECORD = "kernel.yaml"  # a kernel family's record, read with its kernel.py (ingest/kernels.py)


def is_sidecar(path: Path) -> bool:
    return any(path.with_suffix(s).is_file() for s in KERNEL_SUFFIXES)


def is_kernel_yaml(path: Path) -> bool:
    """A kernel's sidecar or a family's kernel.yaml: never facts, never warned about."""
    return path.name.lower() == KERNEL_RECORD or is_sidecar(path)


def is_facts_file(path: Path, given: bool = False) -> bool:
    """Whether a YAML file holds accelerator facts (see the module docstring)."""
    if path.suffix.lower() not in FACTS_SUFFIXES or is_kernel_yaml(path):
        return False
    if given or path.parent.name == "accelerators":
        return True
    try:
        raw = yaml.safe_load(path.read_bytes())
    except yaml.YAMLError:
        return True  # validated as facts, so the parse error is reported with its line instead of lost
    except OSError:
        return True  # read again by the pipeline, which names why it cannot be read
    return isinstance(raw, dict) and any(str(k).strip().lower() in FACTS_KEYS for k in raw)


def read_facts(path: Path, display: str | None = None) -> AcceleratorFacts:
    """The validated facts of one file; FrontMatterError naming file, line and field otherwise."""
    name = display or str(path)
    facts = validate_yaml_block(AcceleratorFacts, path.read_text(encoding="utf-8"), name, first_line=1)
    try:
        check_file_name(facts, Path(name))  # the name as given: an upload is stored under its hash
    except FactsError as exc:
        raise FrontMatterError(name, _id_line(path), "id", str(exc).split(": ", 1)[-1]) from exc
    return facts


def _id_line(path: Path) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("id:"):
            return number
    return 1
