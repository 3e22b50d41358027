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
    assert front.accelerator == ["h100", "h200"] and front.vendor == "nvidia" and front.kind == "arch"
    assert front.source_urls == ["https://example.org/a"] and front.metadata == {}
    assert body.startswith("# Body")


def test_no_front_matter_gives_none():
    front, body = parse_front_matter("# Just a doc\n", "a.md")
    assert front is None and body == "# Just a doc\n"


@pytest.mark.parametrize(("old", "new", "field", "value"), [
    ("vendor: nvidia", "vendor: Aurora Silicon", "vendor", "aurora-silicon"),  # any vendor, normalised
    ("vendor: nvidia", "vendor: intel", "vendor", "intel"),
    ("kind: arch", "kind: Datasheet", "kind", "datasheet"),  # a kind outside the usual ones is kept
    ("accelerator: [h100, h200]", "accelerator: [H100, 'Aurora A1']", "accelerator", ["h100", "aurora-a1"]),
    ("accelerator: [h100, h200]", "accelerator: MI300X", "accelerator", ["mi300x"]),  # one id, not a list
    ('title: "H100 memory"\n', "", "title", None),  # missing: the reader takes the first heading
    ("vendor: nvidia\n", "", "vendor", None),  # missing: inferred from the accelerators' facts
])
def test_open_vocabulary_is_normalised_not_refused(old, new, field, value):
    front, _ = parse_front_matter(GOOD.replace(old, new), "docs/h100.md")
    assert getattr(front, field) == value


def test_unknown_fields_are_kept_as_metadata_and_source_is_a_source():
    text = GOOD.replace("tags: [smem]", "tags: [smem]\nsource: https://example.org/b\nfab_node: 3nm\n"
                        "reviewed: [2026-01-02, alice]\nlimits: {tdp_w: 500}")
    front, _ = parse_front_matter(text, "docs/h100.md")
    assert front.source_urls == ["https://example.org/a", "https://example.org/b"]
    assert front.metadata["fab_node"] == "3nm"
    assert front.metadata["limits"] == "{tdp_w: 500}"  # nested values are kept as YAML text
    assert "reviewed" in front.metadata


@pytest.mark.parametrize(("old", "new", "line", "field"), [
    ("vendor: nvidia", "vendor: [nvidia, amd]", 4, "vendor"),  # a list where one name belongs
    ("kind: arch", "kind: {a: 1}", 5, "kind"),  # a mapping where one name belongs
    ("accelerator: [h100, h200]", "accelerator: {h100: yes}", 3, "accelerator"),  # a mapping, not ids
    ("tags: [smem]", "tags: {x: 1}", 8, "tags"),
])
def test_a_field_of_the_wrong_type_names_file_line_and_field(old, new, line, field):
    text = GOOD.replace(old, new)
    with pytest.raises(FrontMatterError) as info:
        parse_front_matter(text, "docs/h100.md")
    err = info.value
    assert (err.path, err.line, err.field) == ("docs/h100.md", line, field)
    assert str(err).startswith(f"docs/h100.md:{line}: field '{field}'")


def test_an_empty_block_is_no_metadata():
    front, body = parse_front_matter("---\n---\n# T\n", "a.md")
    assert front.title is None and front.accelerator is None and body == "# T\n"


def test_invalid_yaml_names_the_line():
    with pytest.raises(FrontMatterError, match=r"^a\.md:4: not valid YAML"):
        parse_front_matter("---\ntitle: abc\nvendor: nvidia\nkind: arch: oops\n---\n", "a.md")


def test_unclosed_block_is_an_error():
    with pytest.raises(FrontMatterError, match="never closed"):
        parse_front_matter("---\ntitle: abc\n", "a.md")
