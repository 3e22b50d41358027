"""One accelerator-name normalisation everywhere (facts, HTTP, MCP); unknown vendor/kind filters refused; the
prompt's backend defaults to triton over HTTP and MCP; MCP argument errors are one readable line."""

from __future__ import annotations

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from typer.testing import CliRunner

from kb_server.factlookup import AcceleratorNotFound, resolve_accelerator
from kb_server.schemas import SearchFilters
from kb_server.search import UnknownAcceleratorFilter, UnknownKindFilter, UnknownVendorFilter
from tests.kb_server import kbdata
from tests.kb_server.test_api import KEY, make_client


@pytest.fixture
def seeded(store):
    with kbdata.one_torch_thread():
        kbdata.seed(store)
    return store


@pytest.mark.parametrize("typed", ["h100", "H100", "h100 sxm", "H100_SXM", "h100-sxm"])
def test_facts_find_an_accelerator_however_it_is_spelt(store, typed):
    assert resolve_accelerator(store.accelerators(), typed).id == "h100"


def test_an_unknown_accelerator_suggests_the_closest(store):
    with pytest.raises(AcceleratorNotFound, match="did you mean h100"):
        resolve_accelerator(store.accelerators(), "h10")


def test_kkb_facts_takes_a_spaced_name(tmp_path, monkeypatch):
    from kb_server.config import get_settings
    from kernelkb_cli import app

    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["facts", "h100 sxm", "memory", "bandwidth"])
    get_settings.cache_clear()
    assert result.exit_code == 0 and result.stdout.startswith("h100 memory_bandwidth = "), result.output


@pytest.mark.parametrize(("filters", "error", "named"), [
    (SearchFilters(vendor="intell"), UnknownVendorFilter, "known: amd, meta, nvidia"),
    (SearchFilters(kind="recipe"), UnknownKindFilter, "known:"),  # recipe reads as playbook; none is stored
    (SearchFilters(accelerator="h10"), UnknownAcceleratorFilter, "did you mean h100"),
])
def test_an_unknown_filter_value_is_refused_with_the_known_ones(seeded, filters, error, named):
    with pytest.raises(error, match=named):
        seeded.search("softmax", k=2, filters=filters)


def test_known_filters_still_search(seeded):
    hits = seeded.search("softmax", k=2, filters=SearchFilters(vendor="any", kind="guide", accelerator="H100 SXM"))
    assert hits and all(h.chunk.kind == "guide" for h in hits)


def test_http_refuses_an_unknown_vendor_and_defaults_the_backend(tmp_path, seeded):
    with make_client(tmp_path / "home", seeded) as client:
        client.headers["Authorization"] = f"Bearer {KEY}"
        bad = client.post("/v1/search", json={"query": "softmax", "filters": {"vendor": "intell"}})
        assert bad.status_code == 422 and bad.json()["field"] == "filters.vendor" and "nvidia" in bad.json()["known"]
        facts = client.get("/v1/facts", params={"accelerator": "H100 SXM", "q": "memory bandwidth"})
        assert facts.status_code == 200 and facts.json()["accelerator"] == "h100"
        prompt = client.post("/v1/prompt", json={"spec_source": kbdata.SPEC, "accelerator": "h100",
                                                 "token_budget": 3000})
        assert prompt.status_code == 200, prompt.text
        assert "triton" in prompt.json()["text"].lower()


def test_mcp_defaults_the_backend_and_names_a_bad_argument(kb_settings, seeded):
    from kb_server.api.settings import ServerSettings
    from kb_server.mcp_server import build_server

    server = build_server(ServerSettings(home=kb_settings.home))

    async def calls():
        prompt = await server.call_tool("build_prompt", {"spec_source": kbdata.SPEC, "accelerator": "H100 SXM",
                                                         "token_budget": 3000})
        with pytest.raises(ToolError) as bad:
            await server.call_tool("search", {"query": "x", "k": "many"})
        return prompt, str(bad.value)

    prompt, message = anyio.run(calls)
    assert not prompt.is_error
    assert "argument 'k'" in message and "'many'" in message
    assert "pydantic.dev" not in message and "\n" not in message
