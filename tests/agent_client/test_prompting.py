"""Per-step prompts: knowledge from the KB, the parent's code and verdict, failures, the token budget."""

from __future__ import annotations

import pytest

from agent_client.prompting import PromptBuilder, bottleneck_queries, estimate_tokens
from agent_client.session.records import Node, fitness
from tests.agent_client.agent_helpers import SPEC


def evaluated(node_id: str, verdict: dict, code: str = "class ModelNew: pass\n") -> Node:
    fit, basis = fitness(verdict)
    return Node(id=node_id, step=0, parent_ids=[], kind="draft", code=code, response="", meta={},
                status="evaluated", verdict=verdict, fitness=fit, fitness_basis=basis, evaluated_at=1.0)


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        ({"status": "passed", "limit_kind": "memory", "fraction_of_limit": 0.8, "latency_ms": 0.5},
         "coalescing vectorised loads"),
        ({"status": "passed", "limit_kind": "compute", "fraction_of_limit": 0.9, "latency_ms": 2.0}, "tensor cores"),
        ({"status": "passed", "limit_kind": "memory", "fraction_of_limit": 0.3, "latency_ms": 0.5,
          "host_launch_ms": 0.1}, "occupancy"),
        ({"status": "passed", "limit_kind": "memory", "fraction_of_limit": 0.3, "latency_ms": 0.02,
          "host_launch_ms": 0.035}, "launch overhead"),
        ({"status": "wrong", "reasons": ["139 of 300 elements outside atol"]}, "139 of 300 elements"),
        ({"status": "compile_error", "reasons": ["unknown name"]}, "triton compile error"),
        ({"status": "timeout", "reasons": []}, "grid size"),
    ],
)
def test_bottleneck_queries(verdict, expected):
    assert any(expected in q for q in bottleneck_queries(verdict, "triton"))


def test_fitness_prefers_compile_and_falls_back_to_eager():
    assert fitness({"status": "passed", "speedup_vs_compile": 1.5, "speedup_vs_eager": 3.0}) == (1.5, "compile")
    assert fitness({"status": "passed", "speedup_vs_compile": None, "speedup_vs_eager": 0.5}) == (0.5, "eager")
    assert fitness({"status": "wrong", "speedup_vs_compile": 9.0}) == (0.0, None)


def test_expand_prompt_has_knowledge_parent_diagnostics_and_failures(kb):
    parent = evaluated("n0003", {"status": "passed", "speedup_vs_eager": 1.7, "speedup_vs_compile": 1.2,
                                 "limit_kind": "memory", "fraction_of_limit": 0.41, "latency_ms": 0.02,
                                 "host_launch_ms": 0.035, "reasons": [],
                                 "diagnostics": {"timing_method": "cuda_events"}},
                       code="# parent kernel\nclass ModelNew: pass\n")
    failures = [evaluated("n0001", {"status": "wrong", "reasons": ["3 of 300 elements outside atol"]}),
                evaluated("n0002", {"status": "compile_error", "reasons": ["NameError: tl.foo"]})]
    builder = PromptBuilder(kb, SPEC.read_text(), "h200", "triton", token_budget=3000, iteration_token_budget=1500)
    step = builder.build(parent=parent, failures=failures, best=parent)
    knowledge, iteration = step.text[: step.cache_prefix_chars], step.text[step.cache_prefix_chars:]
    assert "Target hardware: NVIDIA H200" in knowledge and "## Task" in knowledge
    assert step.bottleneck == "launch_bound"  # 0.035 ms of host time a call for 0.02 ms of GPU work
    assert step.extra_queries and "launch overhead" in step.extra_queries[0]
    assert "launch-bound" in iteration and "Target hardware" not in iteration
    assert step.sources["passages"] and step.sources["hardware_facts"]
    assert "# parent kernel" in iteration and "1.2x over torch.compile" in iteration
    assert "41% of the hardware limit" in iteration and "cuda_events" in iteration
    assert "host_launch_ms=0.035" in iteration  # the launch's host time, next to the GPU time
    assert "n0001 (wrong): 3 of 300 elements" in iteration and "n0002 (compile_error)" in iteration
    assert "write_back" not in step.system and "ModelNew" in step.system


def test_iteration_part_stays_within_its_budget(kb):
    huge = "# line of a very long kernel\n" * 2000
    parent = evaluated("n0000", {"status": "wrong", "reasons": ["x"]}, code=huge + "class ModelNew: pass\n")
    failures = [evaluated(f"n{i:04d}", {"status": "wrong", "reasons": [f"reason number {i} " * 20]})
                for i in range(1, 40)]
    builder = PromptBuilder(kb, SPEC.read_text(), "h200", "triton", token_budget=3000, iteration_token_budget=800)
    step = builder.build(parent=parent, failures=failures)
    iteration = step.text[step.cache_prefix_chars:]
    assert estimate_tokens(iteration) <= 1000  # the budget, plus the fixed head and answer blocks
    assert "trimmed to fit the prompt budget" in iteration


def test_memory_bound_parent_retrieves_for_memory(kb):
    parent = evaluated("n0004", {"status": "passed", "speedup_vs_eager": 1.1, "limit_kind": "memory",
                                 "fraction_of_limit": 0.85, "latency_ms": 0.4, "host_launch_ms": 0.05,
                                 "reasons": []})
    builder = PromptBuilder(kb, SPEC.read_text(), "h200", "triton", token_budget=3000)
    step = builder.build(parent=parent)
    assert step.bottleneck == "memory_bound" and "coalescing" in step.extra_queries[0]
    knowledge = step.text[: step.cache_prefix_chars]
    assert "memory bound" in knowledge  # a passage retrieved for the parent's memory bottleneck


def test_no_retrieval_prompts_hold_facts_and_task_but_no_passages(kb):
    builder = PromptBuilder(kb, SPEC.read_text(), "h200", "triton", token_budget=3000, retrieval=False)
    parent = evaluated("n0001", {"status": "passed", "limit_kind": "memory", "fraction_of_limit": 0.85,
                                 "latency_ms": 0.4})
    for step in (builder.build(), builder.build(parent=parent)):
        knowledge = step.text[: step.cache_prefix_chars]
        assert "Target hardware: NVIDIA H200" in knowledge and "## Task" in knowledge
        assert "retrieval is off" in knowledge and step.extra_queries == ()
        assert "passages" not in step.sources and "example_kernels" not in step.sources
