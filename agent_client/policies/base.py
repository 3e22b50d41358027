"""The policy interface and the counts every policy shares.

Usage: class MyPolicy(PolicyBase): def select(self, nodes): ...
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Protocol

from agent_client.session.records import Node


class Policy(Protocol):
    name: str
    waits_for_drafts: bool

    def observe(self, node: Node) -> None:
        """Called once per node when it is evaluated (or recorded as malformed)."""

    def select(self, nodes: list[Node]) -> Node | None:
        """The node to expand next among `nodes` (evaluated ones), or None to ask for a new draft."""


class PolicyBase:
    name = "base"
    # True: while a draft is being evaluated, a None from select means "wait for it", not "draft again"
    waits_for_drafts = False

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.expansions: Counter[str] = Counter()  # node id -> times chosen as a parent

    def observe(self, node: Node) -> None:
        """Policies that keep per-node state (islands) override this."""

    def restore(self, parent_ids: list[str | None]) -> None:
        """Rebuild the expansion counts of a resumed session from its recorded requests."""
        for parent_id in parent_ids:
            if parent_id:
                self.expansions[parent_id] += 1

    def chosen(self, node: Node | None) -> Node | None:
        if node is not None:
            self.expansions[node.id] += 1
        return node


def children_of(nodes: list[Node]) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for node in nodes:
        for parent in node.parent_ids:
            out.setdefault(parent, []).append(node)
    return out
