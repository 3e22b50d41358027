"""The retrieval-augmented prompt builder: spec + accelerator + backend -> PromptBundle.

Usage: from kb_server.prompt import build_prompt; build_prompt(store, spec_source, "h100", "triton")

The spec is never executed: its ops are read from its AST (kb_server.spec_ops) and turned into
retrieval queries: one per op, one for the op family they suggest, one about the hardware, one for the
bottleneck the family suggests, and the caller's extra queries (a measured bottleneck, a failure).
The passages are ranked across the queries by what the spec needs (_ranked_hits, kb_server.passages):
the spec's family and ops and the target's own documents first, the other bottleneck's techniques last.
Every prompt holds the target's facts, at least `passages_min` passages and the relevant part of the
nearest library kernel (kb_server.excerpt). The budget is shared by rule (kb_server.budget): the rules
and the task whole, then a minimum for each other section, then the rest by weight; no section is
dropped for another. Tokens are counted with the embedding model's own tokenizer (kb_server.tokens).
Templates and the budget's numbers are data: kb_server/prompts/prompt.toml.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from kb_server.budget import BudgetTooSmall, Claim, share
from kb_server.excerpt import kernel_excerpt
from kb_server.factlookup import fact_fields, resolve_accelerator
from kb_server.facts import AcceleratorFacts
from kb_server.passages import Topic, passage_bonus, topic_of
from kb_server.schemas import Hit, KernelRecord, SearchFilters
from kb_server.spec_ops import PromptError, op_family, spec_ops
from kb_server.tokens import count_tokens, get_counter

if TYPE_CHECKING:  # the store imports heavy things (chromadb, torch); the builder only calls it
    from kb_server.store import Store

__all__ = ["BACKENDS", "PromptBundle", "PromptError", "PromptSection", "build_prompt", "estimate_tokens",
           "spec_ops"]

TEMPLATE_PATH = Path(__file__).parent / "prompts" / "prompt.toml"
BACKENDS = ("triton", "cuda", "cute", "hip")
KERNEL_CANDIDATES = 2  # library kernels shown at most
MAX_QUERIES = 10  # an op-heavy spec should not turn into dozens of searches
estimate_tokens = count_tokens  # the name callers used before counts came from a real tokenizer


class PromptSection(BaseModel):
    name: str  # hardware_facts | passages | example_kernels | rules | task
    text: str
    sources: list[str]  # passages: one per passage, in order; kernels: their files; facts: their addresses
    tokens: int


class PromptBundle(BaseModel):
    text: str
    sections: list[PromptSection]
    tokens: int
    retrieval: bool = True  # False: built without passages and library kernels (the --no-retrieval baseline)
    queries: list[str] = Field(default_factory=list)  # the retrieval queries, in order
    family: str | None = None  # the op family the spec's ops suggest
    bottleneck: str | None = None  # the bottleneck that family suggests before anything is measured
    # why the prompt may not serve: e.g. a backend the target's facts do not list ("backend cuda does not
    # compile for mtia-v2 ..."); the prompt is built all the same
    warnings: list[str] = Field(default_factory=list)


@cache
def load_template(path: Path = TEMPLATE_PATH) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def build_prompt(store: Store, spec_source: str, accelerator: str, backend: str, token_budget: int = 6000,
                 extra_queries: list[str] | tuple[str, ...] = (), retrieval: bool = True) -> PromptBundle:
    """A retrieval-augmented prompt for writing `backend` code for `spec_source` on `accelerator`."""
    if backend not in BACKENDS:
        raise PromptError("backend", f"unknown backend {backend!r}; one of: {', '.join(BACKENDS)}")
    if token_budget <= 0:
        raise PromptError("token_budget", f"token_budget must be positive, got {token_budget}")
    try:
        acc = resolve_accelerator(store.accelerators(), accelerator)
    except LookupError as exc:  # the message lists the known ids
        raise PromptError("accelerator", str(exc)) from exc
    tpl = load_template()
    ops = spec_ops(spec_source)
    family = op_family(spec_ops(spec_source, arithmetic=True), tpl["families"])
    bottleneck = "compute" if family in tpl["bottleneck"]["compute_families"] else "memory"
    queries = _queries(tpl, ops, family, bottleneck, acc, backend, list(extra_queries))
    topic = topic_of(family, ops, bottleneck, tpl["retrieval"])
    hits = _ranked_hits(store, queries, acc.id, topic, tpl["retrieval"], tpl["budget"]["passages_min"]) \
        if retrieval else []
    kernels = _nearest_kernels(store, ops, family, backend) if retrieval else []
    ops_text = ", ".join(ops) or "none found"
    sections = _fit(tpl, token_budget, acc, backend, spec_source, ops_text, bottleneck, hits, kernels, retrieval)
    text = tpl["separator"].join(s.text for s in sections)
    mismatch = acc.backend_problem(backend)
    warnings = [f"backend {backend} {mismatch}; kernels written from this prompt may not run on {acc.id}"]
    return PromptBundle(text=text, sections=sections, tokens=count_tokens(text), retrieval=retrieval,
                        queries=[q for _, q in queries] if retrieval else [], family=family, bottleneck=bottleneck,
                        warnings=warnings if mismatch else [])


def _queries(tpl: dict, ops: list[str], family: str | None, bottleneck: str, acc: AcceleratorFacts,
             backend: str, extra: list[str]) -> list[tuple[str, str]]:
    """(kind, query) pairs, the kind weighing the query's hits ([retrieval.weights] of prompt.toml)."""
    q = tpl["queries"]
    out = [("extra", e) for e in extra if e.strip()]  # a measured bottleneck or a failure: what the caller knows
    if family:
        out.append(("family", q["family"].format(family=family.replace("_", " "), backend=backend)))
    if len(ops) > 1:
        out.append(("ops", q["ops"].format(ops=", ".join(op.replace("_", " ") for op in ops), backend=backend)))
    if not family or len(ops) == 1:
        out += [("op", q["op"].format(op=op.replace("_", " "), backend=backend)) for op in ops]
    out.append(("bottleneck", q["bottleneck"][bottleneck]))
    out.append(("hardware", q["hardware"].format(accelerator_name=acc.name)))
    seen: set[str] = set()
    unique = [(kind, text) for kind, text in out if not (text in seen or seen.add(text))]  # first of each text
    if len(unique) > MAX_QUERIES:  # keep the hardware and bottleneck queries; drop the last op queries
        unique = unique[: MAX_QUERIES - 2] + unique[-2:]
    return unique


