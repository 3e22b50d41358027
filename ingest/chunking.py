"""Heading-aware chunking shared by the markdown, PDF and HTML readers.

Usage: chunks = pack_blocks(blocks, max_tokens=220, overlap_tokens=40)
A reader turns a file into Blocks (a paragraph, list, code block or table, each with its heading
path); pack_blocks groups consecutive blocks of one section into chunks of at most `max_tokens`.
Code blocks and tables are atomic: never split, never repeated as overlap (an atomic block longer
than the limit becomes one oversized chunk). Long prose is split at lines, then sentences, then
words; the next chunk of a section starts with up to `overlap_tokens` of the previous one's tail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORDPIECE = re.compile(r"\w+|[^\w\s]")  # a cheap, slightly generous estimate of word pieces
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def count_tokens(text: str) -> int:
    return len(_WORDPIECE.findall(text))


@dataclass(frozen=True)
class Block:
    """One structural piece of a document under its heading path."""

    text: str
    heading_path: tuple[str, ...]
    atomic: bool = False  # code block or table: kept whole


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    atomic: bool
    block: int  # index of the block it came from
    joiner: str  # how it joins the previous unit of the same block ("\n" or " ")


def _split_prose(text: str, max_tokens: int) -> list[tuple[str, str]]:
    """Pieces of at most max_tokens, each with the joiner that glues it to the previous piece."""
    if count_tokens(text) <= max_tokens:
        return [(text, " ")]
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) > 1:
        return [piece for ln in lines for piece in _mark(_split_prose(ln, max_tokens), "\n")]
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    if len(sentences) > 1:
        return [piece for s in sentences for piece in _split_prose(s, max_tokens)]
    words = text.split()
    pieces, cur = [], []
    for word in words:
        if cur and count_tokens(" ".join([*cur, word])) > max_tokens:
            pieces.append((" ".join(cur), " "))
            cur = []
        cur.append(word)
    if cur:
        pieces.append((" ".join(cur), " "))
    return pieces


def _mark(pieces: list[tuple[str, str]], joiner: str) -> list[tuple[str, str]]:
    return [(pieces[0][0], joiner), *pieces[1:]] if pieces else []


def _join(units: list[_Unit]) -> str:
    out = ""
    for i, unit in enumerate(units):
        if i:
            out += unit.joiner if unit.block == units[i - 1].block else "\n\n"
        out += unit.text
    return out.strip()


def pack_blocks(blocks: list[Block], max_tokens: int = 220, overlap_tokens: int = 40
                ) -> list[tuple[tuple[str, ...], str]]:
    """(heading path, text) chunks, in document order; sections without text give none."""
    chunks: list[tuple[tuple[str, ...], str]] = []
    section: list[_Unit] = []
    path: tuple[str, ...] | None = None
    for index, block in enumerate(blocks):
        if not block.text.strip():
            continue
        if block.heading_path != path:
            if section:
                chunks.extend((path, text) for text in _pack_section(section, max_tokens, overlap_tokens))
            section, path = [], block.heading_path
        if block.atomic:
            section.append(_Unit(block.text.strip("\n"), count_tokens(block.text), True, index, "\n"))
        else:
            for text, joiner in _split_prose(block.text.strip(), max_tokens):
                section.append(_Unit(text, count_tokens(text), False, index, joiner))
    if section:
        chunks.extend((path, text) for text in _pack_section(section, max_tokens, overlap_tokens))
    return chunks


def _pack_section(units: list[_Unit], max_tokens: int, overlap_tokens: int) -> list[str]:
    out: list[str] = []
    cur: list[_Unit] = []
    cur_tokens = 0
    fresh = 0  # units in `cur` that are not overlap carried from the previous chunk
    for unit in units:
        if fresh and cur_tokens + unit.tokens > max_tokens:
            out.append(_join(cur))
            carry: list[_Unit] = []
            carried = 0
            for prev in reversed(cur):
                if prev.atomic or carried + prev.tokens > overlap_tokens:
                    break
                carry.insert(0, prev)
                carried += prev.tokens
            if carried + unit.tokens > max_tokens:
                carry, carried = [], 0
            cur, cur_tokens, fresh = carry, carried, 0
        cur.append(unit)
        cur_tokens += unit.tokens
        fresh += 1
    if fresh:
        out.append(_join(cur))
    return out
