"""Evolutionary search with islands: tournament selection inside an island, ring migration.

Usage: IslandPolicy(seed=0, islands=3, tournament=3, migrate_every=6)

Drafts are dealt to islands in turn and children live on their parent's island, so separate
lineages evolve apart (diversity); every `migrate_every` selections the best node of each island
is copied to the next one (ring), so a good idea spreads without taking over at once. An island
with no passing node asks for a draft, which then joins that island; while a draft is still being
evaluated the loop waits for it instead (it joins the island that asked), so how fast the harness runs
does not change how many drafts a session spends.
"""

from __future__ import annotations

from agent_client.policies.base import PolicyBase
from agent_client.session.records import Node


class IslandPolicy(PolicyBase):
    name = "evolutionary"
    # a draft in flight joins the island that asks next for one: drafting again would give it two
    waits_for_drafts = True

    def __init__(self, seed: int = 0, islands: int = 3, tournament: int = 3, migrate_every: int = 6):
        super().__init__(seed)
        if islands < 1 or tournament < 1:
            raise ValueError("islands and tournament must be at least 1")
        self.n_islands = islands
        self.tournament = tournament  # nodes drawn per tournament
        self.migrate_every = migrate_every  # selections between migrations
        self.island_of: dict[str, int] = {}  # node id -> home island
        self.members: list[set[str]] = [set() for _ in range(islands)]
        self._next_draft_island = 0
        self._turn = 0  # whose island selects next
        self._selections = 0

    def observe(self, node: Node) -> None:
        super().observe(node)
        if node.id in self.island_of:
            return
        parent_island = next((self.island_of[p] for p in node.parent_ids if p in self.island_of), None)
        if parent_island is None:
            parent_island = self._next_draft_island
            self._next_draft_island = (self._next_draft_island + 1) % self.n_islands
        self.island_of[node.id] = parent_island
        self.members[parent_island].add(node.id)

    def select(self, nodes: list[Node]) -> Node | None:
        for node in nodes:  # nodes the loop never showed us (e.g. after a resume)
            self.observe(node)
        by_id = {n.id: n for n in nodes}
        island = self._turn
        self._turn = (self._turn + 1) % self.n_islands
        self._selections += 1
        if self.migrate_every and self._selections % self.migrate_every == 0:
            self._migrate(by_id)
        pool = [by_id[i] for i in sorted(self.members[island]) if i in by_id and by_id[i].code]
        passing = [n for n in pool if n.fitness > 0]
        if not passing:
            self._next_draft_island = island  # the draft this asks for lands here
            return None
        drawn = [self.rng.choice(passing) for _ in range(self.tournament)]
        return self.chosen(max(drawn, key=lambda n: (n.fitness, n.id)))

    def _migrate(self, by_id: dict[str, Node]) -> None:
        bests = []
        for members in self.members:
            passing = [by_id[i] for i in members if i in by_id and by_id[i].fitness > 0]
            bests.append(max(passing, key=lambda n: (n.fitness, n.id)) if passing else None)
        for i, best in enumerate(bests):
            if best is not None:
                self.members[(i + 1) % self.n_islands].add(best.id)
