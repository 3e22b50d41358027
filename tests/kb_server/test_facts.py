"""Fact questions answered from the structured facts: synonyms, scores, aliases and helpful misses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kb_server.factlookup import AcceleratorNotFound, FactNotFound, fact_fields, lookup, resolve_accelerator
from kb_server.facts import FactsError, load_all_facts

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def facts():
    return load_all_facts(FIXTURES / "accelerators")


@pytest.mark.parametrize(
    ("accelerator", "question", "field"),
    [
        ("h100", "shared memory", "shared_memory_per_unit"),
        ("h100", "smem", "shared_memory_per_unit"),
        ("mi300x", "LDS", "shared_memory_per_unit"),  # AMD's name for it
        ("mi300x", "how big is the LDS per CU?", "shared_memory_per_unit"),
        ("h100", "HBM bandwidth", "memory_bandwidth"),
        ("h100", "bf16 peak", "peak_tflops.bf16"),
        ("h100", "bfloat16 TFLOPS", "peak_tflops.bf16"),  # dtype spelled out, plural
        ("h100", "fp32 peak throughput", "peak_tflops.fp32"),
        ("h100", "nvlink bandwidth", "extra.nvlink_bandwidth"),  # more specific than memory_bandwidth
        ("h100", "How many SMs does the H100 have", "compute_units"),
        ("h100", "warp size", "warp_width"),
        ("mi300x", "infinity cache", "last_level_cache"),
        ("h100", "L2", "l2_cache"),
        ("h100", "memory capacity", "memory_size"),
    ],
)
def test_best_match(facts, accelerator, question, field):
    answer = lookup(facts[accelerator], question)
    best = answer.matches[0]
    assert best.field == field
    fact = fact_fields(facts[accelerator])[field]
    assert (best.value, best.unit, best.source) == (fact.value, fact.unit, str(fact.source))
    assert all(best.score >= m.score for m in answer.matches)


def test_measured_fact_carries_date_and_method(facts):
    best = lookup(facts["h100"], "measured copy bandwidth").matches[0]
    assert best.field == "extra.measured_copy_bandwidth"
    assert best.source == "measured" and best.measured_on == "2026-11-01" and best.method


def test_no_match_lists_the_fields(facts):
    with pytest.raises(FactNotFound) as info:
        lookup(facts["h100"], "espresso machine")
    assert "shared_memory_per_unit" in info.value.fields
    assert "peak_tflops.bf16" in str(info.value)


def test_aliases_resolve(facts):
    assert resolve_accelerator(facts, "H100-SXM").id == "h100"
    with pytest.raises(AcceleratorNotFound, match="known: h100, mi300x"):
        resolve_accelerator(facts, "tpu-v5")


def test_cli_facts_answers_and_names_misses(monkeypatch, tmp_path):
    import typer

    from kb_server.api_cli import facts as facts_verb

    app = typer.Typer()
    app.command()(facts_verb)
    app.command(name="noop")(lambda: None)
    monkeypatch.setenv("KKB_CORPUS_DIR", str(FIXTURES))
    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))  # the store's facts: never the user's home
    out = CliRunner().invoke(app, ["facts", "h100", "shared", "memory"])
    assert out.exit_code == 0, out.output
    assert "shared_memory_per_unit = 228 KiB" in out.output
    miss = CliRunner().invoke(app, ["facts", "h100", "espresso"])
    assert miss.exit_code == 1 and "ask about one of" in miss.output
    as_json = CliRunner().invoke(app, ["facts", "h100", "shared", "memory", "--json"])
    assert as_json.exit_code == 0, as_json.output
    best = json.loads(as_json.stdout)["matches"][0]
    assert (best["field"], best["value"], best["unit"]) == ("shared_memory_per_unit", 228, "KiB")


def test_invalid_facts_file_stops_startup(tmp_path):
    from kb_server.api.settings import ServerSettings
    from kb_server.main import create_app

    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "accelerators", corpus / "accelerators")
    bad = corpus / "accelerators" / "h100.yaml"
    bad.write_text(bad.read_text().replace("memory_bandwidth: {value: 3.35", "memory_bandwidth: {value: fast"))
    with pytest.raises(FactsError, match=r"h100\.yaml.*memory_bandwidth"):
        create_app(ServerSettings(home=tmp_path / "home", corpus_dir=corpus), open_store_at_startup=False)
