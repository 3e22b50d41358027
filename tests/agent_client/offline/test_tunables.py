"""The offline provider's walk over a kernel's tunable space (agent_client/offline/tunables.py)."""

from __future__ import annotations

import tracemalloc

from agent_client.offline.tunables import diverse_points, key


def test_small_space_is_listed_without_repeats():
    space = {"BLOCK": [256, 512, 1024], "num_warps": [2, 4, 8]}
    default = {"BLOCK": 512, "num_warps": 4}
    points = diverse_points(default, space, n=20)
    assert points[0] == default
    assert len(points) == 9  # the whole space, each point once
    assert len({key(p) for p in points}) == 9


def test_huge_space_is_sampled_in_little_memory():
    # 20 tunables of 6 values: 3.6e15 points, which a listed product could never hold
    space = {f"T{i}": list(range(6)) for i in range(20)}
    default = {name: 0 for name in space}
    tracemalloc.start()
    points = diverse_points(default, space, n=50, seed=3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 5 * 2**20
    assert points[0] == default and len(points) == 50
    assert len({key(p) for p in points}) == 50
    assert all(set(p) == set(space) and all(v in space[k] for k, v in p.items()) for p in points)
    assert diverse_points(default, space, n=50, seed=3) == points  # a seed gives the same walk


def test_keys_outside_the_space_keep_their_defaults():
    space = {f"T{i}": [0, 1, 2, 3, 4, 5, 6] for i in range(12)}
    default = {**{name: 0 for name in space}, "FIXED": "x"}
    assert all(p["FIXED"] == "x" for p in diverse_points(default, space, n=10))
