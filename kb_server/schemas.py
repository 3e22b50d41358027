"""The knowledge base's records: Chunk, Hit, KernelRecord and the filters of a search.

One name for one thing: these are the nouns the HTTP API, the CLI, the ingest and the agent
client all use (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The kinds of document the corpus uses; any other kind a document names is kept as written (normalised).
DEFAULT_BACKEND = "triton"  # the kernel language a prompt asks for when none is named (CLI, HTTP, MCP)
KNOWN_KINDS: tuple[str, ...] = ("arch", "isa", "guide", "playbook", "kernel", "rules")
# The other words people use for those kinds (normalised), read as the kind in front matter and filters.
KIND_SYNONYMS: dict[str, str] = {
    **{k: "arch" for k in ("architecture", "architectures", "microarchitecture", "hardware", "arch-overview",
                           "architecture-overview")},
    **{k: "isa" for k in ("instruction-set", "instruction-set-architecture", "instructions", "assembly")},
    **{k: "guide" for k in ("guides", "tutorial", "tutorials", "how-to", "howto", "programming-guide",
                            "best-practices", "manual")},
    **{k: "playbook" for k in ("playbooks", "recipe", "recipes", "cookbook", "tuning", "tuning-guide",
                               "optimization", "optimisation")},
    **{k: "kernel" for k in ("kernels", "kernel-notes")},
    **{k: "rules" for k in ("rule", "constraints", "policy")},
}
MAX_K = 100  # the most hits one search may ask for (KBSettings.max_k may set fewer, never more)
_NOT_ID = re.compile(r"[^a-z0-9_]+")


def normalize_id(value: str) -> str:
    """An accelerator id, vendor or kind as stored: lower case, each run of other characters one '-'.

    "Aurora Silicon" -> "aurora-silicon", "MI300X" -> "mi300x", "mtia-v2" stays.
    """
    return _NOT_ID.sub("-", value.strip().lower()).strip("-")



class Chunk(BaseModel):
    """A heading-aware piece of a document, as stored."""

    model_config = ConfigDict(frozen=True)

    id: str  # content hash of (document id, heading path, text)
    document_id: str  # stable id of the source document (hash of its path relative to the ingest root)
    text: str
    heading_path: list[str]  # ["H100", "Memory hierarchy", "Shared memory"]
    source: str  # the document's path or URL
    title: str
    accelerator: list[str]  # accelerator ids (normalize_id), or ["any"]
    vendor: str  # any vendor id (normalize_id): nvidia, amd, meta, aurora-silicon, ... or "any"
    kind: str  # KNOWN_KINDS, or another kind a document names
    source_urls: list[str] = Field(default_factory=list)  # public addresses the facts came from
    # front-matter fields the schema does not know, kept as written (lists of scalars or scalars)
    metadata: dict[str, str | int | float | bool | list[str | int | float | bool]] = Field(default_factory=dict)


class DocumentSummary(BaseModel):
    """One file in the knowledge base, as `GET /v1/documents` and `kkb documents` list it."""

    document_id: str
    name: str  # the file's name as given (an upload's own name, a path of a local ingest)
    type: str  # "document" | "facts" | "kernel"
    title: str = ""
    accelerator: list[str] = Field(default_factory=list)  # ids, or ["any"]
    vendor: str | None = None
    kind: str | None = None  # arch, isa, guide ... for documents; "facts"; "kernel"
    size_bytes: int | None = None
    chunks: int | None = None  # chunks of a document
    file_hash: str  # sha256 of the file (a kernel's: of its bundled source and sidecar)
    ingested_at: str | None = None  # ISO 8601, UTC


class Hit(BaseModel):
    """A chunk returned by a search, with its scores (higher is better for all three)."""

    model_config = ConfigDict(frozen=True)

    chunk: Chunk
    score: float  # the fused (reciprocal rank fusion) score used for ranking
    dense_score: float | None = None  # cosine similarity; None when dense search did not return it
    lexical_score: float | None = None  # BM25; None when lexical search did not return it


class SearchFilters(BaseModel):
    """Metadata filters; each is optional and they combine with AND."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    accelerator: str | None = None  # matches documents for this id and documents for "any"
    vendor: str | None = None
    kind: str | None = None

    @field_validator("accelerator", "vendor", "kind", mode="after")
    @classmethod
    def _normalised(cls, value: str | None) -> str | None:
        return normalize_id(value) or None if value is not None else None

    @field_validator("kind", mode="after")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        return KIND_SYNONYMS.get(value, value) if value is not None else None


