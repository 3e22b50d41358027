"""The KnowledgeBase interface: LocalKB over the embedded store, HttpKB over a real `kkb serve` process."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent_client.kb import HttpKB, KnowledgeBase, LocalKB, UnknownAcceleratorError
from agent_client.runner import new_config, run_session
from kb_server.schemas import KernelRecord
from tests.agent_client.agent_helpers import REPO, SPEC, client_settings
from tests.agent_client.fake_anthropic import FakeModelServer, Reply
from tests.kb_server.serverproc import start_server


def test_local_kb_speaks_the_protocol(kb):
    assert isinstance(kb, KnowledgeBase) and isinstance(kb, LocalKB)
    assert kb.accelerator("h200").name.startswith("NVIDIA H200")
    assert any("memory bound" in h.chunk.text for h in kb.search("pointwise memory bound", k=3))
    with pytest.raises(UnknownAcceleratorError, match="'h999' is not in the knowledge base"):
        kb.accelerator("h999")


@pytest.mark.slow
def test_session_over_http_kb(tmp_path):
    server = start_server(tmp_path / "kb_home", corpus_dir=REPO / "corpus")
    model = FakeModelServer([Reply(text="no code")]).start()
    try:
        settings = client_settings(tmp_path / "client_home", model.url)
        config = new_config(SPEC, settings, session_id="over-http", budget=1, device="cpu", provider="anthropic",
                            drafts=1, proposals_per_step=1, kb_url=server.base_url)
        result = run_session(config, settings, console=Console(file=io.StringIO()), live=False, report=False)
        assert result.nodes == 1
        # the prompt's knowledge came over HTTP: facts rendered by the server's prompt builder
        assert "Target hardware: NVIDIA H200" in model.messages()[0]["system"][-1]["text"]
        kb = HttpKB.from_url(server.base_url)
        assert isinstance(kb, KnowledgeBase) and kb.accelerator("h200").id == "h200"
        record = KernelRecord(id="tuned-http", name="relu over http", op_family="pointwise",
                              op_signature="relu(in0)", backend="triton", source="class ModelNew: pass\n")
        assert kb.add_kernel(record) == "tuned-http"
        assert [k.id for k in kb.kernels(op_family="pointwise")] == ["tuned-http"]
    finally:
        model.stop()
        server.stop()
