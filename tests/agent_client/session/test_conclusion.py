"""A session's conclusion never presents a winner slower than torch.compile, and gives both timings."""

from __future__ import annotations

from agent_client.session.records import Node, conclusion


def _node(fitness, basis, latency, compile_ms=None, eager_ms=None, meta=None) -> Node:
    verdict = {"status": "passed", "latency_ms": latency, "compile_ms": compile_ms, "eager_ms": eager_ms}
    return Node(id="n0003", step=1, parent_ids=[], kind="draft", code="", response="", meta=meta or {},
                status="evaluated", verdict=verdict, fitness=fitness, fitness_basis=basis)


def test_a_faster_winner_is_recommended_with_both_timings():
    text = conclusion(_node(1.25, "compile", 0.8, compile_ms=1.0), [])
    assert "use it" in text and "0.8 ms" in text and "1 ms" in text


def test_a_slower_best_says_keep_torch_compile():
    text = conclusion(_node(0.9, "compile", 1.1, compile_ms=0.99), [])
    assert text.startswith("torch.compile is faster") and "0.99 ms" in text and "1.1 ms" in text


def test_without_a_compile_baseline_nothing_is_claimed_against_it():
    text = conclusion(_node(2.0, "eager", 1.0, eager_ms=2.0), [])
    assert "nothing is claimed" in text


def test_no_passing_candidate_and_a_lowering_only_spec_say_so():
    meta = {"general_lowering_only": True, "unserved": ["library: no op family matches [conv2d]"]}
    text = conclusion(None, [_node(0.0, None, None, meta=meta)])
    assert text.startswith("No candidate passed") and "general lowering alone" in text and "conv2d" in text


def test_the_route_of_the_best_is_named():
    text = conclusion(_node(0.8, "compile", 1.25, compile_ms=1.0, meta={"route_id": "library:softmax_rows_triton"}), [])
    assert "route library:softmax_rows_triton" in text and text.startswith("torch.compile is faster")
