"""`kkb prompt` on the embedded store: the prompt printed or written, its JSON the body of POST /v1/prompt, and
bad input named (a spec that is not there, an unknown target with the known ids)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kb_server.config import get_settings
from tests.kb_server import kbdata


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


def test_prompt_for_a_spec_written_printed_and_as_json(cli_home):
    spec = cli_home / "softmax.py"
    spec.write_text(kbdata.SPEC)
    out = cli_home / "prompt.md"
    written = _kkb("prompt", str(spec), "--target", "h100-sxm", "-o", str(out), "--token-budget", "3000")
    assert written.exit_code == 0, written.output
    text = out.read_text()
    assert text.startswith("## Target hardware: NVIDIA H100") and "## Task" in text and "torch.softmax" in text
    body = json.loads(_kkb("prompt", str(spec), "--target", "h100", "--json", "--no-retrieval").stdout)
    assert [s["name"] for s in body["sections"]] == ["hardware_facts", "passages", "example_kernels", "rules",
                                                     "task"]
    assert body["retrieval"] is False and body["family"] == "softmax"


def test_bad_input_is_named(cli_home):
    spec = cli_home / "softmax.py"
    spec.write_text(kbdata.SPEC)
    missing = _kkb("prompt", str(cli_home / "nope.py"), "--target", "h100")
    assert missing.exit_code == 2 and "nope.py" in missing.output and "Traceback" not in missing.output
    unknown = _kkb("prompt", str(spec), "--target", "tpu-v9")
    assert unknown.exit_code == 2 and "accelerator" in unknown.output and "known: a100" in unknown.output


def test_prompt_on_a_store_never_ingested_says_how_to_fill_it(cli_home):
    spec = cli_home / "softmax.py"
    spec.write_text(kbdata.SPEC)
    result = _kkb("prompt", str(spec), "--target", "h100", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["family"] == "softmax"  # stdout stays valid JSON: the hint is on stderr
    assert "holds no documents: `kkb ingest`" in result.stderr
    baseline = _kkb("prompt", str(spec), "--target", "h100", "--no-retrieval")
    assert "holds no documents" not in baseline.output  # no passages were asked for


def test_a_backend_the_target_does_not_run_is_a_warning(cli_home):
    spec = cli_home / "softmax.py"
    spec.write_text(kbdata.SPEC)
    result = _kkb("prompt", str(spec), "--target", "mtia-v2", "--backend", "cuda", "--json")
    assert result.exit_code == 0, result.output  # a warning, not a refusal: the prompt is still built
    assert ("warning: backend cuda does not compile for mtia-v2 (Meta MTIA v2): its facts list triton"
            in result.stderr)
    assert json.loads(result.stdout)["warnings"] == [result.stderr.split("warning: ")[1].splitlines()[0]]
    fine = _kkb("prompt", str(spec), "--target", "mtia-v2", "--backend", "triton")
    assert fine.exit_code == 0 and "warning" not in fine.stderr
