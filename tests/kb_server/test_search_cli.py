"""`kkb ingest`, `kkb search` and `kkb kernels` end to end through the typer app (real store)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kb_server.config import get_settings


@pytest.fixture
def cli_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_ingest_search_and_kernels_verbs(cli_home):
    from kernelkb_cli import app

    docs = cli_home / "docs"
    (docs / "softmax").mkdir(parents=True)
    (docs / "h100.md").write_text("---\ntitle: H100 notes\naccelerator: [h100]\nvendor: nvidia\nkind: isa\n---\n"
                                  "# H100\n\n## Async copies\n\ncp.async.bulk moves a tile into shared memory.\n")
    (docs / "softmax" / "kernel.py").write_text("TUNABLES = {'BLOCK': 128}\n")
    (docs / "softmax" / "kernel.yaml").write_text("name: softmax_rows\nop_family: softmax\n"
                                                  "op_signature: softmax(dim=-1)\nbackend: triton\n")
    runner = CliRunner()
    ingested = runner.invoke(app, ["ingest", str(docs), "--json"])
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.stdout)["written"] == 1
    found = runner.invoke(app, ["search", "cp.async.bulk", "-k", "2", "--accelerator", "h100", "--json"])
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["chunk"]["heading_path"] == ["H100", "Async copies"] and hits[0]["lexical_score"] > 0
    none = runner.invoke(app, ["search", "cp.async.bulk", "--vendor", "amd", "--json"])
    assert json.loads(none.stdout) == {"query": "cp.async.bulk", "k": 8, "hits": []}
    bad = runner.invoke(app, ["search", "x", "--mode", "fuzzy"])
    assert bad.exit_code != 0 and "fuzzy" in bad.output
    listed = runner.invoke(app, ["kernels", "--op-family", "softmax", "--json"])
    assert [r["name"] for r in json.loads(listed.stdout)["kernels"]] == ["softmax_rows"]


def test_ingest_verb_names_the_bad_file_and_line_and_ingests_the_rest(cli_home):
    from kernelkb_cli import app

    docs = cli_home / "docs"
    docs.mkdir()
    (docs / "bad.md").write_text("---\ntitle: Bad one\naccelerator: [h100]\nvendor: nvidia\nkind: [a, b]\n---\n"
                                 "text\n")
    (docs / "good.md").write_text("---\nvendor: Some New Vendor\nkind: poem\n---\n# Good one\n\nglorp words\n")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(docs)])
    assert result.exit_code == 1
    assert "bad.md:5: field 'kind'" in result.output and "written: 1" in result.output
    found = json.loads(runner.invoke(app, ["search", "glorp", "--vendor", "some-new-vendor", "--json"]).stdout)["hits"]
    assert [h["chunk"]["title"] for h in found] == ["Good one"]  # the title from the first heading


def test_a_newcomers_doc_under_strict_and_an_unknown_accelerator_in_a_filter(cli_home):
    from kernelkb_cli import app

    docs = cli_home / "docs"
    docs.mkdir()
    (docs / "gaudi3.md").write_text("---\naccelerators: gaudi3\nkind: architecture\nownr: me\n---\n# Gaudi 3\n\n"
                                    "The hyrax engine runs the matmuls.\n")
    runner = CliRunner()
    strict = runner.invoke(app, ["ingest", str(docs), "--strict"])
    assert strict.exit_code == 1 and "Traceback" not in strict.output
    assert "gaudi3.md:4: field 'ownr': not a field of the front matter" in strict.output
    assert "written: 0" in strict.output
    lenient = runner.invoke(app, ["ingest", str(docs), "--json"])
    assert lenient.exit_code == 0, lenient.output
    report = json.loads(lenient.stdout)
    assert report["written"] == 1 and report["warnings"] == 2 and lenient.stderr.count("gaudi3.md:") == 2
    assert "reading" not in lenient.stderr and "embedding" not in lenient.stderr  # no progress under --json
    found = json.loads(runner.invoke(app, ["search", "hyrax engine", "--accelerator", "gaudi3", "--json"]).stdout)
    assert found["hits"][0]["chunk"]["kind"] == "arch"  # tagged by the documents: a filter knows it
    unknown = runner.invoke(app, ["search", "hyrax engine", "--accelerator", "gaudi4"])
    assert unknown.exit_code == 2 and "Traceback" not in unknown.output
    assert "unknown accelerator 'gaudi4'" in unknown.output and "gaudi3" in unknown.output
    assert "h100" in unknown.output and "--accelerator" in unknown.output


def test_kernels_on_a_store_never_ingested_says_how_to_fill_it(cli_home):
    from kernelkb_cli import app

    result = CliRunner().invoke(app, ["kernels"])
    assert result.exit_code == 0 and "holds no kernels: `kkb ingest`" in result.output, result.output


def test_search_on_a_store_never_ingested_says_how_to_fill_it(cli_home):
    from kernelkb_cli import app

    result = CliRunner().invoke(app, ["search", "wgmma tile shapes", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"] == []  # stdout stays valid JSON: the hint is on stderr
    assert "holds no documents: `kkb ingest`" in result.stderr


def test_search_without_hits_on_a_filled_store_gives_no_hint(cli_home):
    from kernelkb_cli import app

    docs = cli_home / "docs"
    docs.mkdir()
    (docs / "h100.md").write_text("---\naccelerator: [h100]\nvendor: nvidia\nkind: isa\n---\n# H100\n\nwgmma.\n")
    assert CliRunner().invoke(app, ["ingest", str(docs)]).exit_code == 0
    result = CliRunner().invoke(app, ["search", "wgmma", "--vendor", "amd"])
    assert "no hits" in result.stdout and "holds no documents" not in result.output
