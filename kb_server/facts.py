"""Structured hardware facts: the schema of `corpus/accelerators/<id>.yaml` and its loader.

Every value carries its unit and where it came from: a public address, or `measured` with the
date and the method. The harness takes peaks from here as plain numbers (see `peaks()`).
Any vendor may appear; ids and vendors are normalised (lower case) before they are checked.
Facts reach the store two ways: the files under `<corpus_dir>/accelerators/` (read at start-up), and any
facts file given to `kkb ingest` (kept in the store, seen by every process at once).
"""

from __future__ import annotations

import datetime as dt
import difflib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, field_validator, model_validator

from kb_server.schemas import normalize_id
from kb_server.units import canonical_unit, field_dimension, to_si, unit_problem


class Fact(BaseModel):
    """One number with its unit and its provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    unit: str = Field(min_length=1)  # e.g. "GB/s", "TFLOP/s", "KiB", "MHz", "count"
    source: HttpUrl | Literal["measured"]
    measured_on: dt.date | None = None  # required when source is "measured"
    method: str | None = None  # how it was measured; required when source is "measured"
    note: str | None = None  # e.g. "dense, without sparsity", "per SM"

    @field_validator("unit", mode="after")
    @classmethod
    def _table_spelling(cls, unit: str) -> str:
        return canonical_unit(unit) or unit  # "TFLOPS" -> "TFLOP/s", "GByte" -> "GB": one spelling downstream

    @model_validator(mode="after")
    def _measured_needs_date_and_method(self) -> Fact:
        if self.source == "measured" and (self.measured_on is None or not self.method):
            raise ValueError("a measured fact needs measured_on (a date) and method")
        return self


def _dimensioned(dimension: str) -> type[Fact]:
    """A Fact whose unit must be one of kb_server.units' `dimension` (the error names the accepted units)."""

    def check(cls, unit: str) -> str:
        problem = unit_problem(unit, dimension)
        if problem:
            raise ValueError(problem)
        return unit

    return type(f"{dimension.title()}Fact", (Fact,), {
        "__doc__": f"A fact in a {dimension} unit.",
        "_dimension_unit": field_validator("unit", mode="after")(classmethod(check))})


BandwidthFact, RateFact, SizeFact = _dimensioned("bandwidth"), _dimensioned("rate"), _dimensioned("size")


class AcceleratorFacts(BaseModel):
    """The structured facts of one accelerator."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")  # file stem, e.g. "h200" (normalised: lower case)
    name: str  # marketing name, e.g. "NVIDIA H200 SXM"
    vendor: str = Field(min_length=1)  # any vendor, normalised: "nvidia", "amd", "meta", "aurora-silicon"
    architecture: str  # e.g. "Hopper", "CDNA3", "MTIA v2"
    compute_unit_name: str  # what the vendor calls a unit: "SM", "CU", "PE"
    aliases: list[str] = Field(default_factory=list)  # other names a user may type ("h200-sxm")
    # kernel languages that compile for this chip ("triton", "cuda", "cute", "hip"); empty: not stated
    backends: list[str] = Field(default_factory=list)
    compute_units: Fact
    warp_width: Fact | None = None  # threads per warp / wavefront; None where it does not apply
    register_file_per_unit: Fact | None = None
    shared_memory_per_unit: Fact | None = None  # shared memory / LDS / local memory per unit
    l1_cache_per_unit: Fact | None = None
    l2_cache: Fact | None = None
    last_level_cache: Fact | None = None  # e.g. AMD Infinity Cache, when distinct from L2
    memory_size: SizeFact  # units that peaks() and the harness's card compute with: kb_server/units.py
    memory_bandwidth: BandwidthFact
    boost_clock: Fact | None = None
    tdp: Fact | None = None
    # Peak dense throughput per dtype: keys like "fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8".
    peak_tflops: dict[str, RateFact] = Field(default_factory=dict)
    # Anything else worth a number: "max_threads_per_unit", "nvlink_bandwidth", "measured_copy_bandwidth"...
    extra: dict[str, Fact] = Field(default_factory=dict)
    # the main public documents for this chip; may be left out, since every fact names its own source
    sources: list[HttpUrl] = Field(default_factory=list)

    @field_validator("id", "vendor", mode="before")
    @classmethod
    def _normalised(cls, value: object) -> object:
        return normalize_id(value) if isinstance(value, str) else value

    def backend_problem(self, backend: str) -> str | None:
        """Why kernels in `backend` may not run on this chip, as its facts say (None: they list it). The
        tail of a warning that `kkb tune` and `kkb prompt` start with the backend's name."""
        listed = [b.lower() for b in self.backends]
        chip = f"{self.id} ({self.name})"
        if not listed:
            return (f"may not run on {chip}: its facts do not say which backends compile for it (add "
                    "`backends: [...]` to its facts file)")
        if backend.lower() not in listed:
            return f"does not compile for {chip}: its facts list {', '.join(listed)}"
        return None

    @field_validator("extra", mode="after")
    @classmethod
    def _extra_units(cls, extra: dict[str, Fact]) -> dict[str, Fact]:
        """The extra facts peaks() reads (measured_copy_bandwidth, measured_<dtype>_tflops) in their units."""
        for key, fact in extra.items():
            dimension = field_dimension(f"extra.{key}")
            problem = dimension and unit_problem(fact.unit, dimension)
            if problem:
                raise ValueError(f"{key}: {problem}")
        return extra

    def peaks(self) -> dict[str, float]:
        """Plain numbers for the harness: bytes/s and FLOP/s (each fact in its own unit), measured values
        preferred."""
        bw = self.extra.get("measured_copy_bandwidth", self.memory_bandwidth)
        out = {"memory_bandwidth_bytes_per_s": to_si(bw.value, bw.unit, "bandwidth")}
        for dtype, fact in self.peak_tflops.items():
            rate = self.extra.get(f"measured_{dtype}_tflops") or fact
            out[f"{dtype}_flops_per_s"] = to_si(rate.value, rate.unit, "rate")
        return out


