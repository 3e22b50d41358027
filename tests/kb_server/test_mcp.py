"""The MCP server over stdio, driven by the `mcp` package's own client (ClientSession + stdio_client)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.kb_server import kbdata
from tests.kb_server.serverproc import FIXTURE_CORPUS, REPO

pytestmark = pytest.mark.slow  # starts server processes: tens of seconds on 2 busy cores
NEW_FACTS = REPO / "tests" / "ingest" / "fixtures" / "new_vendor" / "accelerators" / "lf-t4.yaml"
TOOLS = {"search", "accelerator_facts", "fact_lookup", "build_prompt", "kernels", "search_kernels", "get_kernel",
         "documents"}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from kb_server.api.settings import ServerSettings
    from kb_server.store import Store

    home = tmp_path_factory.mktemp("mcp-home")
    with kbdata.one_torch_thread():
        kbdata.seed(Store(ServerSettings(home=home, corpus_dir=FIXTURE_CORPUS)))
    return home


async def _session_calls(home: Path) -> dict:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kb_server.mcp_server"], cwd=str(REPO),
        env={**os.environ, "KKB_HOME": str(home), "KKB_CORPUS_DIR": str(FIXTURE_CORPUS), "HF_HUB_OFFLINE": "1"})
    out = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = {t.name for t in (await session.list_tools()).tools}
        out["fact"] = await session.call_tool("fact_lookup", {"accelerator": "h100", "question": "smem"})
        out["acc"] = await session.call_tool("accelerator_facts", {"accelerator": "mi300x"})
        out["search"] = await session.call_tool("search", {"query": "row softmax", "k": 3, "accelerator": "h100"})
        out["prompt"] = await session.call_tool("build_prompt", {"spec_source": kbdata.SPEC, "accelerator": "h100",
                                                                 "backend": "triton", "token_budget": 3000})
        out["kernels"] = await session.call_tool("kernels", {"backend": "triton"})
        out["similar"] = await session.call_tool("search_kernels", {"query": "softmax", "backend": "cuda"})
        out["missing"] = await session.call_tool("fact_lookup", {"accelerator": "tpu", "question": "smem"})
        out["unknown"] = await session.call_tool("search", {"query": "row softmax", "accelerator": "tpuv5"})
        out["alias"] = await session.call_tool("search", {"query": "row softmax", "k": 2, "accelerator": "H100-SXM"})
        out["documents"] = await session.call_tool("documents", {})
        out["before"] = await session.call_tool("fact_lookup", {"accelerator": "lf-t4", "question": "smem"})
        _ingest_new_facts(home)  # another process writes facts while the MCP server runs
        out["after"] = await session.call_tool("fact_lookup", {"accelerator": "lf-t4", "question": "smem"})
    return out


def _ingest_new_facts(home: Path) -> None:
    from ingest.pipeline import ingest_paths
    from kb_server.api.settings import ServerSettings
    from kb_server.store import Store

    report = ingest_paths(Store(ServerSettings(home=home, corpus_dir=FIXTURE_CORPUS)), [NEW_FACTS])
    assert report.facts == ["lf-t4"]


def test_mcp_tools_over_stdio(home):
    out = anyio.run(_session_calls, home)
    assert TOOLS <= out["tools"]
    best = out["fact"].structured_content["matches"][0]
    assert (best["field"], best["value"], best["unit"]) == ("shared_memory_per_unit", 228, "KiB")
    assert out["acc"].structured_content["compute_units"]["value"] == 304
    assert set(out["search"].structured_content) == {"query", "k", "hits"}  # the shape of POST /v1/search
    hits = out["search"].structured_content["hits"]
    assert out["unknown"].is_error and "unknown accelerator 'tpuv5'" in out["unknown"].content[0].text
    assert "known: h100, mi300x" in out["unknown"].content[0].text
    assert out["alias"].structured_content["hits"]  # an alias of a known accelerator reads as its id
    assert {d["document_id"] for d in out["documents"].structured_content["documents"]} >= {"h100-softmax"}
    assert hits and all(set(h["chunk"]["accelerator"]) & {"h100", "any"} for h in hits)
    sections = [s["name"] for s in out["prompt"].structured_content["sections"]]
    assert sections == ["hardware_facts", "passages", "example_kernels", "rules", "task"]
    assert {k["id"] for k in out["kernels"].structured_content["kernels"]} == {"softmax-triton"}
    assert out["similar"].structured_content["kernels"][0]["id"] == "softmax-cuda"
    assert out["missing"].is_error and "unknown accelerator 'tpu'" in out["missing"].content[0].text
    assert out["before"].is_error and "known: h100, mi300x" in out["before"].content[0].text
    best = out["after"].structured_content["matches"][0]  # no restart: the running server reads them
    assert (best["field"], best["value"], best["unit"]) == ("shared_memory_per_unit", 384, "KiB")


def test_kkb_registers_the_verbs():
    from typer.testing import CliRunner

    from kernelkb_cli import app

    out = CliRunner().invoke(app, ["--help"])
    assert out.exit_code == 0
    for verb in ("serve", "mcp", "facts"):
        assert verb in out.output


def test_a_line_that_is_not_a_message_gets_json_rpc_errors_and_the_server_goes_on(home):
    """JSON-RPC 2.0 over stdio, written by hand: a line that is not JSON gets -32700 (id null), JSON that is
    not a message gets -32600 (its id kept), and the next request is answered as usual."""
    import json
    import subprocess

    env = {**os.environ, "KKB_HOME": str(home), "KKB_CORPUS_DIR": str(FIXTURE_CORPUS), "HF_HUB_OFFLINE": "1"}
    init = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "by-hand", "version": "0"}}}
    lines = ["this is not json", json.dumps({"jsonrpc": "2.0", "id": 3, "methd": "tools/list"}), json.dumps(init)]
    proc = subprocess.run([sys.executable, "-m", "kb_server.mcp_server"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, cwd=str(REPO), env=env, timeout=120, check=False)
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(replies) == 3, proc.stdout + proc.stderr
    assert replies[0]["id"] is None and replies[0]["error"]["code"] == -32700
    assert "not JSON" in replies[0]["error"]["message"]
    assert replies[1]["id"] == 3 and replies[1]["error"]["code"] == -32600
    assert replies[2]["id"] == 7 and replies[2]["result"]["serverInfo"]["name"]
    assert "Traceback" not in proc.stderr
