"""A whole tuning session: fake model server, real SDK, real store, real CPU harness, write-back."""

from __future__ import annotations

import io
from collections import Counter

from rich.console import Console

from agent_client.runner import new_config, run_session
from agent_client.session.store import SessionStore
from tests.agent_client.agent_helpers import SPEC, client_settings
from tests.agent_client.fake_anthropic import FakeModelServer, Reply


def test_session_runs_the_loop(tuned_session):
    result = tuned_session["result"]
    assert result.stop_reason == "budget" and result.nodes == 5 and result.evaluated == 5
    store = SessionStore.open(tuned_session["folder"])
    nodes = {n.id: n for n in store.nodes()}
    outcomes = Counter(n.outcome for n in nodes.values())
    assert outcomes["passed"] == 2 and outcomes["malformed"] == 1 and outcomes["wrong"] == 1, \
        {n.id: (n.outcome, (n.verdict or {}).get("reasons")) for n in nodes.values()}
    assert outcomes["compile_error"] + outcomes["runtime_error"] == 1  # the interpreter fails at launch
    # fitness: speedup vs eager, since the compile baseline is skipped on CPU (and said so)
    best = nodes[result.best_node_id]
    assert best.outcome == "passed" and best.fitness_basis == "eager" and result.fitness_basis == "eager"
    assert best.fitness == best.verdict["speedup_vs_eager"] > 0
    assert all(n.fitness == 0 for n in nodes.values() if n.outcome != "passed")
    # the draft phase, then expansions of the best node with its code and verdict in the prompt
    assert [n.kind for n in nodes.values()] == ["draft", "draft", "draft", "expand", "expand"]
    assert nodes["n0003"].parent_ids == ["n0000"]
    requests = store.requests()
    # generation overlaps evaluation: the provider was asked again while n0000 was still being judged
    assert requests[1]["created_at"] < nodes["n0000"].evaluated_at
    expand = requests[3]
    assert expand["kind"] == "expand" and expand["parent_id"] == "n0000"
    assert '"BLOCK": 128' in expand["prompt"] and "Harness verdict of n0000" in expand["prompt"]
    assert "Target hardware: NVIDIA H200" in expand["prompt"][: expand["cache_prefix_chars"]]
    last = requests[-1]["prompt"]
    assert "Failed attempts so far" in last and "n0001 (malformed)" in last and "n0002 (wrong)" in last
    # every evaluated node has exactly one evaluation row; malformed ones have none
    evaluated = Counter(e["node_id"] for e in store.evaluations())
    assert evaluated == {i: 1 for i, n in nodes.items() if n.outcome != "malformed"}
    store.close()


def test_provider_saw_tools_retries_and_cache(tuned_session):
    bodies = tuned_session["server"].messages()
    assert len(bodies) == 7  # one 429 retried, one tool round trip
    tool_result = bodies[4]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and '"status": "wrong"' in tool_result["content"]
    assert all(b["system"][-1].get("cache_control") == {"type": "ephemeral"} for b in bodies)


def test_live_lines_show_progress(tuned_session):
    text = tuned_session["console"]
    assert "n0000 passed" in text and "n0001 malformed" in text and "stopped: the candidate budget (--budget) was spent" in text


def test_winner_is_written_back_and_seen_by_the_next_session(tuned_session, kb, tmp_path):
    result = tuned_session["result"]
    [kernel_id] = result.written_kernels
    record = next(k for k in kb.kernels(backend="triton") if k.id == kernel_id)
    store = SessionStore.open(tuned_session["folder"])
    best = next(n for n in store.nodes() if n.id == result.best_node_id)
    store.close()
    assert record.source == best.code and "class ModelNew" in record.source
    assert record.measurements[0].accelerator == "cpu-interpreter"
    assert record.measurements[0].speedup_vs_eager == result.best_speedup_vs_eager
    assert record.op_family and record.op_signature  # from the spec's traced signature
    # the next session's first prompt carries the kernel among the library's nearest winners
    server = FakeModelServer([Reply(text="nothing this time")]).start()
    try:
        settings = client_settings(tmp_path, server.url)
        config = new_config(SPEC, settings, session_id="relu-two", eval_overrides={}, budget=1, device="cpu",
                            provider="anthropic", drafts=1, proposals_per_step=1)
        second = run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb)
    finally:
        server.stop()
    assert second.nodes == 1 and second.best_node_id is None
    first_prompt = server.messages()[0]["system"][-1]["text"]
    assert record.name in first_prompt
    assert best.code.strip() in first_prompt
