"""Heading-aware chunking shared by the markdown, PDF and HTML readers, sized by the embedder's tokenizer.

Usage: chunks = pack_blocks(blocks, max_tokens=220, overlap_tokens=40)
A reader turns a file into Blocks (a paragraph, list, code block or table, each with its heading
path); pack_blocks groups consecutive blocks of one section into chunks. Sizes are word pieces of the
embedding model's own tokenizer (kb_server.tokens), and what is embedded is the heading path and the
text together (kb_server.store.index_text), so a chunk's text gets at most
min(max_tokens, window - pieces of its heading path): no chunk is longer than the model's window.
Code blocks and tables are kept whole when they fit, and never repeated as overlap; one that does not
fit is split at lines (each piece of a fenced block fenced again, each piece of a table under its
header row). Long prose is split at lines, then sentences, then words; the next chunk of a section
starts with up to `overlap_tokens` of the previous one's tail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kb_server.tokens import TokenCounter, get_counter

CHUNKER_VERSION = "2"  # part of every document's stored hash: a change of the rules re-ingests every file
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
MIN_SECTION_TOKENS = 16  # room left for text under an absurdly long heading path


@dataclass(frozen=True)
class Block:
    """One structural piece of a document under its heading path."""

    text: str
    heading_path: tuple[str, ...]
    atomic: bool = False  # code block or table: kept whole when it fits


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    atomic: bool
    block: int  # index of the block it came from
    joiner: str  # how it joins the previous unit of the same block ("\n" or " ")


Count = Callable[[str], int]


def heading_text(heading_path: tuple[str, ...] | list[str]) -> str:
    """The heading path as embedded before a chunk's text (the same string as kb_server.store.index_text)."""
    return " > ".join(heading_path)


def section_limit(heading_path: tuple[str, ...], max_tokens: int, counter: TokenCounter) -> int:
    """Word pieces a chunk's text may have under this heading path, so heading and text fit the window."""
    room = counter.window - counter.wordpieces(heading_text(heading_path))
    return max(MIN_SECTION_TOKENS, min(max_tokens, room))


def _split_words(text: str, max_tokens: int, count: Count, cut: Callable[[str, int], str]) -> list[str]:
    pieces, cur = [], []
    for word in text.split():
        if count(word) > max_tokens:  # one "word" longer than a chunk (a long URL, a hash): cut by pieces
            if cur:
                pieces.append(" ".join(cur))
                cur = []
            rest = word
            while rest:
                head = cut(rest, max_tokens) or rest[:1]
                pieces.append(head)
                rest = rest[len(head):]
            continue
        if cur and count(" ".join([*cur, word])) > max_tokens:
            pieces.append(" ".join(cur))
            cur = []
        cur.append(word)
    if cur:
        pieces.append(" ".join(cur))
    return pieces


def _split_prose(text: str, max_tokens: int, count: Count, cut) -> list[tuple[str, str]]:
    """Pieces of at most max_tokens, each with the joiner that glues it to the previous piece."""
    if count(text) <= max_tokens:
        return [(text, " ")]
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) > 1:
        return [piece for ln in lines for piece in _mark(_split_prose(ln, max_tokens, count, cut), "\n")]
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    if len(sentences) > 1:
        return [piece for s in sentences for piece in _split_prose(s, max_tokens, count, cut)]
    return [(p, " ") for p in _split_words(text, max_tokens, count, cut)]


def _split_atomic(text: str, max_tokens: int, count: Count, cut) -> list[str]:
    """A code block or table too long for one chunk, as pieces at line boundaries that each fit.

    A fenced block's pieces are each wrapped in the same fence; a table's pieces each start with its
    header and delimiter rows, so every piece reads as what it is.
    """
    lines = text.split("\n")
    head: list[str] = []
    tail: list[str] = []
    if lines[0].lstrip().startswith(("```", "~~~")):
        fence = lines[0].lstrip()[:3]
        head = [lines[0]]
        lines = lines[1:]
        if lines and lines[-1].strip().startswith(fence):
            tail = [lines[-1]]
            lines = lines[:-1]
        else:
            tail = [fence]
    elif len(lines) > 2 and lines[0].lstrip().startswith("|") and set(lines[1].strip()) <= set("|-: "):
        head, lines = lines[:2], lines[2:]
    frame = count("\n".join(head + tail))
    room = max_tokens - frame - (len(head) + len(tail))  # the frame's lines and their line breaks
    if room < MIN_SECTION_TOKENS:  # the frame alone nearly fills a chunk: split the bare lines
        head, tail, room = [], [], max_tokens
    pieces: list[list[str]] = []
    cur: list[str] = []
    for line in lines:
        parts = [line] if count(line) <= room else _split_words(line, room, count, cut) or [line]
        for part in parts:
            if cur and count("\n".join([*cur, part])) > room:
                pieces.append(cur)
                cur = []
            cur.append(part)
    if cur:
        pieces.append(cur)
    return ["\n".join(head + piece + tail) for piece in pieces]


def _mark(pieces: list[tuple[str, str]], joiner: str) -> list[tuple[str, str]]:
    return [(pieces[0][0], joiner), *pieces[1:]] if pieces else []


def _join(units: list[_Unit]) -> str:
    out = ""
    for i, unit in enumerate(units):
        if i:
            out += unit.joiner if unit.block == units[i - 1].block else "\n\n"
        out += unit.text
    return out.strip()


def pack_blocks(blocks: list[Block], max_tokens: int = 220, overlap_tokens: int = 40,
                counter: TokenCounter | None = None) -> list[tuple[tuple[str, ...], str]]:
    """(heading path, text) chunks, in document order; sections without text give none.

    `counter` is the embedding model's tokenizer (default: the configured model's).
    """
    counter = counter or get_counter()
    count, cut = counter.wordpieces, counter.cut
    chunks: list[tuple[tuple[str, ...], str]] = []
    section: list[_Unit] = []
    path: tuple[str, ...] | None = None
    limit = max_tokens

    def flush() -> None:
        if section:
            texts = _pack_section(section, limit, overlap_tokens, count)
            chunks.extend((path, text) for text in texts)

    for index, block in enumerate(blocks):
        if not block.text.strip():
            continue
        if block.heading_path != path:
            flush()
            section, path = [], block.heading_path
            limit = section_limit(path, max_tokens, counter)
        if block.atomic:
            text = block.text.strip("\n")
            pieces = [text] if count(text) <= limit else _split_atomic(text, limit, count, cut)
            section.extend(_Unit(p, count(p), True, index, "\n") for p in pieces)
        else:
            for text, joiner in _split_prose(block.text.strip(), limit, count, cut):
                section.append(_Unit(text, count(text), False, index, joiner))
    flush()
    return chunks


def _pack_section(units: list[_Unit], max_tokens: int, overlap_tokens: int, count: Count) -> list[str]:
    out: list[str] = []
    cur: list[_Unit] = []
    fresh = 0  # units in `cur` that are not overlap carried from the previous chunk

    def fits(candidate: list[_Unit]) -> bool:  # measured on the joined text: joins never add pieces
        return count(_join(candidate)) <= max_tokens

    for unit in units:
        if fresh and not fits([*cur, unit]):
            out.append(_join(cur))
            carry: list[_Unit] = []
            carried = 0
            for prev in reversed(cur):
                if prev.atomic or carried + prev.tokens > overlap_tokens:
                    break
                carry.insert(0, prev)
                carried += prev.tokens
            if carry and not fits([*carry, unit]):
                carry = []
            cur, fresh = carry, 0
        cur.append(unit)
        fresh += 1
    if fresh:
        out.append(_join(cur))
    return out
