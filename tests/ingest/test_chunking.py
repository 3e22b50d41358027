"""Heading-aware chunking: structure kept, code and tables whole when they fit, size bounded by the
embedder's own tokenizer (heading path included), overlap."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ingest.chunking import Block, heading_text, pack_blocks
from ingest.markdown import markdown_blocks
from kb_server.tokens import get_counter

COUNTER = get_counter()
count_tokens = COUNTER.wordpieces


def _chunks(md: str, max_tokens: int = 80, overlap: int = 20):
    title, blocks = markdown_blocks(md, Path("doc.md"))
    return title, pack_blocks(blocks, max_tokens, overlap)


def test_heading_path_follows_nesting():
    md = "# H100\n\nintro\n\n## Memory hierarchy\n\n### Shared memory\n\nsmem text\n\n## Tensor cores\n\ntc text\n"
    title, chunks = _chunks(md)
    assert title == "H100"
    assert chunks == [
        (("H100",), "intro"),
        (("H100", "Memory hierarchy", "Shared memory"), "smem text"),
        (("H100", "Tensor cores"), "tc text"),  # a level-2 heading pops the level-3 one
    ]


def test_code_block_that_fits_is_kept_whole():
    code = "```python\n" + "\n".join(f"x_{i} = load(ptr + {i})" for i in range(4)) + "\n```"
    _, chunks = _chunks(f"# K\n\nBefore the code.\n\n{code}\n\nAfter the code.\n", max_tokens=80)
    assert sum(code in text for _, text in chunks) == 1


def test_long_code_block_is_split_at_lines_into_fenced_pieces():
    lines = [f"x_{i} = load(ptr + {i})  # step {i}" for i in range(60)]
    code = "```python\n" + "\n".join(lines) + "\n```"
    md = f"# K\n\nBefore the code.\n\n{code}\n\nAfter the code.\n"
    _, chunks = _chunks(md, max_tokens=60)
    holding = [text for _, text in chunks if "x_" in text]
    assert len(holding) > 1
    assert all(count_tokens(text) <= 60 for _, text in chunks)  # the limit holds for code too
    for text in holding:  # every piece is a fenced block of its own: opened and closed
        fenced = text[text.index("```python"):]
        assert fenced.startswith("```python\n") and fenced.count("```") == 2 and "\n```" in fenced
    for line in lines:  # nothing lost, nothing repeated as overlap
        assert sum(text.count(line + "\n") for _, text in chunks) == 1


def test_long_table_is_split_under_its_header():
    rows = [f"| chip{i} | {i * 16} KB | {i} |" for i in range(60)]
    table = "| chip | smem | n |\n|---|---|---|\n" + "\n".join(rows)
    _, chunks = _chunks(f"# T\n\n{table}\n", max_tokens=80)
    assert len(chunks) > 1 and all(count_tokens(text) <= 80 for _, text in chunks)
    assert all(text.startswith("| chip | smem | n |\n|---|---|---|\n") for _, text in chunks)
    assert all(sum(row in text for _, text in chunks) == 1 for row in rows)


def test_heading_path_counts_against_the_embedders_window():
    heading = tuple(f"A rather long heading number {i} about shared memory banks" for i in range(8))
    words = " ".join(f"word{i}" for i in range(2000))
    chunks = pack_blocks([Block(words, heading)], max_tokens=10_000, overlap_tokens=0)
    assert len(chunks) > 1
    for path, text in chunks:  # what the model embeds is the heading path, a newline, then the text
        assert count_tokens(heading_text(path) + "\n" + text) <= COUNTER.window


def test_table_is_kept_whole():
    rows = "\n".join(f"| chip{i} | {i * 16} KB | {i} |" for i in range(12))  # fits one chunk
    table = "| chip | smem | n |\n|---|---|---|\n" + rows
    md = f"# T\n\nSome words first.\n\n{table}\n\nSome words after.\n"
    _, chunks = _chunks(md, max_tokens=400)
    holding = [text for _, text in chunks if "chip0" in text]
    assert len(holding) == 1 and table in holding[0]


def test_long_paragraph_is_split_with_bounded_size_and_overlap():
    sentences = [f"Sentence number {i} talks about tile {i} and its reuse." for i in range(40)]
    md = "# P\n\n" + " ".join(sentences) + "\n"
    _, chunks = _chunks(md, max_tokens=60, overlap=15)
    assert len(chunks) > 3
    assert all(count_tokens(text) <= 60 for _, text in chunks)
    for (_, a), (_, b) in itertools.pairwise(chunks):
        last_sentence = a.split(". ")[-1]
        assert last_sentence in b  # the next chunk starts with the previous one's tail
    joined = " ".join(text for _, text in chunks)
    assert all(s in joined for s in sentences)  # nothing lost


def test_no_overlap_when_disabled():
    md = "# P\n\n" + " ".join(f"Sentence {i} is here." for i in range(60)) + "\n"
    _, chunks = _chunks(md, max_tokens=40, overlap=0)
    texts = [t for _, t in chunks]
    assert sum(t.count("Sentence 10 is here.") for t in texts) == 1


def test_empty_sections_give_no_chunks():
    md = "# A\n\n## Empty one\n\n## Empty two\n\n### Filled\n\nonly text\n"
    _, chunks = _chunks(md)
    assert chunks == [(("A", "Empty two", "Filled"), "only text")]


def test_no_headings_uses_the_title():
    title, chunks = _chunks("just a paragraph\n\nand another\n")
    assert title == "doc"  # the file name when there is no heading and no front matter title
    assert chunks == [(("doc",), "just a paragraph\n\nand another")]


@pytest.mark.parametrize("blocks", [
    [],  # nothing at all
    [Block("   \n", ("x",))],  # whitespace only
])
def test_nothing_in_nothing_out(blocks):
    assert pack_blocks(blocks) == []


def test_no_chunk_of_the_corpus_is_longer_than_the_embedders_window():
    from ingest.pipeline import IngestOptions, IngestReport, discover, read_document
    from kb_server.config import KBSettings
    from kb_server.store import index_text

    settings = KBSettings()
    files = [f for f in discover([settings.corpus_dir / "docs"], IngestReport()) if f.kind == "doc"]
    assert len(files) >= 70
    lengths = [COUNTER.wordpieces(index_text(c.heading_path, c.text))
               for f in files for c in read_document(f, IngestOptions(), "any", settings.chunk_max_tokens,
                                                     settings.chunk_overlap_tokens)]
    assert len(lengths) >= 500 and max(lengths) <= COUNTER.window
