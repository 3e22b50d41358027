"""PDF -> Blocks with pypdf; the heading path is (title, "Page N"), or the outline entry when the
PDF has one (bookmarks give section names).

Usage: title, blocks = pdf_blocks(Path("guide.pdf"))
"""

from __future__ import annotations

import re
from pathlib import Path

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from ingest.chunking import Block

_PARAGRAPH = re.compile(r"\n\s*\n")


def _outline_titles(reader: PdfReader) -> dict[int, str]:
    """Page index -> the top-level outline title that starts there (best effort)."""
    starts: dict[int, str] = {}
    try:
        for item in reader.outline:
            if isinstance(item, list):
                continue
            starts.setdefault(reader.get_destination_page_number(item), str(item.title).strip())
    except (PdfReadError, KeyError, AttributeError, ValueError, TypeError):  # a broken outline should not stop the text from being read
        return {}
    return starts


def pdf_blocks(path: Path) -> tuple[str, list[Block]]:
    reader = PdfReader(path)
    meta_title = reader.metadata.title if reader.metadata else None
    title = (meta_title or "").strip() or path.stem
    sections = _outline_titles(reader)
    section: str | None = None
    blocks: list[Block] = []
    for number, page in enumerate(reader.pages, start=1):
        section = sections.get(number - 1, section)
        heading = (title, section, f"Page {number}") if section else (title, f"Page {number}")
        text = page.extract_text() or ""
        for para in _PARAGRAPH.split(text):
            if para.strip():
                blocks.append(Block(text=para.strip(), heading_path=heading))
    return title, blocks
