"""Sharing a token budget between prompt sections by rule: a minimum each, then the rest by weight.

Usage: grants = share(4000, [Claim("passages", minimum=400, demand=3000, weight=4), ...])

Every section first gets its minimum (or its whole demand, when that is smaller): no section is
dropped to make room for another. What is left goes out in proportion to the weights, never past a
section's demand; what a satisfied section does not need goes to the others by the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    name: str
    minimum: int  # tokens the section needs to be worth having
    demand: int  # tokens the section would use if there were no limit
    weight: float  # its share of what is left after the minimums


class BudgetTooSmall(ValueError):
    def __init__(self, need: int, available: int):
        super().__init__(f"the sections' minimums need {need} tokens; {available} are available")
        self.need, self.available = need, available


def share(total: int, claims: list[Claim]) -> dict[str, int]:
    """Tokens granted to each claim; raises BudgetTooSmall when the minimums do not fit in `total`."""
    grants = {c.name: min(c.minimum, c.demand) for c in claims}
    need = sum(grants.values())
    if need > total:
        raise BudgetTooSmall(need, total)
    left = total - need
    open_claims = [c for c in claims if grants[c.name] < c.demand and c.weight > 0]
    while left > 0 and open_claims:
        weights = sum(c.weight for c in open_claims)
        given = 0
        for c in open_claims:
            extra = min(int(left * c.weight / weights), c.demand - grants[c.name])
            grants[c.name] += extra
            given += extra
        if given == 0:  # rounding left a few tokens: the heaviest open claim takes them
            top = max(open_claims, key=lambda c: c.weight)
            extra = min(left, top.demand - grants[top.name])
            grants[top.name] += extra
            given = extra
        left -= given
        open_claims = [c for c in open_claims if grants[c.name] < c.demand]
    return grants
