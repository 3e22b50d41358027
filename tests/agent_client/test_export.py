"""`kkb export`: JSONL that Hugging Face datasets loads as it is, with chat-format messages for TRL."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernelkb_cli import app


def test_export_loads_with_datasets(tuned_session, tmp_path):
    out = tmp_path / "relu.jsonl"
    home = tuned_session["settings"].home
    result = CliRunner().invoke(app, ["export", "relu-one", "--home", str(home), "-o", str(out)])
    assert result.exit_code == 0 and "(5 rows)" in result.output, result.output

    import datasets

    ds = datasets.load_dataset("json", data_files=str(out), split="train",
                               cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == 5
    for column in ("prompt", "completion", "response", "reward", "correct", "diagnostics", "messages", "status"):
        assert column in ds.column_names
    rows = list(ds)
    best = tuned_session["result"]
    correct = [r for r in rows if r["correct"]]
    assert len(correct) == 2 and all(r["reward"] > 0 and r["reward_basis"] == "eager" for r in correct)
    assert max(r["reward"] for r in rows) == best.best_fitness
    assert all(r["reward"] == 0 for r in rows if not r["correct"])
    malformed = next(r for r in rows if r["status"] == "malformed")
    assert malformed["code"] == "" and "persistent kernel" in malformed["response"]
    assert [m["role"] for m in rows[0]["messages"]] == ["system", "user", "assistant"]
    assert rows[0]["messages"][1]["content"] == rows[0]["prompt"] and "Target hardware" in rows[0]["prompt"]


def test_export_names_a_missing_session(tmp_path):
    result = CliRunner().invoke(app, ["export", "no-such-session", "--home", str(tmp_path)])
    assert result.exit_code == 2 and "no session 'no-such-session'" in result.output


def test_export_json_names_the_file_and_its_rows(tuned_session, tmp_path):
    out = tmp_path / "rows.jsonl"
    home = tuned_session["settings"].home
    result = CliRunner().invoke(app, ["export", "relu-one", "--home", str(home), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"session": "relu-one", "output": str(out), "rows": 5}
    assert len(out.read_text().splitlines()) == 5