def _ranked_hits(store: Store, queries: list[tuple[str, str]], accelerator: str, topic: Topic,
                 cfg: dict, minimum: int = 0) -> list[Hit]:
    """The passages across the queries, best first (the rule: [retrieval] of prompt.toml). Each query's first
    `depth` hits, filtered to the target, score by their rank and the query's weight, summed where several
    queries find one; kb_server.passages adds what the spec needs (its topic, the target's own documents).
    Passages off topic, below `min_score` or past a document's share come only to make up `minimum`."""
    filters = SearchFilters(accelerator=accelerator)
    depth, offset = cfg["depth"], cfg["rank_offset"]
    scores: dict[str, float] = {}
    found: dict[str, Hit] = {}  # in the order first seen: ties keep it
    for kind, query in queries:
        for rank, hit in enumerate(store.search(query, k=depth, filters=filters)[:depth], start=1):
            found.setdefault(hit.chunk.id, hit)
            scores[hit.chunk.id] = scores.get(hit.chunk.id, 0.0) + cfg["weights"][kind] * (offset + 1) / (offset + rank)
    off_topic = set()
    for cid, hit in found.items():
        bonus = passage_bonus(hit.chunk, accelerator, topic, cfg)
        if bonus is None:  # the other bottleneck's techniques, not the spec's
            off_topic.add(cid)
        else:
            scores[cid] += bonus
    out: list[Hit] = []
    reserve: list[str] = []
    per_document: dict[str, int] = {}
    for cid in sorted(found, key=lambda cid: (cid in off_topic, -scores[cid])):
        doc = found[cid].chunk.document_id
        if cid in off_topic or scores[cid] < cfg["min_score"] or per_document.get(doc, 0) >= cfg["max_per_document"]:
            reserve.append(cid)
        elif len(out) < cfg["max_passages"]:
            per_document[doc] = per_document.get(doc, 0) + 1  # room for more than one document's view
            out.append(found[cid])
    return out + [found[cid] for cid in reserve[: max(0, minimum - len(out))]]


