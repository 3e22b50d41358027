"""`kkb report`: one self-contained HTML page, checked by rendering it in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from kernelkb_cli import app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def chromium(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'prof'}",
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def report_path(tuned_session):
    home = tuned_session["settings"].home
    out = tuned_session["folder"] / "page.html"
    result = CliRunner().invoke(app, ["report", "relu-one", "--home", str(home), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_report_says_why_the_session_stopped_in_words(report_path):
    html = report_path.read_text()
    assert "stopped because the candidate budget (--budget) was spent" in html and "stop: budget" not in html
    assert "the Triton interpreter&#x27;s" in html  # a CPU session: what its times are


def test_report_is_self_contained(report_path):
    html = report_path.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from a network
    assert "<svg" in html and "<style>" in html and "<script>" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/test.sh installs it)")
def test_report_renders_in_headless_chromium(report_path, tuned_session, tmp_path):
    done = chromium(["--dump-dom", f"file://{report_path}"], tmp_path)
    dom = done.stdout
    assert done.returncode == 0 and "<body" in dom, done.stderr[-2000:]
    assert 'data-ready="1"' in dom  # the page's script ran to the end
    assert "5 of 5 candidates shown" in dom  # ... and filled the table summary
    assert dom.count('class="node"') == 5  # the search graph: one SVG node per candidate
    assert 'id="best-line"' in dom and dom.count('class="point"') == 5  # best speedup over time
    assert 'id="row-n0001" data-status="malformed"' in dom  # the candidate table with diagnostics
    best = tuned_session["result"].best_node_id
    winner = re.search(r'<pre id="winner"><code>(.*?)</code>', dom, re.DOTALL).group(1)
    assert "class ModelNew" in winner and best in dom
    shot = tmp_path / "report.png"
    chromium([f"--screenshot={shot}", "--window-size=1200,1600", f"file://{report_path}"], tmp_path)
    assert shot.exists() and shot.stat().st_size > 10_000  # a page with content, not a blank image


def test_report_json_names_the_page(tuned_session, tmp_path):
    out = tmp_path / "again.html"
    home = tuned_session["settings"].home
    result = CliRunner().invoke(app, ["report", "relu-one", "--home", str(home), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"session": "relu-one", "output": str(out)} and out.stat().st_size > 0


def test_a_candidate_row_names_its_route():
    from agent_client.report import _row
    from agent_client.session.records import Node

    node = Node(id="n0002", step=1, parent_ids=["n0001"], kind="expand", code="", response="",
                meta={"route_id": "library:softmax_rows_triton"}, status="evaluated",
                verdict={"status": "passed", "latency_ms": 1.0}, fitness=1.2)
    cells = _row(node).split("<td")
    assert "library:softmax_rows_triton</td>" in cells[4]  # after node, parents and kind
