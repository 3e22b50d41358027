"""`kkb documents` on the embedded store: the listing by name (the JSON of GET /v1/documents) and a delete that
removes the document from the store and never the user's own file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kb_server.config import get_settings

FACTS = Path(__file__).resolve().parents[1] / "ingest" / "fixtures" / "new_vendor" / "accelerators" / "lf-t4.yaml"


@pytest.fixture
def cli_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KKB_KB_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def _kkb(*args: str):
    from kernelkb_cli import app

    return CliRunner().invoke(app, list(args))


def test_list_then_delete_by_a_prefix_of_the_id(cli_home):
    notes = cli_home / "notes"
    notes.mkdir()
    doc = notes / "lds.md"
    doc.write_text("---\ntitle: LDS banks\naccelerator: mi300x\nkind: guide\n---\n# LDS banks\n\nThirty-two banks.\n")
    shutil.copy(FACTS, notes / "lf-t4.yaml")
    assert _kkb("documents").output.startswith("no documents")
    assert _kkb("ingest", str(notes)).exit_code == 0
    listed = json.loads(_kkb("documents", "--json").stdout)
    by_name = {Path(d["name"]).name: d for d in listed["documents"]}
    assert set(by_name) == {"lds.md", "lf-t4.yaml"}
    lds = by_name["lds.md"]
    assert (lds["type"], lds["title"], lds["accelerator"], lds["kind"], lds["chunks"]) == (
        "document", "LDS banks", ["mi300x"], "guide", 1)
    assert lds["size_bytes"] == doc.stat().st_size and lds["ingested_at"]
    facts = by_name["lf-t4.yaml"]
    assert (facts["type"], facts["title"], facts["accelerator"]) == ("facts", "LumenForge LF-T4", ["lf-t4"])
    table = _kkb("documents").output
    assert "lds.md" in table and "LDS banks" in table and lds["document_id"][:12] in table
    deleted = _kkb("documents", "delete", lds["document_id"][:10])
    assert deleted.exit_code == 0 and "deleted" in deleted.output and "lds.md" in deleted.output
    assert doc.is_file()  # the user's file stays where it is
    left = [d["name"] for d in json.loads(_kkb("documents", "--json").stdout)["documents"]]
    assert [Path(n).name for n in left] == ["lf-t4.yaml"]
    missing = _kkb("documents", "delete", "ffff")
    assert missing.exit_code == 2 and "none matches" in missing.output and "Traceback" not in missing.output


def test_delete_by_the_name_the_listing_shows_and_ambiguity_lists_the_candidates(cli_home):
    notes = cli_home / "notes"
    notes.mkdir()
    for name in ("a.md", "b.md"):
        (notes / name).write_text(f"---\ntitle: {name}\n---\n# {name}\n\nSome words about {name}.\n")
    assert _kkb("ingest", str(notes)).exit_code == 0
    listed = json.loads(_kkb("documents", "--json").stdout)["documents"]
    a = next(d for d in listed if d["name"].endswith("a.md"))
    assert _kkb("documents", "delete", a["name"]).exit_code == 0  # the name as the listing shows it
    assert [Path(d["name"]).name for d in json.loads(_kkb("documents", "--json").stdout)["documents"]] == ["b.md"]
    (notes / "c.md").write_text("---\ntitle: c\n---\n# c\n\nMore words.\n")
    assert _kkb("ingest", str(notes)).exit_code == 0
    ambiguous = _kkb("documents", "delete", "")
    assert ambiguous.exit_code == 2 and "give an id" in ambiguous.output
    ids = [d["document_id"] for d in json.loads(_kkb("documents", "--json").stdout)["documents"]]
    common = next((p for n in range(1, 4) for p in {i[:n] for i in ids} if sum(i.startswith(p) for i in ids) > 1),
                  None)
    if common is not None:  # ids are random: where two share a first character, both are named
        several = _kkb("documents", "delete", common)
        assert several.exit_code == 2 and "several match: " in several.output and "(" in several.output
