"""Greedy best-first: expand the fittest node that has not been expanded too often.

Usage: GreedyPolicy(seed=0, max_expansions=3, debug_prob=0.5)

With no passing node yet, it asks for a fix of a recent failure (with probability debug_prob)
or a fresh draft: failures carry reasons worth feeding back, but a run of broken drafts should
not trap the search.
"""

from __future__ import annotations

from agent_client.policies.base import PolicyBase
from agent_client.session.records import Node


class GreedyPolicy(PolicyBase):
    name = "greedy"

    def __init__(self, seed: int = 0, max_expansions: int = 3, debug_prob: float = 0.5):
        super().__init__(seed)
        self.max_expansions = max_expansions  # how often one node may be a parent
        self.debug_prob = debug_prob  # chance of fixing a failure rather than drafting afresh

    def select(self, nodes: list[Node]) -> Node | None:
        open_nodes = [n for n in nodes if self.expansions[n.id] < self.max_expansions]
        passing = sorted((n for n in open_nodes if n.fitness > 0), key=lambda n: (-n.fitness, n.id))
        if passing:
            return self.chosen(passing[0])
        failed = [n for n in open_nodes if n.fitness <= 0 and n.code]
        if failed and self.rng.random() < self.debug_prob:
            return self.chosen(failed[-1])
        return None
