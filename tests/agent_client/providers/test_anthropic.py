"""The anthropic provider through the real SDK against a fake Messages API on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client.prompting import PromptBuilder
from agent_client.proposals import ProposalRequest, ProviderError
from agent_client.providers import get_provider
from tests.agent_client.agent_helpers import SPEC, client_settings
from tests.agent_client.candidate_sources import good
from tests.agent_client.fake_anthropic import Reply, text_with_code


def request_for(kb, n: int = 1) -> ProposalRequest:
    source = SPEC.read_text()
    step = PromptBuilder(kb, source, "h200", "triton", tools=True).build()
    return ProposalRequest(spec_path=SPEC, spec_source=source, backend="triton", accelerator="h200",
                           prompt=step.text, parent=None, n=n, kb=kb, system=step.system,
                           cache_prefix_chars=step.cache_prefix_chars)


def provider_for(server, tmp_path: Path, **overrides):
    return get_provider("anthropic", client_settings(tmp_path, server.url, **overrides))


def test_tool_loop_then_answer_with_cached_knowledge(kb, fake_server, tmp_path):
    server = fake_server([
        Reply(tool_uses=[{"name": "search_knowledge_base", "input": {"query": "relu memory bound", "k": 2}},
                         {"name": "hardware_facts", "input": {"accelerator": "h200"}}]),
        text_with_code(good(), "Masked loads, one pass."),
    ])
    [proposal] = provider_for(server, tmp_path).propose(request_for(kb))
    assert "class ModelNew" in proposal.code and "error" not in proposal.meta
    assert [c["name"] for c in proposal.meta["tool_calls"]] == ["search_knowledge_base", "hardware_facts"]
    first, second = server.messages()
    # the stable part (system + knowledge) is one cached prefix; the iteration part is the user turn
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "Target hardware" in first["system"][-1]["text"]
    assert "Target hardware" not in first["messages"][0]["content"]
    assert {t["name"] for t in first["tools"]} >= {"search_knowledge_base", "hardware_facts", "evaluate_candidate"}
    results = second["messages"][-1]["content"]
    assert [r["type"] for r in results] == ["tool_result", "tool_result"]
    assert "memory bound" in results[0]["content"]  # a real passage from the store
    assert "H200" in results[1]["content"] and not results[1]["is_error"]  # the real facts file
    assert proposal.meta["usage"]["cache_read_input_tokens"] > 0


def test_rate_limits_are_retried_by_our_loop(kb, fake_server, tmp_path):
    server = fake_server([Reply(status=429), Reply(status=529), text_with_code(good())])
    [proposal] = provider_for(server, tmp_path, retry_attempts=3).propose(request_for(kb))
    assert "class ModelNew" in proposal.code
    assert len(server.messages()) == 3


def test_rate_limits_are_retried_by_the_sdk_too(kb, fake_server, tmp_path):
    server = fake_server([Reply(status=429), text_with_code(good())])
    [proposal] = provider_for(server, tmp_path, sdk_max_retries=2, retry_attempts=0).propose(request_for(kb))
    assert proposal.code and len(server.messages()) == 2


def test_gives_up_after_its_bounded_retries(kb, fake_server, tmp_path):
    server = fake_server([Reply(status=429)])
    with pytest.raises(ProviderError, match="rate limited .HTTP 429.*gave up after 2 tries"):
        provider_for(server, tmp_path, retry_attempts=1).propose(request_for(kb))
    assert len(server.messages()) == 2


def test_malformed_reply_is_a_proposal_not_a_crash(kb, fake_server, tmp_path):
    server = fake_server([Reply(text="I would use a block size of 256 and vectorised loads.")])
    [proposal] = provider_for(server, tmp_path).propose(request_for(kb))
    assert proposal.code == "" and proposal.meta["error"].startswith("malformed reply")
    assert proposal.response_text.startswith("I would use")


def test_tool_loop_is_bounded(kb, fake_server, tmp_path):
    server = fake_server([Reply(tool_uses=[{"name": "search_kernels", "input": {"query": "relu"}}])])
    [proposal] = provider_for(server, tmp_path, tool_max_turns=3).propose(request_for(kb))
    bodies = server.messages()
    assert len(bodies) == 3
    assert bodies[-1]["tool_choice"] == {"type": "none"}  # the last turn asks for an answer
    assert proposal.code == "" and "malformed" in proposal.meta["error"]


def test_n_proposals_are_n_calls(kb, fake_server, tmp_path):
    server = fake_server([text_with_code(good(64)), text_with_code(good(256))])
    proposals = provider_for(server, tmp_path).propose(request_for(kb, n=2))
    assert ['"BLOCK": 64' in proposals[0].code, '"BLOCK": 256' in proposals[1].code] == [True, True]
