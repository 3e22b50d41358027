"""A new vendor's accelerator end to end through ingest: its docs (front matter as their authors wrote it)
and its facts file, answered at once by search, the store's facts, `kkb facts`, a running server and
the agent's knowledge base; bad facts files refused by field, never replacing good ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from ingest.pipeline import ingest_paths
from kb_server.config import get_settings
from kb_server.schemas import SearchFilters

NEW_VENDOR = Path(__file__).parent / "fixtures" / "new_vendor"
FACTS = NEW_VENDOR / "accelerators" / "lf-t4.yaml"
REPO = Path(__file__).resolve().parents[2]

# (question, text the answer holds): facts that only the new vendor's docs hold
QUESTIONS = [
    ("How much scratchpad memory does each LF-T4 tile have?", "384 KiB"),
    ("LF-T4 HBM capacity and peak memory bandwidth", "2.4 TB/s"),
    ("kernel launch overhead on the LF-T4", "9 microseconds"),
    ("cost of one mesh hop for a cross-tile reduction", "40 cycles"),
    ("exp throughput of the transcendental unit per cycle", "32 lanes"),
    ("bf16 peak of the LF-T4 matrix engines", "550 TFLOP/s"),
]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, embedder):
    from kb_server.config import KBSettings
    from kb_server.store import Store

    store = Store(KBSettings(home=tmp_path_factory.mktemp("kkb-home")), embedder=embedder)
    report = ingest_paths(store, [NEW_VENDOR])
    return store, report


def test_new_vendor_docs_and_facts_ingest_as_written(ingested):
    store, report = ingested
    assert report.errors == [] and report.skipped == []
    assert report.facts == ["lf-t4"] and len(report.written) == 3
    facts = store.accelerators()
    assert facts["lf-t4"].vendor == "lumenforge" and facts["lf-t4"].shared_memory_per_unit.value == 384
    assert {"h100", "mi300x", "lf-t4"} <= facts.keys()  # the corpus's facts stay


@pytest.mark.parametrize(("question", "answer"), QUESTIONS)
def test_search_answers_the_new_accelerators_facts(ingested, question, answer):
    store, _ = ingested
    hits = store.search(question, k=5, filters=SearchFilters(accelerator="LF-T4"))
    assert any(answer in h.chunk.text for h in hits), [h.chunk.heading_path for h in hits]


def test_front_matter_is_kept_open_and_normalised(ingested):
    store, _ = ingested
    hits = store.search("stochastic rounding to bf16", k=3, filters=SearchFilters(vendor="LumenForge"))
    numerics = next(h.chunk for h in hits if "Stochastic rounding" in h.chunk.text)
    assert numerics.title == "LF-T4 numerics and special functions"  # no title field: the first heading
    assert numerics.vendor == "lumenforge" and numerics.accelerator == ["lf-t4"]
    assert numerics.kind == "guide"  # no kind field: the ingest's default
    assert numerics.metadata == {"errata_id": "T4-NUM-7"}  # an unknown field, kept
    assert numerics.source_urls == ["https://lumenforge.example/docs/t4-numerics"]  # `source:` is a source


@pytest.fixture
def cli_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def _facts_answer(runner, accelerator: str, question: str):
    from kernelkb_cli import app

    return runner.invoke(app, ["facts", accelerator, question])


def test_a_facts_file_given_alone_answers_kkb_facts_at_once(cli_home):
    from kernelkb_cli import app

    runner = CliRunner()
    before = _facts_answer(runner, "lf-t4", "shared memory")
    assert before.exit_code == 2 and "known: a100" in before.output  # unknown: the known ids are listed
    ingested = runner.invoke(app, ["ingest", str(FACTS), "--json"])
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.stdout)["facts_ids"] == ["lf-t4"]
    answer = _facts_answer(runner, "LF-T4", "shared memory")
    assert answer.exit_code == 0, answer.output
    assert "lf-t4 shared_memory_per_unit = 384 KiB" in answer.output
    assert _facts_answer(runner, "t4-mesh", "bf16 peak").output.startswith("lf-t4 peak_tflops.bf16 = 550")


@pytest.mark.parametrize(("old", "new", "field"), [
    ("  unit: KiB\n", "", "shared_memory_per_unit.unit"),  # a fact without its unit
    ("  source: https://lumenforge.example/docs/t4-architecture\n  note: software-managed",
     "  note: software-managed", "shared_memory_per_unit.source"),  # ... or without its source
    ("vendor: LumenForge", "vendor: [a, b]", "vendor"),  # a field of the wrong type
])
def test_a_bad_facts_file_is_refused_by_field_and_never_replaces_a_good_one(cli_home, old, new, field):
    from kernelkb_cli import app

    runner = CliRunner()
    folder = cli_home / "accelerators"
    folder.mkdir()
    shutil.copy(FACTS, folder / "lf-t4.yaml")
    assert runner.invoke(app, ["ingest", str(folder)]).exit_code == 0
    text = FACTS.read_text()
    assert old in text
    (folder / "lf-t4.yaml").write_text(text.replace(old, new).replace("value: 384", "value: 999"))
    refused = runner.invoke(app, ["ingest", str(folder)])
    assert refused.exit_code == 1
    assert "lf-t4.yaml:" in refused.output and f"field '{field}'" in refused.output
    kept = _facts_answer(runner, "lf-t4", "shared memory")
    assert "= 384 KiB" in kept.output  # the good facts stay


def test_a_facts_file_must_be_named_after_its_id(cli_home):
    from kernelkb_cli import app

    wrong = cli_home / "t4.yaml"
    shutil.copy(FACTS, wrong)
    result = CliRunner().invoke(app, ["ingest", str(wrong)])
    assert result.exit_code == 1 and "t4.yaml:2: field 'id'" in result.output


def test_the_agents_knowledge_base_knows_the_new_target_at_once(ingested):
    from agent_client.kb import LocalKB

    store, _ = ingested
    assert LocalKB(store).accelerator("LF-T4").name == "LumenForge LF-T4"


@pytest.mark.slow  # a real `kkb serve` process and a real `kkb ingest` process
def test_a_running_server_answers_facts_ingested_by_another_process(tmp_path):
    from tests.kb_server.serverproc import start_server

    home = tmp_path / "home"
    home.mkdir()
    server = start_server(home, corpus_dir=REPO / "corpus")
    try:
        params = {"accelerator": "lf-t4", "q": "shared memory"}
        miss = httpx.get(f"{server.base_url}/v1/facts", params=params, timeout=30)
        assert miss.status_code == 404 and "h200" in miss.json()["detail"]  # the known ids are listed
        env = {**os.environ, "KKB_HOME": str(home), "KKB_CORPUS_DIR": str(REPO / "corpus"),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-m", "kernelkb_cli", "ingest", str(FACTS)], check=False, cwd=REPO,
                              env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        answer = httpx.get(f"{server.base_url}/v1/facts", params=params, timeout=30)
        assert answer.status_code == 200, answer.text
        best = answer.json()["matches"][0]
        assert (best["field"], best["value"], best["unit"]) == ("shared_memory_per_unit", 384, "KiB")
        listed = httpx.get(f"{server.base_url}/v1/accelerators/t4-mesh", timeout=30).json()
        assert listed["vendor"] == "lumenforge"
    finally:
        server.stop()


def _fill(template: str) -> str:
    """A template filled in as a newcomer fills it: the required values, and one optional fact uncommented."""
    scalars = {"name": "Gaudi Three", "vendor": "Made-up Vendor", "architecture": "G3", "compute_unit_name": "TPC"}
    lines = [f"{line.split(':')[0]}: {scalars[line.split(':')[0]]}" if line.split(":")[0] in scalars else line
             for line in template.splitlines()]
    text = "\n".join(lines) + "\n"
    for unit, value in (("count", 64), ("GB", 128), ("TB/s", 3.7)):
        text = text.replace(f"  value:\n  unit: {unit}\n", f"  value: {value}\n  unit: {unit}\n")
    text = re.sub(r"(?m)^  source:$", "  source: https://made-up-vendor.example/g3", text)
    smem = "# shared_memory_per_unit:  # shared memory / LDS / scratchpad per compute unit\n#   value:\n#   unit: KiB\n" \
           "#   source:\n"
    assert smem in text
    return text.replace(smem, "shared_memory_per_unit:\n  value: 96\n  unit: KiB\n"
                              "  source: https://made-up-vendor.example/g3-sram\n")


def test_a_facts_template_filled_without_a_sources_list_answers_kkb_facts(cli_home):
    from kb_server.facts import AcceleratorFacts
    from kernelkb_cli import app

    runner = CliRunner()
    path = cli_home / "facts" / "gaudi3.yaml"
    written = runner.invoke(app, ["facts", "--template", "gaudi3", "-o", str(path)])
    assert written.exit_code == 0, written.output
    template = path.read_text()
    for field in AcceleratorFacts.model_fields:  # every field a facts file takes, each named
        assert f"\n{field}:" in template or f"\n# {field}:" in template or field == "id", field
    assert "unit: TB/s" in template and template.count("source:") >= 20
    unfilled = runner.invoke(app, ["ingest", str(path)])
    assert unfilled.exit_code == 1 and "gaudi3.yaml:8: field 'name': is empty: fill it in" in unfilled.output
    assert "Traceback" not in unfilled.output
    again = runner.invoke(app, ["facts", "--template", "gaudi3", "-o", str(path)])
    assert again.exit_code == 2 and "exists" in again.output and path.read_text() == template  # never overwritten
    path.write_text(_fill(template))
    assert "\nsources:" not in path.read_text()  # each fact names its own source: no list needed
    ingested = runner.invoke(app, ["ingest", str(path)])
    assert ingested.exit_code == 0, ingested.output
    answer = runner.invoke(app, ["facts", "gaudi3", "shared", "memory"])
    assert answer.exit_code == 0, answer.output
    assert answer.output.startswith("gaudi3 shared_memory_per_unit = 96 KiB")
    assert "source https://made-up-vendor.example/g3-sram" in answer.output


def test_the_template_is_named_after_its_id(cli_home):
    from kernelkb_cli import app

    wrong = CliRunner().invoke(app, ["facts", "--template", "gaudi3", "-o", str(cli_home / "chip.yaml")])
    assert wrong.exit_code == 2 and "gaudi3.yaml" in wrong.output and not (cli_home / "chip.yaml").exists()
