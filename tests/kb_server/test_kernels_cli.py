"""`kkb kernels` on a narrow terminal: the ids it shows are whole, and `show` takes what it shows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kb_server.config import get_settings


@pytest.fixture
def library_home(tmp_path, monkeypatch):
    from kernelkb_cli import app

    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the embedder loads offline, as every command loads it
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    get_settings.cache_clear()
    family = tmp_path / "kernels" / "softmax"
    family.mkdir(parents=True)
    (family / "kernel.py").write_text("TUNABLES = {'BLOCK': 128}\n")
    (family / "kernel.yaml").write_text("name: softmax_rows_with_a_long_name_triton\nop_family: softmax\n"
                                        "op_signature: softmax(x, dim=-1) over rows of any length, in fp32\n"
                                        "backend: triton\n")
    ingested = CliRunner().invoke(app, ["ingest", str(tmp_path / "kernels"), "--json"])
    assert ingested.exit_code == 0, ingested.output
    yield app
    get_settings.cache_clear()


def test_listing_at_80_columns_shows_ids_that_show_accepts(library_home):
    runner = CliRunner()
    [record] = json.loads(runner.invoke(library_home, ["kernels", "--json"]).stdout)["kernels"]
    listed = runner.invoke(library_home, ["kernels"], env={"COLUMNS": "80"})
    assert listed.exit_code == 0, listed.output
    assert max(len(line) for line in listed.output.splitlines()) <= 80
    assert record["id"][:12] in listed.output  # the id column is never cut
    for typed in (record["id"][:12], record["id"][:7] + "…", record["name"]):
        shown = runner.invoke(library_home, ["kernels", "show", typed, "--json"])
        assert shown.exit_code == 0, (typed, shown.output)
        assert json.loads(shown.stdout)["record"]["id"] == record["id"]


def test_show_names_an_unknown_kernel(library_home):
    shown = CliRunner().invoke(library_home, ["kernels", "show", "no_such_kernel"])
    assert shown.exit_code == 2 and "no_such_kernel" in shown.output and "Traceback" not in shown.output