def _nearest_kernels(store: Store, ops: list[str], family: str | None, backend: str) -> list[KernelRecord]:
    """The library kernels nearest the spec: its family's first, then by meaning; another backend's
    kernel when this backend has none (it still shows the algorithm)."""
    query = " ".join(filter(None, [family, *ops])) or "kernel"
    for wanted in (backend, None):
        found: list[KernelRecord] = []
        if family:
            found += store.search_kernels(query, k=1, op_family=family, backend=wanted)
        found += store.search_kernels(query, k=KERNEL_CANDIDATES + 1, backend=wanted)
        unique = list({k.id: k for k in found}.values())[:KERNEL_CANDIDATES]
        if unique:
            return unique
    return []


# ---- sections and the budget ----------------------------------------------------------------------


def _section(name: str, text: str, sources: list[str]) -> PromptSection:
    return PromptSection(name=name, text=text, sources=sources, tokens=count_tokens(text))


def _fit(tpl: dict, budget: int, acc: AcceleratorFacts, backend: str, spec_source: str, ops_text: str,
         bottleneck: str, hits: list[Hit], kernels: list[KernelRecord], retrieval: bool) -> list[PromptSection]:
    """The five sections within `budget` tokens (see the module docstring for the rule)."""
    b, cfg = tpl["budget"], tpl["blocks"]
    fixed = {"rules": _rules_section(tpl, backend), "task": _task_section(tpl, spec_source, acc, backend, ops_text)}
    # three renderings of the facts, longest first: with notes and methods; without; the main fields only
    tiers = [_facts_section(tpl, acc, notes=True, extra=True), _facts_section(tpl, acc, notes=False, extra=True),
             _facts_section(tpl, acc, notes=False, extra=False)]
    facts_full, facts_short = tiers[0], tiers[-1]
    separators = count_tokens(tpl["separator"]) * (len(tpl["order"]) - 1)
    available = budget - fixed["rules"].tokens - fixed["task"].tokens - separators
    if not retrieval:
        empty = {"passages": _section("passages", cfg["retrieval_off"], []),
                 "example_kernels": _section("example_kernels", cfg["retrieval_off"], [])}
        available -= empty["passages"].tokens + empty["example_kernels"].tokens
        facts = next((t for t in tiers if t.tokens <= available), facts_short)
        if facts.tokens > available:
            raise _too_small(budget, budget - available + facts.tokens)
        return _ordered(tpl, {**fixed, **empty, "hardware_facts": facts})
    passages_demand = _passages_section(tpl, hits, ops_text, bottleneck, None).tokens
    passages_min = _passages_section(tpl, hits[: b["passages_min"]], ops_text, bottleneck,
                                     b["passage_min_tokens"]).tokens
    kernels_demand = _kernels_section(tpl, kernels, backend, 10**9).tokens
    claims = [Claim("hardware_facts", facts_short.tokens, facts_full.tokens, b["facts_weight"]),
              Claim("passages", passages_min, passages_demand, b["passages_weight"]),
              Claim("example_kernels", b["kernel_min_tokens"], kernels_demand, b["kernels_weight"])]
    try:
        grants = share(available, claims)
    except BudgetTooSmall as exc:
        raise _too_small(budget, budget - available + exc.need) from exc
    facts = next((t for t in tiers if t.tokens <= grants["hardware_facts"]), facts_short)
    passages = _fit_passages(tpl, hits, ops_text, bottleneck, grants["passages"])
    kernel_code = _kernels_section(tpl, kernels, backend, grants["example_kernels"])
    # sections fill their grants in whole passages and whole pieces of code: what is left over goes to
    # the passages, then to the kernel code
    spare = available - facts.tokens - passages.tokens - kernel_code.tokens
    if spare > 0:
        passages = _fit_passages(tpl, hits, ops_text, bottleneck, passages.tokens + spare)
        spare = available - facts.tokens - passages.tokens - kernel_code.tokens
        kernel_code = _kernels_section(tpl, kernels, backend, kernel_code.tokens + spare)
    return _ordered(tpl, {**fixed, "hardware_facts": facts, "passages": passages, "example_kernels": kernel_code})


