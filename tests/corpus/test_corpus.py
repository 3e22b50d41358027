"""Validity of the corpus: front matter, facts files, the citation rule, counts, and a clean ingest.

Usage: .venv/bin/python -m pytest -x -q tests/corpus          (the ingest test is marked slow)

The citation rule: every block of a document (a paragraph, a list item's paragraph, a heading or a
whole table) that states a number followed by a unit must cite where it came from, either with
`[n]` pointing into the front matter's `sources` (1-based) or with an inline http(s) link.
Fenced code is exempt; every `[n]` outside code must point into the sources list.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt
from pydantic import ValidationError

from ingest.frontmatter import KNOWN_KINDS, FrontMatter
from kb_server.facts import load_all_facts

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus"
DOCS = CORPUS / "docs"
ACCELERATORS = CORPUS / "accelerators"

MIN_DOCS, MIN_NVIDIA, MIN_AMD, MIN_MTIA = 60, 15, 15, 5

# Units after a number that make a statement a fact needing a source. Longer spellings first.
_UNITS = (
    r"TFLOP/s|PFLOP/s|TFLOPS|PFLOPS|TOP/s|TOPS|POPS|TB/s|GB/s|MB/s|"
    r"KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes|MHz|GHz|W|%|"
    r"threads|registers|warps|SMs|CUs|CTAs|cycles|ns"
)
NUMBER_WITH_UNIT = re.compile(rf"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:{_UNITS})(?![\w/])")
INDEX_CITATION = re.compile(r"\[(\d+)\]")
LINK_CITATION = re.compile(r"\]\(https?://[^)\s]+\)|<https?://[^>\s]+>")
INLINE_CODE = re.compile(r"`[^`]*`")


def _documents() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _rel(path: Path) -> Path:
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def split_front_matter(path: Path) -> tuple[dict, str, int]:
    """The first `---` block parsed as YAML, the body, and the body's first line number (1-based)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError(f"{_rel(path)}: does not start with a '---' front matter block")
    for end, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            break
    else:
        raise ValueError(f"{_rel(path)}: front matter block is never closed with '---'")
    raw = yaml.safe_load("\n".join(lines[1:end])) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{_rel(path)}: front matter is not a mapping")  # noqa: TRY004  (a malformed file, reported as such)
    return raw, "\n".join(lines[end + 1 :]), end + 2


def front_matter(path: Path) -> FrontMatter:
    raw, _, _ = split_front_matter(path)
    return FrontMatter.model_validate(raw)


