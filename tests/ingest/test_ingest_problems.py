"""What a newcomer adding an accelerator ran into, through ingest into a real store under a tmp KKB_HOME:
broken facts files in a folder reported, other YAML named, .txt ingested, units checked, --accelerator checked
and counted as a change, two files of one id named, --prune naming what it deleted."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingest.pipeline import IngestOptions, ingest_paths
from kb_server.config import get_settings

FACTS = (Path(__file__).parent / "fixtures" / "new_vendor" / "accelerators" / "lf-t4.yaml").read_text()


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


@pytest.mark.parametrize(("edit", "line_text"), [
    (lambda t: t.replace("\n  value: 2.4", "\n\tvalue: 2.4", 1), "not valid YAML"),  # tab indentation
    (lambda t: t.replace("id: lf-t4\n", ""), "field 'id'"),  # no id line
    (lambda t: t.replace("id: lf-t4\n", "ID: lf-t4\n"), "field 'ID'"),  # id spelt in capitals
])
def test_a_broken_facts_file_in_a_folder_is_an_error(store, tmp_path, edit, line_text):
    assert "\n  value: 2.4" in FACTS and "id: lf-t4\n" in FACTS
    _write(tmp_path / "chips", "lf-t4.yaml", edit(FACTS))
    report = ingest_paths(store, [tmp_path / "chips"], IngestOptions(strict=True))
    assert report.facts == [] and len(report.errors) == 1, report
    assert "lf-t4.yaml:" in report.errors[0] and line_text in report.errors[0]


def test_other_yaml_is_named_as_ignored_and_refused_under_strict(store, tmp_path):
    _write(tmp_path / "mixed", "config.yaml", "foo: bar\n")
    quiet = ingest_paths(store, [tmp_path / "mixed"])
    assert quiet.errors == [] and any("config.yaml: ignored" in w for w in quiet.warnings)
    strict = ingest_paths(store, [tmp_path / "mixed"], IngestOptions(strict=True))
    assert any("config.yaml: ignored" in e and "--strict" in e for e in strict.errors)


def test_txt_is_a_document_and_other_named_files_are_errors(store, tmp_path):
    notes = _write(tmp_path / "docs", "notes.txt", "The LF-T4 scratchpad is banked 32 ways.\n")
    other = _write(tmp_path / "docs", "data.csv", "a,b\n")
    report = ingest_paths(store, [notes, other])
    assert report.written == [str(notes)] and report.chunks_written == 1
    assert report.errors == [f"{other}: unsupported file type .csv (md, pdf, html, txt, yaml)"]


def test_a_unit_other_code_cannot_read_is_refused_at_ingest_by_line(store, tmp_path):
    bad = _write(tmp_path / "accelerators", "lf-t4.yaml", FACTS.replace("unit: TB/s", "unit: TB/fortnight", 1))
    report = ingest_paths(store, [bad], IngestOptions(strict=True))
    line = next(n for n, t in enumerate(bad.read_text().splitlines(), 1) if "TB/fortnight" in t)
    assert report.facts == [] and len(report.errors) == 1
    assert f"lf-t4.yaml:{line}: field 'memory_bandwidth.unit'" in report.errors[0] and "GB/s" in report.errors[0]


def test_spelt_units_are_normalised_for_the_peaks(store, tmp_path):
    good = _write(tmp_path / "accelerators", "lf-t4.yaml", FACTS.replace("unit: TB/s", "unit: tb/sec", 1))
    report = ingest_paths(store, [good], IngestOptions(strict=True))
    assert report.errors == [] and store.accelerators()["lf-t4"].memory_bandwidth.unit == "TB/s"


def test_new_accelerator_option_rewrites_unchanged_files(store, tmp_path):
    doc = _write(tmp_path / "docs", "page.md", "# Memory\nThe HBM is read in 128-byte sectors.\n")
    fronted = _write(tmp_path / "docs", "fronted.md", "---\naccelerator: h100\nvendor: nvidia\n---\n# H100\nWarps of 32.\n")
    ingest_paths(store, [tmp_path / "docs"], IngestOptions(accelerator=("h100",)))
    again = ingest_paths(store, [tmp_path / "docs"], IngestOptions(accelerator=("mi300x",), vendor="amd"))
    assert again.written == [str(doc)] and again.unchanged == 1  # fronted.md names its own accelerator
    chunks = {h.chunk.source: h.chunk for h in store.search("HBM sectors warps", k=5)}
    assert chunks[str(doc)].accelerator == ["mi300x"] and chunks[str(doc)].vendor == "amd"
    assert chunks[str(fronted)].accelerator == ["h100"]  # its front matter says, whatever the options
    assert ingest_paths(store, [tmp_path / "docs"], IngestOptions(accelerator=("mi300x",), vendor="amd")
                        ).unchanged == 2


@pytest.mark.parametrize("strict", [False, True])
def test_an_unknown_accelerator_option_is_checked_like_front_matter(store, tmp_path, strict):
    _write(tmp_path / "docs", "page.md", "# Memory\nThe HBM is read in 128-byte sectors.\n")
    report = ingest_paths(store, [tmp_path / "docs"], IngestOptions(accelerator=("h10",), strict=strict))
    problems = report.errors if strict else report.warnings
    assert len(problems) == 1 and "--accelerator" in problems[0] and "did you mean 'h100'" in problems[0]
    assert (report.written == []) is strict


def test_two_facts_files_of_one_id_say_which_replaces_which(store, tmp_path):
    first = _write(tmp_path / "a" / "accelerators", "lf-t4.yaml", FACTS)
    second = _write(tmp_path / "b" / "accelerators", "lf-t4.yaml", FACTS.replace("value: 2.4", "value: 2.5", 1))
    report = ingest_paths(store, [first.parent, second.parent])
    assert report.facts == ["lf-t4", "lf-t4"]
    assert any(w.startswith("lf-t4: facts from ") and str(first) in w and "replace" in w for w in report.warnings)


def test_prune_names_what_it_deleted(tmp_path, monkeypatch):
    from kernelkb_cli import app

    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    gone = _write(tmp_path / "docs", "gone.md", "# Gone\nSoon deleted.\n")
    _write(tmp_path / "docs", "kept.md", "# Kept\nStays.\n")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(tmp_path / "docs")]).exit_code == 0
    gone.unlink()
    result = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--prune"])
    get_settings.cache_clear()
    assert result.exit_code == 0 and f"deleted {gone}" in result.stdout