class FactsError(ValueError):
    """An accelerator facts file is invalid; the message names the file and the field."""


def load_facts_file(path: Path) -> AcceleratorFacts:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise FactsError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise FactsError(f"{path}: expected a mapping at the top level")
    try:
        facts = AcceleratorFacts.model_validate(raw)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise FactsError(f"{path}: invalid accelerator facts: {fields}") from exc
    check_file_name(facts, path)
    return facts


def check_file_name(facts: AcceleratorFacts, path: Path) -> None:
    """A facts file is named after its id (`h200.yaml` holds `id: h200`), so one id has one file."""
    if facts.id != normalize_id(path.stem):
        raise FactsError(f"{path}: field id is {facts.id!r} but the file is named {path.stem!r}; "
                         f"name the file {facts.id}{path.suffix} or change the id")


def load_all_facts(directory: Path) -> dict[str, AcceleratorFacts]:
    """Every `<id>.yaml` under `directory`, keyed by id. Raises FactsError on the first bad file."""
    return {p.stem: load_facts_file(p) for p in sorted(directory.glob("*.yaml"))}


def accelerator_key(name: str) -> str:
    """How an accelerator's id, alias or name is compared: case, spaces and underscores aside ("Gaudi 3",
    "gaudi_3" and "gaudi-3" are one key). Every lookup by accelerator (facts, search, ingest) uses it."""
    return normalize_id(name).replace("_", "-")


def accelerator_names(facts: dict[str, AcceleratorFacts]) -> dict[str, str]:
    """The key of every id, alias and name of the facts -> its accelerator id (an id wins over another's alias)."""
    out: dict[str, str] = {}
    for acc in facts.values():
        for name in (acc.name, *acc.aliases):
            out.setdefault(accelerator_key(name), acc.id)
    return out | {accelerator_key(acc.id): acc.id for acc in facts.values()}


def find_accelerator(facts: dict[str, AcceleratorFacts], name: str) -> str | None:
    """The id of the accelerator that `name` is (its id, an alias or its name, see accelerator_key), or None."""
    return accelerator_names(facts).get(accelerator_key(name))


def closest_accelerators(facts: dict[str, AcceleratorFacts], name: str) -> list[str]:
    """Known ids spelled like `name` (a typo's likely meaning), best first."""
    names = accelerator_names(facts)
    return list(dict.fromkeys(names[k] for k in difflib.get_close_matches(accelerator_key(name), names, n=3,
                                                                          cutoff=0.6)))