class KernelMeasurement(BaseModel):
    """One measured result of a kernel on one accelerator, spec and shape."""

    model_config = ConfigDict(frozen=True)

    accelerator: str  # e.g. "h200", or "cpu-interpreter" for CI runs: the device that measured it
    spec: str  # spec name, e.g. "softmax_wide_rows"
    shape: str  # human-readable input shapes, e.g. "4096x32768"
    dtype: str  # "float32", "bfloat16", ...
    latency_ms: float | None = None  # None: checked at this shape, not timed
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    fraction_of_limit: float | None = None  # achieved / hardware limit (bandwidth or FLOP rate)
    limit_kind: Literal["memory", "compute"] | None = None  # which limit fraction_of_limit is of
    date: str | None = None  # ISO date of the run
    versions: dict[str, str] = Field(default_factory=dict)  # torch, triton, cuda, driver
    command: str | None = None  # the command that measured it
    results_file: str | None = None  # benchmarks/results/... that holds the raw numbers
    # what an exported kernel dispatches on (harness/measured.py), where a session measured it
    device_name: str | None = None  # as the driver names the device, e.g. "NVIDIA H200"; "cpu" (interpreter)
    variant: str | None = None  # the spec variant: "default" or one of its VARIANTS
    inputs: list[dict] = Field(default_factory=list)  # per forward input {"shape", "dtype"} or {"value"}
    state: list[dict] = Field(default_factory=list)  # parameters and buffers {"path", "shape", "dtype"}
    correct: bool | None = None  # checked against the reference at these shapes
    eager_ms: float | None = None  # the reference's median at these shapes, same device and method
    compile_ms: float | None = None  # torch.compile of the reference, likewise

    @property
    def outcome(self) -> str:
        """"wins" (right, and faster than torch.compile where that was timed, else than eager), "loses"
        (slower, or wrong), "untested" (checked only: no speedup recorded)."""
        if self.correct is False:
            return "loses"
        speedup = self.speedup_vs_compile if self.speedup_vs_compile is not None else self.speedup_vs_eager
        if speedup is None:
            return "untested"
        return "wins" if speedup >= 1.0 else "loses"

    def describe(self) -> str:
        """One line for people: where it was measured and what it gave."""
        device = f"{self.accelerator} ({self.device_name})" if self.device_name else self.accelerator
        at = f"{self.spec}" + (f" {self.variant}" if self.variant else "") + f" [{self.shape or '?'}] {self.dtype}"
        if self.correct is False:
            how = "wrong"
        elif self.speedup_vs_compile is not None:
            how = f"{self.speedup_vs_compile:.3g}x over torch.compile"
        elif self.speedup_vs_eager is not None:
            how = f"{self.speedup_vs_eager:.3g}x over eager"
        else:
            how = "checked, not timed"
        if self.latency_ms is not None:
            how += f", {self.latency_ms:.4g} ms"
        return f"{at} on {device}: {how}"


class KernelRecord(BaseModel):
    """A winning kernel in the skill library."""

    model_config = ConfigDict(frozen=True)

    id: str  # content hash of the source and backend, unless given
    name: str
    op_family: str  # e.g. "softmax", "layernorm", "gemm_epilogue"
    op_signature: str  # normalised op signature it serves, e.g. "softmax(dim=-1)"
    backend: str  # triton | cuda | cute | hip
    source: str  # the whole kernel file
    description: str = ""
    tunables: dict[str, list[int | float | str]] = Field(default_factory=dict)  # name -> allowed values
    dtypes: list[str] = Field(default_factory=list)
    accelerators: list[str] = Field(default_factory=list)
    measurements: list[KernelMeasurement] = Field(default_factory=list)
    path: str | None = None  # where the source lives, when it came from a file
