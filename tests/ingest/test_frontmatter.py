"""Front matter errors name the file, the line of the key and the field."""

from __future__ import annotations

import pytest

from ingest.frontmatter import FrontMatterError, parse_front_matter, read_front_matter

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


# ---------------------------------------------------------------- as newcomers write it
@pytest.mark.parametrize(("written", "field", "value"), [
    ("accelerators: gaudi3", "accelerator", ["gaudi3"]),  # the plural: once dropped, the doc became "any"
    ("chips: [Gaudi3, gaudi-3]", "accelerator", ["gaudi3", "gaudi-3"]),
    ("kind: architecture", "kind", "arch"),  # the word, not the corpus's short name
    ("type: Instruction Set", "kind", "isa"),
    ("category: tutorial", "kind", "guide"),
    ("doc-type: Tuning Guide", "kind", "playbook"),
    ("urls: https://example.org/g3", "sources", ["https://example.org/g3"]),
    ("name: Gaudi 3 notes", "title", "Gaudi 3 notes"),
    ("Vendors: Intel", "vendor", "intel"),
    ("keywords: [hbm, mme]", "tags", ["hbm", "mme"]),
])
def test_synonyms_are_read_as_the_field_without_a_warning(written, field, value):
    read = read_front_matter(f"---\n{written}\n---\n# Gaudi 3\n", "docs/gaudi3.md")
    assert getattr(read.front, field) == value and read.warnings == []
    assert read.front.metadata == {}  # nothing left over as an unknown field


def test_a_repeated_key_names_both_lines():
    with pytest.raises(FrontMatterError) as info:
        parse_front_matter("---\ntitle: A\nkind: arch\nvendor: intel\nkind: guide\n---\n# A\n", "a.md")
    assert str(info.value) == "a.md:5: field 'kind': written twice (lines 3 and 5); keep one"


def test_one_field_under_two_spellings_is_refused_where_it_takes_one_value_and_added_up_where_a_list():
    with pytest.raises(FrontMatterError, match=r"^a\.md:3: field 'type': 'kind' \(line 2\) already gives the kind"):
        parse_front_matter("---\nkind: arch\ntype: guide\n---\n# A\n", "a.md")
    front, _ = parse_front_matter("---\naccelerator: h100\naccelerators: [h200]\nsource: https://a.example\n"
                                  "sources: [https://b.example]\n---\n# A\n", "a.md")
    assert front.accelerator == ["h100", "h200"] and front.sources == ["https://a.example", "https://b.example"]


def test_unknown_fields_and_kinds_are_warnings_naming_file_line_and_field():
    text = "---\ntitle: G3\nacclerator: gaudi3\nkind: datasheet\nowner: me\nmetadata:\n  team: compiler\n---\n# G3\n"
    read = read_front_matter(text, "docs/g3.md")
    lines = [str(w) for w in read.warnings]
    assert lines[0].startswith("docs/g3.md:3: field 'acclerator': not a field of the front matter")
    assert "(did you mean 'accelerator'?)" in lines[0] and "kept as the document's metadata" in lines[0]
    assert lines[1].startswith("docs/g3.md:5: field 'owner': not a field")
    assert lines[2].startswith("docs/g3.md:4: field 'kind': kind 'datasheet' is not one of arch, isa, guide")
    assert len(lines) == 3  # fields under `metadata:` are the author's own: kept without a word
    assert read.front.metadata == {"acclerator": "gaudi3", "owner": "me", "team": "compiler"}
    assert read.front.accelerator is None  # a misspelt field is not guessed at: the warning says what to fix


def test_a_wrong_type_under_a_synonym_names_the_key_as_written():
    with pytest.raises(FrontMatterError) as info:
        parse_front_matter("---\ntitle: T\naccelerators: {gaudi3: yes}\n---\n# T\n", "a.md")
    assert (info.value.line, info.value.field) == (3, "accelerators")


def test_the_bundled_corpus_raises_no_warning_so_it_ingests_under_strict():
    from pathlib import Path

    from ingest.checks import KnownIds
    from kb_server.facts import load_all_facts

    corpus = Path(__file__).resolve().parents[2] / "corpus"
    known = KnownIds.from_facts(load_all_facts(corpus / "accelerators"))
    found = []
    for path in sorted(corpus.rglob("*.md")):
        read = read_front_matter(path.read_text(encoding="utf-8"), str(path.relative_to(corpus)))
        found += read.warnings
        if read.front is not None and read.front.accelerator:
            ids, warnings = known.accelerators(read.front.accelerator, str(path), 0, "accelerator")
            found += warnings
            if read.front.vendor:
                found += known.vendor(read.front.vendor, ids, str(path), 0, "vendor")
    assert not found, "\n".join(map(str, found))
