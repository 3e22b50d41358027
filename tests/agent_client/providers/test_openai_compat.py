"""The OpenAI-compatible provider through the real openai SDK against a fake chat.completions server."""

from __future__ import annotations

import pytest

from agent_client.proposals import ProposalRequest, ProviderError
from agent_client.providers import get_provider
from tests.agent_client.agent_helpers import SPEC, client_settings
from tests.agent_client.candidate_sources import good
from tests.agent_client.fake_anthropic import Reply, text_with_code


def test_openai_needs_a_base_url(tmp_path):
    with pytest.raises(ProviderError, match="--base-url or OPENAI_BASE_URL"):
        get_provider("openai", client_settings(tmp_path, openai_base_url=None))


def test_chat_completions_by_base_url(fake_server, tmp_path):
    server = fake_server([Reply(status=429), text_with_code(good()), Reply(text="no code today")])
    settings = client_settings(tmp_path, retry_attempts=2)
    provider = get_provider("openai", settings, base_url=server.url + "/v1", model="tiny-coder")  # --base-url
    request = ProposalRequest(spec_path=SPEC, spec_source=SPEC.read_text(), backend="triton", accelerator="h200",
                              prompt="write it", parent=None, n=2, kb=None, system="be fast")
    first, second = provider.propose(request)
    assert "class ModelNew" in first.code and first.meta["model"] == "tiny-coder"
    assert second.code == "" and "malformed" in second.meta["error"]
    bodies = [r["body"] for r in server.requests]
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 3  # one 429 retried
    assert bodies[1]["messages"][0] == {"role": "system", "content": "be fast"}
