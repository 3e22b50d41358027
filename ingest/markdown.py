"""Markdown -> Blocks with heading paths (markdown-it-py), after the YAML front matter.

Usage: title, blocks = markdown_blocks(text, path); chunks = pack_blocks(blocks)
Each top-level block keeps its source text, so tables and fenced code stay exactly as written.
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from ingest.chunking import Block

_ATOMIC = {"fence", "code_block", "table_open"}
_SKIP = {"hr", "front_matter"}
_MD = MarkdownIt("commonmark").enable("table")


def markdown_blocks(body: str, path: Path, title: str | None = None) -> tuple[str, list[Block]]:
    """(title, blocks) of a markdown body (front matter already removed).

    The title is the given one, else the first level-1 heading, else the file name. Text before
    the first heading sits under the title.
    """
    tokens = _MD.parse(body)
    lines = body.splitlines()
    if title is None:
        title = next((tokens[i + 1].content.strip() for i, t in enumerate(tokens)
                      if t.type == "heading_open" and t.tag == "h1" and t.level == 0), None) or path.stem
    stack: list[tuple[int, str]] = []  # (heading level, heading text)
    blocks: list[Block] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.type.endswith("_close") or tok.type in _SKIP:
            continue
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, tokens[i + 1].content.strip()))
            continue
        text = "\n".join(lines[tok.map[0] : tok.map[1]])
        path_ = tuple(h for _, h in stack) or (title,)
        blocks.append(Block(text=text, heading_path=path_, atomic=tok.type in _ATOMIC))
    return title, blocks
