"""Stop conditions: time budget, stalled progress, target speedup; and a provider that keeps failing."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent_client.providers import get_provider
from agent_client.runner import new_config, run_session
from tests.agent_client.agent_helpers import FAST_EVAL, SPEC, client_settings
from tests.agent_client.candidate_sources import good
from tests.agent_client.fake_anthropic import FakeModelServer, Reply, text_with_code


def session(tmp_path, kb, script, session_id, **fields):
    server = FakeModelServer(script).start()
    try:
        settings = client_settings(tmp_path, server.url, retry_attempts=0)
        defaults = {"budget": 10, "device": "cpu", "provider": "anthropic", "drafts": 2, "proposals_per_step": 1,
                    "write_back": False}
        config = new_config(SPEC, settings, session_id=session_id, eval_overrides=FAST_EVAL, **{**defaults, **fields})
        return run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=False)
    finally:
        server.stop()


def test_time_budget(kb, tmp_path):
    result = session(tmp_path, kb, [Reply(text="thinking")], "t", time_budget_s=0.0)
    assert result.stop_reason == "time" and result.nodes == 0


def test_stalled_progress(kb, tmp_path):
    result = session(tmp_path, kb, [Reply(text="still thinking")], "s", stall_nodes=3)
    assert result.stop_reason == "stalled" and result.nodes == 3  # three malformed replies, no progress


def test_target_speedup(kb, tmp_path):
    result = session(tmp_path, kb, [text_with_code(good())], "g", target_speedup=1e-9, drafts=1)
    assert result.stop_reason == "target" and result.best_fitness > 0 and result.nodes <= 3


def test_an_endpoint_that_fails_after_its_retries_stops_the_session_at_once(kb, tmp_path):
    server = FakeModelServer([Reply(status=529)]).start()
    try:
        settings = client_settings(tmp_path, server.url, retry_attempts=0)
        config = new_config(SPEC, settings, session_id="f", eval_overrides=FAST_EVAL, budget=10, device="cpu",
                            provider="anthropic", write_back=False)
        result = run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=False)
    finally:
        server.stop()
    assert result.stop_reason == "provider_failed" and result.nodes == 0 and result.candidates == 0
    assert len(server.requests) == 1  # its retries were the provider's: the session does not ask again
    assert result.stop_text.startswith("the provider failed: provider anthropic (model ")
    assert "overloaded (HTTP 529" in result.stop_text and result.provider_error in result.stop_text


def test_replies_without_code_are_no_candidates(kb, tmp_path):
    result = session(tmp_path, kb, [Reply(text="I would fuse the bias into the activation.")], "m", budget=2,
                     drafts=2)
    assert result.stop_reason == "budget" and result.nodes == 2 and result.candidates == 0
    assert result.stop_text == "the candidate budget (--budget) was spent" and result.provider_error is None


def test_offline_is_registered(tmp_path):
    provider = get_provider("offline", client_settings(tmp_path))
    assert provider.name == "offline"


@pytest.mark.parametrize("policy", ["uct", "evolutionary"])
def test_each_policy_drives_a_session(kb, tmp_path, policy):
    blocks = iter([32, 64, 128, 256, 512, 1024, 16, 8])
    script = lambda body, index: text_with_code(good(next(blocks)))
    # two islands for two drafts: with a third, empty island the policy asks for more drafts whenever a
    # draft is still being evaluated, and whether an expansion fits in 4 nodes would depend on timing
    options = {"islands": 2} if policy == "evolutionary" else {}
    result = session(tmp_path, kb, script, f"p-{policy}", policy=policy, budget=4, drafts=2, policy_options=options)
    assert result.stop_reason == "budget" and result.nodes == 4 and result.best_fitness > 0
    from agent_client.session.store import SessionStore

    store = SessionStore.open(tmp_path / "sessions" / f"p-{policy}")
    kinds = [n.kind for n in store.nodes()]
    store.close()
    assert kinds[:2] == ["draft", "draft"] and "expand" in kinds[2:]


def test_time_budget_counts_over_a_resume(kb, tmp_path):
    """The time budget is the session's: a resumed run gets what earlier runs left, not a fresh budget."""
    from agent_client.runner import resume_session
    from agent_client.session.store import SessionStore

    first = session(tmp_path, kb, [Reply(text="thinking")], "tb", budget=1000, time_budget_s=1.5)
    assert first.stop_reason == "time"
    folder = client_settings(tmp_path).sessions_dir / "tb"
    store = SessionStore.open(folder)
    spent = store.spent_s()
    store.close()
    assert spent >= 1.5  # the first run's wall time is on record
    nodes_before = first.nodes
    server = FakeModelServer([Reply(text="thinking")]).start()
    try:
        settings = client_settings(tmp_path, server.url, retry_attempts=0)
        again = resume_session("tb", settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=False)
    finally:
        server.stop()
    assert again.stop_reason == "time" and again.nodes == nodes_before
    assert server.requests == []  # nothing new was asked for (a fresh budget would have asked the model)
