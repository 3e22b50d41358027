"""Heading-aware chunking: structure kept, code and tables whole, size bounded, overlap."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ingest.chunking import Block, count_tokens, pack_blocks
from ingest.markdown import markdown_blocks


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


def test_long_code_block_is_kept_whole_even_above_the_limit():
    code = "```python\n" + "\n".join(f"x_{i} = load(ptr + {i})  # step {i}" for i in range(60)) + "\n```"
    md = f"# K\n\nBefore the code.\n\n{code}\n\nAfter the code.\n"
    _, chunks = _chunks(md, max_tokens=60)
    holding = [text for _, text in chunks if "x_0 =" in text]
    assert len(holding) == 1 and code in holding[0]  # one chunk holds the whole fence, untouched
    assert count_tokens(holding[0]) > 60  # oversized rather than split
    assert sum(text.count("x_59 =") for _, text in chunks) == 1  # never repeated as overlap


def test_table_is_kept_whole():
    rows = "\n".join(f"| chip{i} | {i * 16} KB | {i} |" for i in range(30))
    table = "| chip | smem | n |\n|---|---|---|\n" + rows
    md = f"# T\n\nSome words first.\n\n{table}\n\nSome words after.\n"
    _, chunks = _chunks(md, max_tokens=50)
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
