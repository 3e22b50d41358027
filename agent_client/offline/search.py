"""Where the offline search goes next: points of a route's tunable space ordered by what the measured
bottleneck says matters, and when to stop.

Usage: points = expansion_plan(parent_point, route.space, parent_verdict, relevant={"BLOCK_LOOP", ...})
       first = combined_moves(parent_point, parent_node, history)
       table = standings(history)            # route id -> RouteStanding (best fitness, fraction, ...)
       done = at_limit(history)              # a candidate reached AT_LIMIT of its hardware limit

A tunable's role comes from its name (and its values): the structure of the kernel (strategies, paths,
persistent and TMA forms), split factors (programs per row or per SM), compute tiles (BLOCK_M/N/K),
memory blocks (elements a program moves per step), warps, pipeline stages, precision, cache hints. The
verdict's `limit_kind` orders the roles: a memory-bound kernel moves structure, splits, blocks and warps
first; a compute-bound one structure, tiles, stages and precision. Far from the limit (below FAR of it)
the plan jumps: every alternative of a structural tunable, two notches of the others; nearer, it steps
one notch at a time. Tunables the spec's path does not read (agent_client/offline/reads.py) are left
alone. The plan visits tunables round-robin, so a few candidates cover several tunables rather than
every value of one. Moves that each beat their parent are then tried together (`combined_moves`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

AT_LIMIT = 0.9  # a candidate at this fraction of its hardware limit ends the search
BEHIND = 0.7  # a route whose best is below this share of the leading route's best gets no expansions
FAR = 0.5  # below this fraction of the limit the plan changes structure first and jumps

# (pattern on the tunable's name, role): the first match wins. Lowering tunables are named
# "<kernel>_<KEY>" (e.g. "_p0k0_gemm_BLOCK_M"), so patterns look at the name's end or at whole words.
_ROLE_RULES: tuple[tuple[str, str], ...] = (
    (r"(^|_)(num_warps|warps)(_|$)|WARPS$|CONSUMERS", "warps"),
    (r"(^|_)(num_stages|stages)(_|$)|STAGES(_D\d+)?$|AHEAD$|(^|_)LAG$", "stages"),
    (r"PREC(ISION)?$|FP64_ACC|16BIT$|(^|_)FAST$", "precision"),
    (r"EVICT", "cache"),
    ((r"STRATEGY|LAYOUT|PERSISTENT|TMA|(^|_)WS$|WARP_SPECIALIZE|PINGPONG|PLANS|ONLINE|PAIRS|RELOAD$|"
      r"CONSTEXPR|COLS_FIRST|ALIGN|UNMASKED|MAX_FUSED|_MIN_N$|conv_impl|IMPL$|CAUSAL$|WORDS$"), "structure"),
    (r"SPLIT|PROGRAMS|PER_PROG|STRIPS|(^|_)ROWS(_|$)|ROWS_FUSED", "split"),
    (r"(^|_)BLOCK_[MNK](_|$)|(^|_)BK$|GROUP_M$|BLOCK_N_D\d+$", "tile"),
    (r"BLOCK|TILE|CHUNK|ELEMS|BYTES|GROUPS|(^|_)XBLOCK|(^|_)RBLOCK", "block"),
)

# roles in the order the search moves them, by the limit the measured candidate is nearest
ROLE_ORDER: dict[str | None, tuple[str, ...]] = {
    "memory": ("structure", "split", "block", "warps", "cache", "stages", "tile", "precision", "other"),
    "compute": ("structure", "tile", "stages", "precision", "split", "warps", "block", "cache", "other"),
    None: ("structure", "split", "tile", "block", "warps", "stages", "precision", "cache", "other"),
}


def role(name: str, allowed: list | None = None) -> str:
    """The role of a tunable: structure, split, tile, block, warps, stages, precision, cache or other."""
    for pattern, found in _ROLE_RULES:
        if re.search(pattern, name):
            return found
    if allowed and all(isinstance(v, (bool, str)) for v in allowed):
        return "structure"  # a choice among named forms
    return "other"


@dataclass(frozen=True)
class RouteStanding:
    route_id: str
    best_fitness: float  # speedup of its best passing candidate (0: none passed)
    best_node_id: str | None
    fraction_of_limit: float | None  # of that candidate
    limit_kind: str | None
    evaluated: int  # candidates of the route with a verdict


def route_of(node) -> str | None:
    return node.meta.get("route_id") or node.meta.get("kernel_id")


def standings(history: list) -> dict[str, RouteStanding]:
    """Per route, its best passing candidate among `history` (NodeViews with verdicts)."""
    best: dict[str, object] = {}
    counts: dict[str, int] = {}
    for node in history:
        rid = route_of(node)
        if rid is None or not node.verdict:
            continue
        counts[rid] = counts.get(rid, 0) + 1
        if node.fitness > 0 and (rid not in best or node.fitness > best[rid].fitness):
            best[rid] = node
    out = {}
    for rid, n in counts.items():
        node = best.get(rid)
        v = node.verdict if node is not None else {}
        out[rid] = RouteStanding(rid, node.fitness if node else 0.0, node.node_id if node else None,
                                 v.get("fraction_of_limit"), v.get("limit_kind"), n)
    return out


def leader(table: dict[str, RouteStanding]) -> RouteStanding | None:
    passing = [s for s in table.values() if s.best_fitness > 0]
    return max(passing, key=lambda s: (s.best_fitness, s.route_id), default=None)


def is_behind(route_id: str, table: dict[str, RouteStanding]) -> bool:
    """Whether a route is far enough behind the leading one to get no more expansions."""
    top = leader(table)
    mine = table.get(route_id)
    if top is None or mine is None or top.route_id == route_id:
        return False
    return mine.best_fitness < BEHIND * top.best_fitness


def at_limit(history: list) -> object | None:
    """The first passing candidate at AT_LIMIT or more of its hardware limit, if any."""
    for node in history:
        v = node.verdict or {}
        if v.get("status") == "passed" and (v.get("fraction_of_limit") or 0) >= AT_LIMIT:
            return node
    return None


def combined_moves(point: dict, base, history: list) -> list[dict]:
    """Where two or more of `base`'s children beat it by moving different tunables, those moves together
    (each pair, then all of them), best children first."""
    children = [n for n in history if n.meta.get("expanded_from") == base.node_id]
    better = sorted((n for n in children if n.fitness > base.fitness), key=lambda n: -n.fitness)
    moves = []
    for child in better:
        tunables = child.tunables or child.meta.get("tunables") or {}
        move = {k: v for k, v in tunables.items() if point.get(k) != v}
        if move and all(set(move).isdisjoint(m) for m in moves):
            moves.append(move)
    if len(moves) < 2:
        return []
    pairs = [{**point, **a, **b} for i, a in enumerate(moves) for b in moves[i + 1:]]
    together = {**point, **{k: v for m in moves for k, v in m.items()}}
    return pairs + ([together] if len(moves) > 2 else [])


def expansion_plan(point: dict, space: dict[str, list], verdict: dict | None, relevant: set | None = None,
                   seed: int = 0, combos: int = 16) -> list[dict]:
    """Points near `point`, the most promising first (see the module docstring); may hold points already
    tried: the caller skips those."""
    verdict = verdict or {}
    kind = verdict.get("limit_kind") if verdict.get("limit_kind") in ROLE_ORDER else None
    fraction = verdict.get("fraction_of_limit")
    far = fraction is None or fraction < FAR
    order = ROLE_ORDER[kind]
    names = [k for k, allowed in space.items() if len(allowed) > 1 and (relevant is None or k in relevant)]
    roles = {k: role(k, space[k]) for k in names}
    names.sort(key=lambda k: (order.index(roles[k]) if roles[k] in order else len(order), k))
    moves: dict[str, list[dict]] = {}
    for name in names:
        moves[name] = [{**point, name: v} for v in _alternatives(point.get(name), space[name],
                                                                  jump=far or roles[name] == "structure")]
    plan = _round_robin([moves[k] for k in names])
    # then points that move two or more of the relevant tunables at once, spread over their values
    rng = random.Random(seed)
    for _ in range(combos):
        if len(names) < 2:
            break
        chosen = rng.sample(names, min(len(names), rng.choice((2, 3))))
        plan.append({**point, **{k: rng.choice(space[k]) for k in chosen}})
    return [p for p in plan if p != point]


def _alternatives(value, allowed: list, jump: bool) -> list:
    """Other values of one tunable, nearest first: one notch each way; with `jump`, every other value."""
    if value not in allowed:
        return list(allowed)
    i = allowed.index(value)
    by_distance = sorted((j for j in range(len(allowed)) if j != i), key=lambda j: (abs(j - i), j))
    if not jump:
        by_distance = [j for j in by_distance if abs(j - i) == 1]
    return [allowed[j] for j in by_distance]


def _round_robin(lists: list[list]) -> list:
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return out
