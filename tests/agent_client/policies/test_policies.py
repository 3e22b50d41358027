"""Selection policies on synthetic search graphs: greedy best-first, UCT, evolutionary islands."""

from __future__ import annotations

from collections import Counter

import pytest

from agent_client.policies import GreedyPolicy, IslandPolicy, UCTPolicy, get_policy
from agent_client.session.records import Node


def node(i: int, fitness: float, parents: tuple[str, ...] = (), status: str = "passed") -> Node:
    verdict = {"status": status, "reasons": [] if status == "passed" else ["broken"]}
    return Node(id=f"n{i:04d}", step=i, parent_ids=list(parents), kind="expand" if parents else "draft",
                code=f"# candidate {i}", response="", meta={}, status="evaluated", verdict=verdict,
                fitness=fitness if status == "passed" else 0.0, evaluated_at=float(i))


def test_registry_names_and_bad_name():
    assert {"greedy", "uct", "evolutionary"} <= {get_policy(n).name for n in ("greedy", "uct", "evolutionary")}
    with pytest.raises(ValueError, match="unknown policy 'best'"):
        get_policy("best")
    with pytest.raises(ValueError, match="bad options"):
        get_policy("greedy", nonsense=1)


def test_greedy_expands_the_fittest_until_it_is_used_up():
    nodes = [node(0, 1.2), node(1, 2.5), node(2, 0.0, status="wrong")]
    policy = GreedyPolicy(max_expansions=2)
    assert [policy.select(nodes).id for _ in range(3)] == ["n0001", "n0001", "n0000"]


def test_greedy_without_a_passing_node_fixes_or_drafts():
    nodes = [node(0, 0, status="wrong"), node(1, 0, status="compile_error")]
    picks = [GreedyPolicy(seed=s, debug_prob=0.5).select(nodes) for s in range(40)]
    fixes = [p for p in picks if p is not None]
    assert fixes and len(fixes) < len(picks)  # both fixes and fresh drafts happen
    assert {p.id for p in fixes} == {"n0001"}  # the most recent failure is the one to fix
    assert GreedyPolicy(debug_prob=0.0).select(nodes) is None


def test_greedy_restore_counts_previous_expansions():
    nodes = [node(0, 3.0), node(1, 1.0)]
    policy = GreedyPolicy(max_expansions=1)
    policy.restore(["n0000", None])  # a resumed session had already expanded n0000 once
    assert policy.select(nodes).id == "n0001"


def test_uct_prefers_the_best_subtree_then_explores():
    # n0 (1.0) has a child at 3.0; n1 (1.1) is a leaf. Max backup makes n0's subtree the best.
    nodes = [node(0, 1.0), node(1, 1.1), node(2, 3.0, parents=("n0000",))]
    policy = UCTPolicy(c=0.1)
    first = policy.select(nodes)
    assert first.id in {"n0002", "n0000"}
    assert first.id == "n0002"  # the best node itself, with one visit, scores highest at low c
    # with a huge exploration weight, the least visited arm wins: a fresh draft (3 drafts vs 1 visit each)
    seen = Counter()
    explorer = UCTPolicy(c=50.0)
    for _ in range(6):
        pick = explorer.select(nodes)
        seen[pick.id if pick else "draft"] += 1
    assert len(seen) >= 3  # repeated picks spread over several arms


def test_uct_skips_malformed_nodes():
    malformed = node(0, 0, status="malformed")
    malformed.code = ""
    assert UCTPolicy().select([malformed]) is None


def test_islands_keep_lineages_apart_and_migrate():
    policy = IslandPolicy(seed=0, islands=2, tournament=2, migrate_every=4)
    drafts = [node(0, 1.0), node(1, 2.0)]  # dealt to islands 0 and 1
    for n in drafts:
        policy.observe(n)
    assert policy.island_of == {"n0000": 0, "n0001": 1}
    picks = [policy.select(drafts) for _ in range(2)]
    assert [p.id for p in picks] == ["n0000", "n0001"]  # each island selects from its own members
    child = node(2, 1.5, parents=("n0000",))
    policy.observe(child)
    assert policy.island_of["n0002"] == 0  # children live on their parent's island
    nodes = [*drafts, child]
    assert "n0002" not in policy.members[1]
    for _ in range(2):  # the 4th selection migrates each island's best to the next island (a ring)
        policy.select(nodes)
    assert "n0002" in policy.members[1]  # island 0's best (1.5x) now also lives on island 1
    assert "n0001" in policy.members[0]  # and island 1's best on island 0


def test_islands_ask_for_a_draft_when_an_island_has_no_passing_node():
    policy = IslandPolicy(islands=2)
    broken = node(0, 0, status="wrong")
    policy.observe(broken)
    assert policy.select([broken]) is None
