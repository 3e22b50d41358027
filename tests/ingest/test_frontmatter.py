"""Front matter errors name the file, the line of the key and the field."""

from __future__ import annotations

import pytest

from ingest.frontmatter import FrontMatterError, parse_front_matter

GOOD = """---
title: "H100 memory"
accelerator: [h100, h200]
vendor: nvidia
kind: arch
sources:
  - https://example.org/a
tags: [smem]
---
# Body
"""


def test_valid_front_matter_parses():
    front, body = parse_front_matter(GOOD, "docs/h100.md")
    assert front.accelerator == ["h100", "h200"] and front.vendor.value == "nvidia"
    assert body.startswith("# Body")


def test_no_front_matter_gives_none():
    front, body = parse_front_matter("# Just a doc\n", "a.md")
    assert front is None and body == "# Just a doc\n"


@pytest.mark.parametrize("old, new, line, field", [
    ("vendor: nvidia", "vendor: nvidiaa", 4, "vendor"),  # bad enum value
    ("kind: arch", "kind: poem", 5, "kind"),
    ("accelerator: [h100, h200]", "accelerator: [h100, H200]", 3, "accelerator"),  # upper case id
    ("  - https://example.org/a", "  - not a url", 7, "sources.0"),  # list item: its own line
    ("tags: [smem]", "tags: [smem]\ncolour: red", 9, "colour"),  # unknown key
    ('title: "H100 memory"\n', "", 1, "title"),  # missing field: the opening --- line
])
def test_invalid_front_matter_names_file_line_and_field(old, new, line, field):
    text = GOOD.replace(old, new)
    with pytest.raises(FrontMatterError) as info:
        parse_front_matter(text, "docs/h100.md")
    err = info.value
    assert (err.path, err.line, err.field) == ("docs/h100.md", line, field)
    assert str(err).startswith(f"docs/h100.md:{line}: field '{field}'")


def test_invalid_yaml_names_the_line():
    with pytest.raises(FrontMatterError, match=r"^a\.md:4: not valid YAML"):
        parse_front_matter("---\ntitle: abc\nvendor: nvidia\nkind: arch: oops\n---\n", "a.md")


def test_unclosed_block_is_an_error():
    with pytest.raises(FrontMatterError, match="never closed"):
        parse_front_matter("---\ntitle: abc\n", "a.md")