def blocks(body: str, first_line: int) -> list[tuple[int, str, str]]:
    """(line, kind, text) for every paragraph, heading and table of a markdown body."""
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(body)
    out: list[tuple[int, str, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        line = first_line + (tok.map[0] if tok.map else 0)
        if tok.type == "table_open":
            depth, parts = 0, []
            while i < len(tokens):
                t = tokens[i]
                depth += t.nesting
                if t.type == "inline":
                    parts.append(t.content)
                i += 1
                if depth == 0:
                    break
            out.append((line, "table", " | ".join(parts)))
            continue
        if tok.type in ("paragraph_open", "heading_open") and i + 1 < len(tokens):
            kind = "paragraph" if tok.type == "paragraph_open" else "heading"
            out.append((line, kind, tokens[i + 1].content))
        i += 1
    return out


def citation_problems(path: Path) -> list[str]:
    """Reasons this document breaks the citation rule; empty when it keeps it."""
    raw, body, first_line = split_front_matter(path)
    n_sources = len(raw.get("sources") or [])
    rel = _rel(path)
    problems: list[str] = []
    for line, kind, text in blocks(body, first_line):
        prose = INLINE_CODE.sub(" ", text)
        indices = [int(m) for m in INDEX_CITATION.findall(prose)]
        for index in indices:
            if not 1 <= index <= n_sources:
                problems.append(
                    f"{rel}:{line}: citation [{index}] but the front matter lists {n_sources} sources"
                )
        facts = NUMBER_WITH_UNIT.findall(text)
        if facts and not indices and not LINK_CITATION.search(prose):
            excerpt = " ".join(text.split())[:160]
            problems.append(
                f"{rel}:{line}: {kind} states {facts[:3]} without a citation "
                f"([n] into sources, or an http(s) link): {excerpt!r}"
            )
    return problems


# ---------------------------------------------------------------- front matter


def test_there_are_documents() -> None:
    assert _documents(), f"no markdown documents under {DOCS}"


@pytest.mark.parametrize("path", _documents(), ids=lambda p: str(p.relative_to(DOCS)))
def test_front_matter_is_valid(path: Path) -> None:
    try:
        fm = front_matter(path)
    except (ValueError, ValidationError) as exc:
        pytest.fail(f"{_rel(path)}: invalid front matter: {exc}")
    _, body, _ = split_front_matter(path)
    assert body.strip(), f"{_rel(path)}: empty body"
    assert fm.sources or fm.kind == "rules", f"{_rel(path)}: no sources listed"
    # ingest takes any front matter; our own corpus names every field, of the usual kinds, and no others
    # (an unknown field here is a typo, such as `sorces:`)
    missing = [f for f in ("title", "accelerator", "vendor", "kind") if getattr(fm, f) is None]
    assert not missing, f"{_rel(path)}: front matter without {missing}"
    assert fm.kind in KNOWN_KINDS, f"{_rel(path)}: kind {fm.kind!r} is not one of {KNOWN_KINDS}"
    assert not fm.metadata, f"{_rel(path)}: unknown front matter fields {sorted(fm.metadata)}"


def test_accelerator_ids_exist() -> None:
    known = {p.stem for p in ACCELERATORS.glob("*.yaml")} | {"any"}
    bad = []
    for path in _documents():
        try:
            fm = front_matter(path)
        except (ValueError, ValidationError):
            continue  # reported by test_front_matter_is_valid
        unknown = [a for a in fm.accelerator if a not in known]
        if unknown:
            bad.append(f"{_rel(path)}: unknown accelerator ids {unknown} (known: {sorted(known)})")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- facts


def test_facts_files_are_valid() -> None:
    facts = load_all_facts(ACCELERATORS)
    assert facts, f"no facts files under {ACCELERATORS}"
    for acc_id, acc in facts.items():
        peaks = acc.peaks()
        assert peaks["memory_bandwidth_bytes_per_s"] > 1e11, f"{acc_id}: implausible memory bandwidth"


def test_h200_carries_our_measurements_next_to_the_datasheet() -> None:
    h200 = load_all_facts(ACCELERATORS).get("h200")
    if h200 is None:
        pytest.skip("no h200 facts")
    for key in ("measured_copy_bandwidth", "measured_bf16_tflops", "measured_fp32_tflops", "measured_tf32_tflops"):
        fact = h200.extra.get(key)
        assert fact is not None, f"h200.yaml: extra.{key} is missing"
        assert fact.source == "measured" and fact.method, f"h200.yaml: extra.{key} is not a measured fact"
    # A measurement above the datasheet peak would be a broken measurement or a broken datasheet value.
    assert h200.extra["measured_copy_bandwidth"].value < h200.memory_bandwidth.value
    assert h200.extra["measured_bf16_tflops"].value < h200.peak_tflops["bf16"].value


# ---------------------------------------------------------------- citations


def test_citation_rule_catches_an_uncited_fact(tmp_path: Path) -> None:
    """The checker itself: an uncited number with a unit fails, a cited one passes."""
    probe = tmp_path / "probe.md"
    probe.write_text(
        "---\ntitle: probe\naccelerator: [any]\nvendor: any\nkind: guide\n"
        "sources: [https://example.org/a]\ntags: []\n---\n\n"
        "The L2 holds 50 MB.\n\nThe L2 holds 50 MB [1].\n\n- A row is 128 bytes [2].\n\n"
        "| part | size |\n|---|---|\n| smem | 228 KB |\n\n```\nx = 64  # KB\n```\n",
        encoding="utf-8",
    )
    problems = citation_problems(probe)
    assert len(problems) == 3, problems
    assert "without a citation" in problems[0] and "50 MB" in problems[0]
    assert "[2]" in problems[1]
    assert "table" in problems[2]


def test_every_numeric_fact_has_a_source() -> None:
    problems = [p for path in _documents() for p in citation_problems(path)]
    assert not problems, f"{len(problems)} uncited facts or bad citations:\n" + "\n".join(problems)


# ---------------------------------------------------------------- counts


def test_counts(record_property) -> None:
    counts = {"documents": 0, "nvidia": 0, "amd": 0, "mtia": 0}
    for path in _documents():
        try:
            fm = front_matter(path)
        except (ValueError, ValidationError):
            continue
        counts["documents"] += 1
        if fm.vendor == "nvidia":
            counts["nvidia"] += 1
        if fm.vendor == "amd":
            counts["amd"] += 1
        if fm.vendor == "meta" or any(a.startswith("mtia") for a in fm.accelerator):
            counts["mtia"] += 1
    for key, value in counts.items():
        record_property(key, value)
    print(f"corpus counts: {counts}")
    wanted = {"documents": MIN_DOCS, "nvidia": MIN_NVIDIA, "amd": MIN_AMD, "mtia": MIN_MTIA}
    short = {k: f"{counts[k]} < {wanted[k]}" for k in wanted if counts[k] < wanted[k]}
    assert not short, f"corpus too small: {short} (all counts: {counts})"


# ---------------------------------------------------------------- retrieval questions


def test_retrieval_questions_point_at_real_documents() -> None:
    path = REPO / "benchmarks" / "retrieval_questions_nvidia.yaml"
    questions = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(questions, list) and len(questions) >= 45, f"{path}: want a list of >= 45 questions"
    for i, item in enumerate(questions):
        assert set(item) == {"question", "documents"}, f"{path}: item {i} has keys {sorted(item)}"
        assert item["question"].strip() and item["documents"], f"{path}: item {i} is empty"
        for doc in item["documents"]:
            assert (REPO / doc).is_file(), f"{path}: item {i} names {doc}, which does not exist"


# ---------------------------------------------------------------- ingest


@pytest.mark.slow
def test_whole_corpus_ingests_into_a_fresh_store(real_corpus) -> None:
    from ingest.pipeline import IngestOptions, ingest_paths

    store, report = real_corpus  # ingested once per session (tests/conftest.py), shared with the recall gate
    assert not report.skipped, f"files skipped by the ingest: {report.skipped}"
    assert not report.errors, f"files refused by the ingest: {report.errors}"
    written = {Path(source).resolve() for source in report.written}
    missing = [str(_rel(p)) for p in _documents() if p.resolve() not in written]
    assert not missing, f"documents not ingested: {missing}"
    stats = store.stats()
    assert stats["chunks"] >= len(_documents()), stats
    assert set(store.accelerators()) >= {p.stem for p in ACCELERATORS.glob("*.yaml")}
    hits = store.search("wgmma shared memory matrix descriptor", k=5)
    assert hits, "search over the freshly ingested store returned nothing"
    # A second ingest of the unchanged corpus writes nothing (idempotent by file hash).
    again = ingest_paths(store, [CORPUS], IngestOptions(prune=True))
    assert not again.written and again.unchanged >= len(_documents()), again
