"""Answering a fact question ("h100 shared memory", "bf16 peak") from the structured facts.

Usage: from kb_server.factlookup import lookup; lookup(facts, "HBM bandwidth")

The question is matched against each fact's field name, a small synonym table and the fact's note.
A phrase scores by how much of it the question contains, weighted by how much of the question it
explains, so "nvlink bandwidth" prefers `extra.nvlink_bandwidth` over `memory_bandwidth`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel

from kb_server.facts import AcceleratorFacts, Fact, closest_accelerators, find_accelerator

MIN_SCORE = 0.5  # below this a match is noise (one shared word out of two or more)

# Field -> what people call it. Words are normalised by `_tokens` (lower case, dtype names, plurals).
SYNONYMS: dict[str, list[str]] = {
    "compute_units": ["compute units", "sm count", "sms", "number of sms", "streaming multiprocessors",
                      "cus", "compute unit count", "pes", "cores"],
    "warp_width": ["warp size", "warp width", "wavefront size", "wave size", "threads per warp", "simd width"],
    "register_file_per_unit": ["register file", "registers", "vgpr", "register file size"],
    "shared_memory_per_unit": ["shared memory", "smem", "lds", "local data share", "scratchpad",
                               "local memory", "shared mem", "shared memory size", "lds size"],
    "l1_cache_per_unit": ["l1", "l1 cache"],
    "l2_cache": ["l2", "l2 cache"],
    "last_level_cache": ["infinity cache", "last level cache", "llc", "mall"],
    "memory_size": ["memory size", "memory capacity", "hbm capacity", "hbm size", "vram", "dram size",
                    "how much memory", "device memory"],
    "memory_bandwidth": ["memory bandwidth", "hbm bandwidth", "dram bandwidth", "bandwidth", "hbm"],
    "boost_clock": ["boost clock", "clock", "frequency", "clock speed"],
    "tdp": ["tdp", "power", "board power", "watts"],
}
_DTYPE_WORDS = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "single": "fp32",
                "float64": "fp64", "double": "fp64", "float8": "fp8", "e4m3": "fp8", "tensorfloat32": "tf32"}
_STOPWORDS = {"what", "is", "the", "of", "a", "an", "on", "per", "how", "much", "many", "does", "do", "in",
              "for", "its", "it", "have", "has", "s", "value"}


class FactMatch(BaseModel):
    """One fact that answers the question, with its provenance and how well it matched (0..1)."""

    field: str  # e.g. "shared_memory_per_unit", "peak_tflops.bf16", "extra.nvlink_bandwidth"
    value: float
    unit: str
    source: str  # a public address, or "measured"
    note: str | None = None
    measured_on: str | None = None
    method: str | None = None
    score: float


class FactAnswer(BaseModel):
    accelerator: str
    question: str
    matches: list[FactMatch]  # best first


class AcceleratorNotFound(LookupError):
    def __init__(self, name: str, known: list[str], close: list[str] | None = None):
        meant = f"did you mean {' or '.join(close)}? " if close else ""
        super().__init__(f"unknown accelerator {name!r}; {meant}known: {', '.join(known)}")
        self.name, self.known = name, known


class FactNotFound(LookupError):
    def __init__(self, accelerator: str, question: str, fields: list[str]):
        super().__init__(
            f"no fact of {accelerator} matches {question!r}; ask about one of: {', '.join(fields)}"
        )
        self.accelerator, self.question, self.fields = accelerator, question, fields


def resolve_accelerator(facts: dict[str, AcceleratorFacts], name: str) -> AcceleratorFacts:
    """The accelerator with this id, alias or name (case, spaces and underscores aside: accelerator_key)."""
    found = find_accelerator(facts, name)
    if found is None:
        raise AcceleratorNotFound(name, sorted(facts), closest_accelerators(facts, name))
    return facts[found]


def fact_fields(acc: AcceleratorFacts) -> dict[str, Fact]:
    """Every fact of an accelerator by its dotted field name."""
    out: dict[str, Fact] = {}
    for name in AcceleratorFacts.model_fields:
        value = getattr(acc, name)
        if isinstance(value, Fact):
            out[name] = value
    out |= {f"peak_tflops.{k}": v for k, v in acc.peak_tflops.items()}
    out |= {f"extra.{k}": v for k, v in acc.extra.items()}
    return out


def lookup(acc: AcceleratorFacts, question: str, limit: int = 5) -> FactAnswer:
    """The best matching facts for a question; raises FactNotFound (with the field list) if none."""
    ignore = _STOPWORDS | set(_tokens(acc.id)) | {t for a in acc.aliases for t in _tokens(a)}
    q_tokens = [t for t in _tokens(question) if t not in ignore]
    fields = fact_fields(acc)
    scored: list[FactMatch] = []
    for field, fact in fields.items():
        score = _score(q_tokens, _phrases(field, fact))
        if score >= MIN_SCORE:
            scored.append(_match(field, fact, score))
    if not scored:
        raise FactNotFound(acc.id, question, sorted(fields))
    scored.sort(key=lambda m: (-m.score, m.field))
    return FactAnswer(accelerator=acc.id, question=question, matches=scored[:limit])


def _match(field: str, fact: Fact, score: float) -> FactMatch:
    return FactMatch(
        field=field, value=fact.value, unit=fact.unit, source=str(fact.source), note=fact.note,
        measured_on=fact.measured_on.isoformat() if fact.measured_on else None, method=fact.method,
        score=round(score, 4),
    )


@dataclass(frozen=True)
class _Phrase:
    tokens: tuple[str, ...]
    weight: float  # 1 for names and synonyms, less for words of the note


def _phrases(field: str, fact: Fact) -> list[_Phrase]:
    group, _, key = field.partition(".")
    words = [field.replace(".", " ").replace("_", " ")]
    if group == "peak_tflops":
        words += [f"{key} peak", f"{key} tflops", f"{key} flops", f"{key} throughput", f"{key} compute",
                  f"{key} tensor core", key]
    elif group == "extra":
        words.append(key.replace("_", " "))
    else:
        words += SYNONYMS.get(field, [])
        words.append(field.removesuffix("_per_unit").replace("_", " "))
    phrases = [_Phrase(tuple(_tokens(w)), 1.0) for w in words]
    if fact.note:
        phrases.append(_Phrase(tuple(t for t in _tokens(fact.note) if t not in _STOPWORDS), 0.6))
    return [p for p in phrases if p.tokens]


def _score(q_tokens: list[str], phrases: list[_Phrase]) -> float:
    if not q_tokens:
        return 0.0
    q = set(q_tokens)
    best = 0.0
    for phrase in phrases:
        p = set(phrase.tokens)
        shared = len(p & q)
        if not shared:
            continue
        phrase_cover = shared / len(p)
        question_cover = shared / len(q)
        best = max(best, phrase.weight * phrase_cover * (0.5 + 0.5 * question_cover))
    return best


def _tokens(text: str) -> list[str]:
    out = []
    for raw in re.findall(r"[a-z0-9]+", text.lower()):
        tok = _DTYPE_WORDS.get(raw, raw)
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]  # "tflops" ~ "tflop", "registers" ~ "register"
        out.append(tok)
    return out