def _too_small(budget: int, need: int) -> PromptError:
    return PromptError("token_budget", f"token_budget {budget} is below the {need} tokens that the rules, the spec, "
                       "the hardware facts and the minimum of passages and kernel code need; raise it")


def _ordered(tpl: dict, sections: dict[str, PromptSection]) -> list[PromptSection]:
    return [sections[name] for name in tpl["order"]]


def _facts_section(tpl: dict, acc: AcceleratorFacts, notes: bool, extra: bool) -> PromptSection:
    """The facts section: `notes` adds each fact's note and a measurement's method, `extra` the facts
    under `extra` (limits, measured rates) besides the main fields and the peak rates."""
    b = tpl["blocks"]
    lines, sources = [], []
    for field, fact in fact_fields(acc).items():
        if not extra and field.startswith("extra."):
            continue
        source = str(fact.source)
        if source == "measured":  # the method is long: the full section names it, the short one its date
            source = f"measured {fact.measured_on}: {fact.method}" if notes else f"measured {fact.measured_on}"
        if source not in sources:
            sources.append(source)
        note = f" ({fact.note})" if notes and fact.note else ""
        lines.append(b["fact_line"].format(label=field.replace("_", " "), value=f"{fact.value:g}", unit=fact.unit,
                                           note=note, ref=sources.index(source) + 1))
    source_lines = "\n".join(b["source_line"].format(ref=i + 1, source=s) for i, s in enumerate(sources))
    text = b["hardware_facts"].format(accelerator_name=acc.name, architecture=acc.architecture, vendor=acc.vendor,
                                      fact_lines="\n".join(lines), source_lines=source_lines)
    return _section("hardware_facts", text, sources)


def _passage_source(hit: Hit) -> str:
    c = hit.chunk
    return c.source + (f" ({', '.join(c.source_urls)})" if c.source_urls else "")


def _passage_block(tpl: dict, rank: int, hit: Hit, max_text_tokens: int | None) -> str:
    b = tpl["blocks"]
    text = hit.chunk.text.strip()
    if max_text_tokens is not None and count_tokens(text) > max_text_tokens:
        cut = get_counter().truncate(text, max(1, max_text_tokens - count_tokens(b["passage_cut"])))
        text = cut.rstrip() + b["passage_cut"]
    return b["passage"].format(rank=rank, heading=" > ".join(hit.chunk.heading_path) or hit.chunk.title,
                               source=hit.chunk.source, text=text)


def _passages_section(tpl: dict, hits: list[Hit], ops_text: str, bottleneck: str,
                      max_text_tokens: int | None) -> PromptSection:
    b = tpl["blocks"]
    blocks = [_passage_block(tpl, i + 1, h, max_text_tokens) for i, h in enumerate(hits)]
    text = b["passages"].format(ops=ops_text, bottleneck=bottleneck,
                                passage_blocks="\n\n".join(blocks) or b["no_passages"])
    return _section("passages", text, [_passage_source(h) for h in hits])


def _fit_passages(tpl: dict, hits: list[Hit], ops_text: str, bottleneck: str, grant: int) -> PromptSection:
    """The best-ranked passages that fit `grant`, whole; at least `passages_min`, cut evenly if need be."""
    n_min = min(tpl["budget"]["passages_min"], len(hits))
    chosen: list[Hit] = []
    for hit in hits:
        if _passages_section(tpl, [*chosen, hit], ops_text, bottleneck, None).tokens <= grant:
            chosen.append(hit)
        elif len(chosen) >= n_min:
            break
    if len(chosen) >= n_min:
        return _passages_section(tpl, chosen, ops_text, bottleneck, None)
    first = hits[:n_min]
    cap = tpl["budget"]["passage_min_tokens"]
    while True:  # the largest even cap that fits: at least passage_min_tokens (the minimum was granted)
        wider = _passages_section(tpl, first, ops_text, bottleneck, cap + 20)
        if wider.tokens > grant or cap > 400:
            return _passages_section(tpl, first, ops_text, bottleneck, cap)
        cap += 20


