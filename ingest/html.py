"""HTML -> Blocks with beautifulsoup4 + lxml; h1..h6 give the heading path, <pre> and <table>
are atomic.

Usage: title, blocks = html_blocks(text, Path("page.html"))
"""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup, Tag

from ingest.chunking import Block

_HEADINGS = {f"h{i}" for i in range(1, 7)}
_BLOCKS = {"p", "pre", "table", "li", "blockquote", "dt", "dd", "figcaption"} | _HEADINGS
_DROP = ["script", "style", "nav", "footer", "header", "noscript", "svg"]


def _table_text(table: Tag) -> str:
    rows = []
    for tr in table.find_all("tr"):
        cells = [c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])]
        rows.append(" | ".join(cells))
    return "\n".join(r for r in rows if r.strip())


def html_blocks(text: str, path: Path) -> tuple[str, list[Block]]:
    soup = BeautifulSoup(text, "lxml")
    for tag in soup(_DROP):
        tag.decompose()
    first_h1 = soup.find("h1")
    title = ((soup.title.get_text(strip=True) if soup.title else "")
             or (first_h1.get_text(" ", strip=True) if first_h1 else "") or path.stem)
    root = soup.body or soup
    stack: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for el in root.find_all(_BLOCKS):
        if any(parent.name in _BLOCKS for parent in el.parents):
            continue  # its text is part of an enclosing block
        if el.name in _HEADINGS:
            level = int(el.name[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, el.get_text(" ", strip=True)))
            continue
        heading = tuple(h for _, h in stack) or (title,)
        if el.name == "pre":
            blocks.append(Block(el.get_text(), heading, atomic=True))
        elif el.name == "table":
            blocks.append(Block(_table_text(el), heading, atomic=True))
        else:
            blocks.append(Block(el.get_text(" ", strip=True), heading))
    return title, blocks
