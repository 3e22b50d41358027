"""The replay provider: a recorded session's responses, step by step, through a new session."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent_client.proposals import ProposalRequest, ProviderError
from agent_client.providers import get_provider
from agent_client.runner import new_config, run_session
from agent_client.session.store import SessionStore
from tests.agent_client.agent_helpers import FAST_EVAL, SPEC


def test_replay_returns_the_recorded_proposals_per_step(tuned_session):
    settings = tuned_session["settings"]
    provider = get_provider("replay", settings, source="relu-one")
    store = SessionStore.open(tuned_session["folder"])
    nodes = store.nodes()
    store.close()
    for node in nodes:
        request = ProposalRequest(spec_path=SPEC, spec_source="", backend="triton", accelerator="h200",
                                  prompt="", parent=None, n=1, kb=None, step=node.step)
        [proposal] = provider.propose(request)
        assert (proposal.code, proposal.response_text) == (node.code, node.response)
        assert proposal.meta["replayed_from"] == "relu-one"
    beyond = ProposalRequest(spec_path=SPEC, spec_source="", backend="triton", accelerator="h200", prompt="",
                             parent=None, n=1, kb=None, step=99)
    assert provider.propose(beyond) == []  # the recording ran out


def test_replay_session_reproduces_the_first_steps(tuned_session, kb):
    settings = tuned_session["settings"]
    config = new_config(SPEC, settings, session_id="relu-replay", eval_overrides=FAST_EVAL, budget=2, device="cpu",
                        provider="replay", provider_options={"source": "relu-one"}, drafts=2,
                        proposals_per_step=1, write_back=False)
    result = run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=False)
    store = SessionStore.open(settings.sessions_dir / "relu-replay")
    replayed = [(n.code, n.outcome) for n in store.nodes()]
    store.close()
    original = SessionStore.open(tuned_session["folder"])
    recorded = [(n.code, n.outcome) for n in original.nodes()[:2]]
    original.close()
    assert result.nodes == 2 and replayed == recorded  # same candidates, same verdict classes


def test_replay_names_a_missing_recording(tmp_path):
    from tests.agent_client.agent_helpers import client_settings

    with pytest.raises(ProviderError, match="no recorded session 'ghost'"):
        get_provider("replay", client_settings(tmp_path), source="ghost")


def test_the_same_session_without_retrieval_records_what_its_prompts_lacked(tuned_session, kb):
    settings = tuned_session["settings"]
    config = new_config(SPEC, settings, session_id="relu-no-retrieval", eval_overrides=FAST_EVAL, budget=2,
                        device="cpu", provider="replay", provider_options={"source": "relu-one"}, drafts=2,
                        proposals_per_step=1, write_back=False, retrieval=False)
    run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=True)
    folder = settings.sessions_dir / "relu-no-retrieval"
    store = SessionStore.open(folder)
    requests = store.requests()
    store.close()
    assert requests and all("retrieval is off" in r["prompt"] for r in requests)
    assert all(set(r["sources"]) == {"hardware_facts"} for r in requests)  # facts only
    page = (folder / "report.html").read_text()
    assert "retrieval: off" in page and 'data-section="passages"' not in page


def test_a_session_records_and_reports_the_sources_of_its_prompts(tuned_session):
    store = SessionStore.open(tuned_session["folder"])
    requests = store.requests()
    store.close()
    used = {s for r in requests for s in r["sources"].get("passages", [])}
    assert "tests/relu-memory.md" in used  # a passage of the test store, retrieved for the relu spec
    page = (tuned_session["folder"] / "report.html").read_text()
    assert "retrieval: on" in page and 'data-section="passages"' in page and "tests/relu-memory.md" in page
