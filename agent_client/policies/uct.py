"""UCT over the search tree: value is the best fitness in a node's subtree, visits its size.

Usage: UCTPolicy(seed=0, c=1.0, draft_value=None)

Each evaluated node is an arm; its value is the best fitness found in its subtree (max backup,
since one fast kernel is the goal, not an average one), normalised by the best fitness so far; its
visit count is 1 + its descendants + the times it was chosen. A virtual root arm stands for a
fresh draft, valued by the best draft fitness. Score = value + c * sqrt(ln(total) / visits).
"""

from __future__ import annotations

import math

from agent_client.policies.base import PolicyBase, children_of
from agent_client.session.records import Node


class UCTPolicy(PolicyBase):
    name = "uct"

    def __init__(self, seed: int = 0, c: float = 1.0):
        super().__init__(seed)
        self.c = c  # exploration weight

    def select(self, nodes: list[Node]) -> Node | None:
        if not nodes:
            return None
        kids = children_of(nodes)
        best_all = max((n.fitness for n in nodes), default=0.0) or 1.0
        subtree_best: dict[str, float] = {}
        subtree_size: dict[str, int] = {}

        def walk(node: Node) -> tuple[float, int]:
            if node.id not in subtree_best:
                best, size = node.fitness, 1
                for child in kids.get(node.id, []):
                    b, s = walk(child)
                    best, size = max(best, b), size + s
                subtree_best[node.id], subtree_size[node.id] = best, size
            return subtree_best[node.id], subtree_size[node.id]

        total = len(nodes) + sum(self.expansions.values()) + 1
        drafts = [n for n in nodes if not n.parent_ids]
        draft_value = max((n.fitness for n in drafts), default=0.0) / best_all
        draft_score = draft_value + self.c * math.sqrt(math.log(total) / (len(drafts) + 1))
        scored: list[tuple[float, str, Node]] = []
        for node in nodes:
            if not node.code:  # malformed: nothing to refine
                continue
            best, size = walk(node)
            visits = size + self.expansions[node.id]
            score = best / best_all + self.c * math.sqrt(math.log(total) / visits)
            scored.append((score, node.id, node))
        if not scored:
            return None
        scored.sort(key=lambda t: (-t[0], t[1]))
        if draft_score > scored[0][0]:
            return None
        return self.chosen(scored[0][2])