def _kernels_section(tpl: dict, kernels: list[KernelRecord], backend: str, grant: int) -> PromptSection:
    """The nearest kernel's excerpt within `grant`; a second kernel when the first is whole and room is left."""
    target = grant
    for _ in range(4):  # the frame is estimated; shrink by what it was off until the section fits
        section = _kernels_within(tpl, kernels, backend, target)
        if section.tokens <= grant:
            return section
        target -= section.tokens - grant
    return _kernels_within(tpl, kernels[:0], backend, grant)


def _kernels_within(tpl: dict, kernels: list[KernelRecord], backend: str, grant: int) -> PromptSection:
    b, budget = tpl["blocks"], tpl["budget"]
    frame = b["example_kernels"].format(backend=backend, kernel_blocks="")
    left = grant - count_tokens(frame) - 1
    blocks, sources = [], []
    for i, record in enumerate(kernels):
        path = record.path or f"kernel:{record.id}"
        longest_note = b["excerpt_part"].format(path=path, shown="TUNABLES and 99 of its 99 kernel functions")
        empty = _kernel_block(tpl, record, backend, longest_note, "")
        room = left - count_tokens(empty) - (2 if blocks else 0)
        if i > 0 and room < budget["second_kernel_min_tokens"]:
            break
        if room < 1:
            break
        excerpt = kernel_excerpt(record.source, room, count_tokens, get_counter().truncate)
        note = b["excerpt_whole"].format(path=path) if excerpt.whole else b["excerpt_part"].format(
            path=path, shown=_shown(excerpt))
        block = _kernel_block(tpl, record, backend, note, excerpt.text)
        blocks.append(block)
        sources.append(path)
        left -= count_tokens(block) + (2 if len(blocks) > 1 else 0)
        if not excerpt.whole:
            break
    text = b["example_kernels"].format(backend=backend, kernel_blocks="\n\n".join(blocks) or b["no_kernels"])
    return _section("example_kernels", text, sources)


def _shown(excerpt) -> str:
    has_tunables = "TUNABLES" in excerpt.names
    what = f"{excerpt.kernels_shown} of its {excerpt.kernels_in_file} kernel functions"
    return ("TUNABLES and " if has_tunables else "") + what


def _kernel_block(tpl: dict, record: KernelRecord, backend: str, note: str, source: str) -> str:
    b = tpl["blocks"]
    if record.backend != backend:
        note = b["other_backend"].format(backend=backend, kernel_backend=record.backend) + "\n" + note
    description = record.description.strip()
    limit = tpl["budget"]["kernel_description_tokens"]
    if count_tokens(description) > limit:
        description = get_counter().truncate(description, limit - count_tokens(b["passage_cut"])) + b["passage_cut"]
    return b["example_kernel"].format(name=record.name, op_signature=record.op_signature, op_family=record.op_family,
                                      backend=record.backend, description=description, excerpt_note=note,
                                      source=source)


def _rules_section(tpl: dict, backend: str) -> PromptSection:
    rules = tpl["rules"]["common"] + tpl["rules"].get(backend, [])
    lines = "\n".join(tpl["blocks"]["rule_line"].format(rule=r) for r in rules)
    return _section("rules", tpl["blocks"]["rules"].format(rule_lines=lines), [])


def _task_section(tpl: dict, spec_source: str, acc: AcceleratorFacts, backend: str, ops_text: str) -> PromptSection:
    text = tpl["blocks"]["task"].format(backend=backend, accelerator_name=acc.name, ops=ops_text,
                                        spec_source=spec_source.strip())
    return _section("task", text, [])
