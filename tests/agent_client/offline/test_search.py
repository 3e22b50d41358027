"""Where the offline search goes next (agent_client/offline/search.py): roles, plans, standings, the stop."""

from __future__ import annotations

import pytest

from agent_client.offline.search import (
    AT_LIMIT,
    at_limit,
    combined_moves,
    expansion_plan,
    is_behind,
    role,
    standings,
)
from agent_client.proposals import NodeView

# a row kernel's space: one structural choice, a split factor, a block size, warps, a cache hint
SPACE = {"WIDE_STRATEGY": ["looped", "coop"], "PROGRAMS_PER_SM": [1, 2, 4], "BLOCK_LOOP": [2048, 4096, 8192],
         "num_warps_loop": [8, 16, 32], "EVICT_LOOP": [False, True], "num_stages": [2, 3, 4],
         "FP32_PRECISION": ["tf32x3", "ieee"]}
POINT = {"WIDE_STRATEGY": "looped", "PROGRAMS_PER_SM": 1, "BLOCK_LOOP": 4096, "num_warps_loop": 16,
         "EVICT_LOOP": True, "num_stages": 3, "FP32_PRECISION": "tf32x3"}


@pytest.mark.parametrize("name, allowed, expected", [
    ("WIDE_STRATEGY", ["looped", "coop"], "structure"),
    ("FP32_PERSISTENT_TMA", [False, True], "structure"),
    ("SPLIT_R", [1, 2, 4], "split"),
    ("COOP_PROGRAMS_PER_SM", [1, 2], "split"),
    ("_p0k0_gemm_BLOCK_M", [64, 128], "tile"),  # the lowering's names: kernel, then key
    ("_p0k0_reduction_RBLOCK", [1024, 2048], "block"),
    ("num_warps_loop", [8, 16], "warps"),
    ("HOPPER_STAGES_D128", [2, 3], "stages"),
    ("_p0k0_gemm_PREC", ["ieee", "tf32x3"], "precision"),
    ("EVICT_COL", ["", "evict_first"], "cache"),
    ("MYSTERY", ["a", "b"], "structure"),  # a choice among named forms
    ("MYSTERY", [1, 2], "other"),
])
def test_roles_from_names_and_values(name, allowed, expected):
    assert role(name, allowed) == expected


def test_every_planned_point_moves_a_declared_tunable_and_never_the_parent():
    plan = expansion_plan(POINT, SPACE, {"limit_kind": "memory", "fraction_of_limit": 0.7})
    assert plan
    for p in plan:
        assert p != POINT and set(p) == set(POINT)
        assert all(p[k] in SPACE[k] for k in p)


def test_memory_bound_moves_structure_split_block_and_warps_before_precision():
    plan = expansion_plan(POINT, SPACE, {"limit_kind": "memory", "fraction_of_limit": 0.7})
    first = [next(k for k in p if p[k] != POINT[k]) for p in plan[:4]]
    assert first == ["WIDE_STRATEGY", "PROGRAMS_PER_SM", "BLOCK_LOOP", "num_warps_loop"]


def test_compute_bound_moves_stages_and_precision_before_warps():
    plan = expansion_plan(POINT, SPACE, {"limit_kind": "compute", "fraction_of_limit": 0.7})
    first = [next(k for k in p if p[k] != POINT[k]) for p in plan[:4]]
    assert first == ["WIDE_STRATEGY", "num_stages", "FP32_PRECISION", "PROGRAMS_PER_SM"]


def test_far_from_the_limit_the_plan_jumps_near_it_steps():
    space = {"BLOCK": [256, 512, 1024, 2048, 4096]}
    far = expansion_plan({"BLOCK": 1024}, space, {"limit_kind": "memory", "fraction_of_limit": 0.2}, combos=0)
    near = expansion_plan({"BLOCK": 1024}, space, {"limit_kind": "memory", "fraction_of_limit": 0.8},
                          combos=0)
    assert [p["BLOCK"] for p in far] == [512, 2048, 256, 4096]
    assert [p["BLOCK"] for p in near] == [512, 2048]


def test_tunables_the_path_does_not_read_are_left_alone():
    relevant = {"BLOCK_LOOP", "num_warps_loop"}
    plan = expansion_plan(POINT, SPACE, {"limit_kind": "memory", "fraction_of_limit": 0.3}, relevant=relevant)
    assert plan
    for p in plan:
        moved = {k for k in p if p[k] != POINT[k]}
        assert moved and moved <= relevant


def _node(node_id, route, fitness, fraction=None, status="passed"):
    verdict = {"status": status, "fraction_of_limit": fraction, "limit_kind": "memory"}
    return NodeView(node_id, "code", verdict, {}, {"route_id": route}, fitness)


def test_a_route_far_behind_the_leader_is_behind():
    history = [_node("n1", "lowering", 0.5), _node("n2", "library:softmax", 2.0),
               _node("n3", "lowering", 0.6)]
    table = standings(history)
    assert table["lowering"].best_fitness == 0.6 and table["lowering"].evaluated == 2
    assert table["library:softmax"].best_node_id == "n2"
    assert is_behind("lowering", table) and not is_behind("library:softmax", table)
    close = standings([_node("n1", "lowering", 1.8), _node("n2", "library:softmax", 2.0)])
    assert not is_behind("lowering", close)  # within BEHIND of the leader: it keeps competing


def test_the_search_is_done_at_the_limit():
    assert at_limit([_node("n1", "lowering", 1.0, 0.5)]) is None
    found = at_limit([_node("n1", "lowering", 1.0, AT_LIMIT - 0.01), _node("n2", "x", 1.1, AT_LIMIT)])
    assert found.node_id == "n2"
    assert at_limit([_node("n3", "x", 0.0, 0.99, status="wrong")]) is None  # only a passing candidate counts


def test_moves_that_each_beat_the_parent_are_tried_together():
    parent = NodeView("n1", "code", {"status": "passed"}, dict(POINT), {"route_id": "r"}, 1.0)

    def child(node_id, fitness, **moved):
        return NodeView(node_id, "code", {"status": "passed"}, {**POINT, **moved},
                        {"route_id": "r", "expanded_from": "n1"}, fitness)

    history = [parent, child("n2", 1.2, BLOCK_LOOP=8192), child("n3", 0.9, num_warps_loop=8),
               child("n4", 1.1, PROGRAMS_PER_SM=2), child("n5", 1.3, BLOCK_LOOP=2048)]
    # n5 and n2 move the same tunable: only the better one counts; n3 lost
    assert combined_moves(POINT, parent, history) == [{**POINT, "BLOCK_LOOP": 2048, "PROGRAMS_PER_SM": 2}]
    assert combined_moves(POINT, parent, history[:3]) == []  # one winning move: nothing to combine
