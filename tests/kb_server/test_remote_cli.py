"""The verbs that read or write the knowledge base, pointed at a running server with `--kb URL` (or KKB_KB_URL):
`kkb search`, `kkb kernels`, `kkb facts` and `kkb ingest` answer from a real uvicorn server on loopback.

Usage: .venv/bin/python -m pytest -q tests/kb_server/test_remote_cli.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kb_server.config import get_settings
from tests.kb_server.serverproc import refused_port, seeded_app_in_thread

KEY = "remote-cli-key"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """uvicorn serving a seeded store in this process, on a free loopback port; writes need KEY."""
    with seeded_app_in_thread(tmp_path_factory.mktemp("remote-home"), KEY) as url:
        yield url


@pytest.fixture
def local_home(tmp_path, monkeypatch):
    """An empty embedded store: whatever a verb finds came from the server."""
    monkeypatch.setenv("KKB_HOME", str(tmp_path / "empty-home"))
    monkeypatch.delenv("KKB_KB_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def _kkb(*args: str, env: dict | None = None):
    from kernelkb_cli import app

    return CliRunner().invoke(app, list(args), env=env)


def test_search_and_kernels_read_the_server(server, local_home):
    found = _kkb(
        "search", "row softmax registers", "-k", "2", "--accelerator", "h100", "--kb", server, "--json"
    )
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["chunk"]["document_id"] == "h100-softmax"
    listed = _kkb("kernels", "--backend", "triton", "--kb", server, "--json")
    assert listed.exit_code == 0, listed.output
    assert "softmax-triton" in [r["id"] for r in json.loads(listed.stdout)["kernels"]]
    shown = _kkb("kernels", "show", "softmax-tri", "--kb", server, "--json")  # a unique prefix, as locally
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["record"]["op_family"] == "softmax"
    # the same verbs without --kb read the empty embedded store
    assert json.loads(_kkb("kernels", "--json").stdout) == {"kernels": []}


def test_the_setting_names_the_server_as_the_option_does(server, local_home):
    found = _kkb("search", "row softmax registers", "-k", "1", "--json", env={"KKB_KB_URL": server})
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["chunk"]["document_id"] == "h100-softmax"


def test_facts_from_the_server_as_json(server, local_home):
    answer = _kkb("facts", "h100", "HBM", "bandwidth", "--kb", server, "--json")
    assert answer.exit_code == 0, answer.output
    best = json.loads(answer.stdout)["matches"][0]
    assert best["value"] == 3.35 and best["unit"]
    unknown = _kkb("facts", "no-such-chip", "shared", "memory", "--kb", server)
    assert unknown.exit_code == 2 and "no-such-chip" in unknown.output


NEW_FACTS = Path(__file__).resolve().parents[1] / "ingest" / "fixtures" / "new_vendor" / "accelerators" / "lf-t4.yaml"


def test_ingest_uploads_documents_and_facts_and_names_what_a_server_does_not_take(server, local_home, monkeypatch):
    monkeypatch.setenv("KKB_API_KEY", KEY)
    get_settings.cache_clear()
    note = local_home / "notes" / "lds.md"
    note.parent.mkdir()
    note.write_text(
        "---\ntitle: LDS banks\naccelerator: [mi300x]\nvendor: amd\nkind: guide\n---\n# LDS banks\n\n"
        "Thirty-two zorblat banks serve one wavefront's LDS reads.\n"
    )
    (local_home / "notes" / "chip.yaml").write_text("id: chip\n")  # not a facts file: stays out of folder uploads
    sent = _kkb("ingest", str(note), "--kb", server, "--json")
    assert sent.exit_code == 0, sent.output
    report = json.loads(sent.stdout)
    assert report["written"] == 1 and report["chunks_embedded"] >= 1 and report["errors"] == 0
    again = json.loads(_kkb("ingest", str(note.parent), "--kb", server, "--json").stdout)
    assert again["unchanged"] == 1 and again["written"] == 0  # a folder: its documents and facts files only
    found = json.loads(_kkb("search", "zorblat banks", "-k", "1", "--kb", server, "--json").stdout)["hits"]
    assert found[0]["chunk"]["title"] == "LDS banks" and found[0]["chunk"]["source"] == "lds.md"
    # a facts file whose facts each name their source, without a top-level sources list, as a newcomer writes it
    facts = local_home / "facts" / "lf-t4.yaml"
    facts.parent.mkdir()
    facts.write_text(NEW_FACTS.read_text().split("\nsources:")[0] + "\n")
    assert _kkb("facts", "lf-t4", "shared", "memory", "--kb", server).exit_code == 2  # not known yet
    uploaded = _kkb("ingest", str(facts), "--kb", server, "--json")
    assert uploaded.exit_code == 0, uploaded.output
    answer = json.loads(_kkb("facts", "lf-t4", "shared", "memory", "--kb", server, "--json").stdout)
    assert (answer["matches"][0]["value"], answer["matches"][0]["unit"]) == (384, "KiB")
    listed = json.loads(_kkb("documents", "--kb", server, "--json").stdout)["documents"]
    assert {(d["name"], d["type"]) for d in listed} >= {("lds.md", "document"), ("lf-t4.yaml", "facts")}
    bad = local_home / "facts" / "bad-chip.yaml"
    bad.write_text("id: bad-chip\nname: Bad\n")
    refused = _kkb("ingest", str(bad), "--kb", server)
    assert refused.exit_code == 1 and "bad-chip.yaml:" in refused.output and "field 'vendor'" in refused.output
    kernel = local_home / "facts" / "kernel.py"
    kernel.write_text("x = 1\n")
    named = _kkb("ingest", str(kernel), "--kb", server)
    assert named.exit_code == 1 and "kernel.py" in named.output and "ingest kernels where" in named.output
    monkeypatch.setenv("KKB_API_KEY", "wrong-key")
    get_settings.cache_clear()
    denied = _kkb("ingest", str(note), "--kb", server)
    assert denied.exit_code == 1 and "401" in denied.output and "Traceback" not in denied.output


def test_an_unreachable_server_is_named(local_home):
    with refused_port() as port:
        url = f"http://127.0.0.1:{port}"
        for args in (["search", "x"], ["kernels"], ["facts", "h100", "shared", "memory"]):
            result = _kkb(*args, "--kb", url)
            assert result.exit_code == 2 and url in result.output, (args, result.output)
