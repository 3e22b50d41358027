"""Read and rewrite a library kernel's `TUNABLES = {...}` literal, and walk its tunable space.

Usage: src2 = set_tunables(src, {"BLOCK": 2048})
       pts = neighbours({"BLOCK": 1024}, {"BLOCK": [512, 1024, 2048]})
"""

from __future__ import annotations

import ast
import itertools
import math
import random

from harness.pysource import parse_python


class TunablesError(ValueError):
    """A kernel source has no usable module-level `TUNABLES = {...}` literal."""


def _tunables_node(source: str) -> ast.Assign:
    tree = parse_python(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TUNABLES"
                                                for t in node.targets):
            if not isinstance(node.value, ast.Dict):
                raise TunablesError("TUNABLES must be a dict literal at module level")
            return node
    raise TunablesError("the kernel source has no module-level `TUNABLES = {...}`")


def get_tunables(source: str) -> dict:
    return ast.literal_eval(_tunables_node(source).value)


def set_tunables(source: str, values: dict) -> str:
    """The same source with the TUNABLES literal replaced by the defaults updated with `values`."""
    node = _tunables_node(source)
    merged = {**ast.literal_eval(node.value), **values}
    lines = source.splitlines(keepends=True)
    start, end = node.lineno - 1, node.end_lineno  # end_lineno is 1-based inclusive
    return "".join(lines[:start]) + f"TUNABLES = {merged!r}\n" + "".join(lines[end:])


def key(values: dict) -> str:
    return repr(sorted(values.items()))


def neighbours(point: dict, space: dict[str, list]) -> list[dict]:
    """Points that differ from `point` in one tunable by one step along its list of allowed values."""
    out = []
    for name, allowed in space.items():
        if name not in point or point[name] not in allowed:
            continue
        i = allowed.index(point[name])
        for j in (i - 1, i + 1):
            if 0 <= j < len(allowed):
                out.append({**point, name: allowed[j]})
    return out


# Spaces up to this many points are listed and shuffled (every point reachable, none twice); larger ones are
# sampled one value a tunable at a time. The library's spaces run from ~10^2 points (cumsum) to ~10^8 (rmsnorm)
# and ~10^19 (batchnorm): listing rmsnorm's took the 24 GiB of a CI machine.
_LIST_MAX_POINTS = 20_000


def diverse_points(default: dict, space: dict[str, list], n: int, seed: int = 0) -> list[dict]:
    """The default first, then points spread over the space (random, without repeats)."""
    names = [k for k in space if space[k]]
    points, seen = [dict(default)], {key(default)}
    rng = random.Random(seed)

    def take(p: dict) -> None:
        full = {**default, **p}
        if key(full) not in seen:
            seen.add(key(full))
            points.append(full)

    if math.prod(len(space[k]) for k in names) <= _LIST_MAX_POINTS:
        grid = [dict(zip(names, combo)) for combo in itertools.product(*(space[k] for k in names))]
        rng.shuffle(grid)
        for p in grid:
            if len(points) >= n:
                break
            take(p)
    else:
        for _ in range(50 * n):  # repeats are rare in a space this large; the bound stops a pathological one
            if len(points) >= n:
                break
            take({k: rng.choice(space[k]) for k in names})
    return points[:n]
