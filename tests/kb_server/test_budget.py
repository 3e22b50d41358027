"""The budget rule: minimums first, then the rest by weight, never past a section's demand."""

from __future__ import annotations

import pytest

from kb_server.budget import BudgetTooSmall, Claim, share


def test_minimums_then_proportional_shares():
    grants = share(1000, [Claim("a", 100, 10_000, 1), Claim("b", 100, 10_000, 3)])
    assert grants == {"a": 300, "b": 700}  # 800 left after the minimums: a quarter and three quarters


def test_a_satisfied_section_gives_its_surplus_to_the_others():
    grants = share(1000, [Claim("facts", 100, 150, 1), Claim("passages", 100, 10_000, 1)])
    assert grants == {"facts": 150, "passages": 850}


def test_a_demand_below_its_minimum_takes_only_the_demand():
    assert share(500, [Claim("kernels", 650, 20, 4), Claim("p", 100, 10_000, 1)]) == {"kernels": 20, "p": 480}


@pytest.mark.parametrize("total", [250, 251, 777, 1000, 12_345])
def test_never_more_than_the_total_and_never_below_a_minimum(total):
    claims = [Claim("a", 100, 900, 1), Claim("b", 50, 5000, 4), Claim("c", 90, 300, 2)]
    grants = share(total, claims)
    assert sum(grants.values()) <= total
    assert all(grants[c.name] >= min(c.minimum, c.demand) for c in claims)
    assert all(grants[c.name] <= c.demand for c in claims)
    if total >= sum(c.demand for c in claims):
        assert grants == {c.name: c.demand for c in claims}


def test_minimums_that_do_not_fit_say_how_much_is_needed():
    with pytest.raises(BudgetTooSmall) as info:
        share(100, [Claim("a", 80, 900, 1), Claim("b", 70, 900, 1)])
    assert (info.value.need, info.value.available) == (150, 100)
