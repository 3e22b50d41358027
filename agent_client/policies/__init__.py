"""Selection policies: which evaluated node the search expands next.

Usage: policy = get_policy("uct", seed=0, c=1.0)
       parent = policy.select(evaluated_nodes)     # a Node to expand, or None for a fresh draft

A policy sees only evaluated nodes (status evaluated or malformed) and keeps no state that cannot
be rebuilt from them: a resumed session builds a new policy and replays `observe` over its nodes.
"""

from __future__ import annotations

from typing import Any

from agent_client.policies.base import Policy
from agent_client.policies.evolutionary import IslandPolicy
from agent_client.policies.greedy import GreedyPolicy
from agent_client.policies.uct import UCTPolicy

POLICIES: dict[str, type] = {"greedy": GreedyPolicy, "uct": UCTPolicy, "evolutionary": IslandPolicy}

__all__ = ["POLICIES", "GreedyPolicy", "IslandPolicy", "Policy", "UCTPolicy", "get_policy"]


def get_policy(name: str, seed: int = 0, **options: Any) -> Policy:
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; choose one of {sorted(POLICIES)}")
    try:
        return POLICIES[name](seed=seed, **options)
    except TypeError as exc:
        raise ValueError(f"bad options {options} for policy {name!r}: {exc}") from exc
