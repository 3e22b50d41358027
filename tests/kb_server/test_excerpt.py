"""The part of a library kernel file a prompt carries: TUNABLES and kernel functions first, in budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.bundle import bundled_source
from kb_server.excerpt import GAP, kernel_excerpt
from kb_server.tokens import get_counter

KERNELS = Path(__file__).resolve().parents[2] / "corpus" / "kernels"
COUNTER = get_counter()


def _excerpt(family: str, budget: int):
    # the source a library record holds: the family's kernel.py with its shared helpers bundled in
    return kernel_excerpt(bundled_source(KERNELS / family / "kernel.py"), budget, COUNTER.count, COUNTER.truncate)


@pytest.mark.parametrize("family", ["rmsnorm", "softmax", "layernorm", "cross_entropy", "attention"])
@pytest.mark.parametrize("budget", [150, 400, 1500, 3000])
def test_excerpt_fits_and_holds_a_kernel_function(family, budget):
    ex = _excerpt(family, budget)
    assert ex.tokens == COUNTER.count(ex.text) <= budget
    assert "@triton.jit" in ex.text and ex.kernels_shown >= 1 and not ex.whole
    assert GAP in ex.text  # the lines left out are marked


@pytest.mark.parametrize("family", ["rmsnorm", "softmax", "layernorm", "cross_entropy"])
def test_at_a_moderate_budget_tunables_come_with_the_default_kernel(family):
    ex = _excerpt(family, 1500)
    assert "TUNABLES = {" in ex.text and ex.names.index("TUNABLES") < len(ex.names)
    first_kernel = next(n for n in ex.names if n.endswith("_kernel"))
    assert f"def {first_kernel}(" in ex.text
    assert ex.tokens > 1000  # the budget is used, not left empty


def test_a_larger_budget_shows_more_and_a_whole_file_fits_whole():
    small, large = _excerpt("softmax", 800), _excerpt("softmax", 4000)
    assert large.tokens > small.tokens and large.kernels_shown >= small.kernels_shown
    source = bundled_source(KERNELS / "cumsum" / "kernel.py")
    whole = kernel_excerpt(source, 100_000, COUNTER.count, COUNTER.truncate)
    assert whole.whole and whole.text == source.strip("\n")


def test_a_kernel_too_long_for_the_budget_is_cut_at_a_line_and_says_so():
    ex = _excerpt("batchnorm", 200)
    assert "# ... (the rest of _batchnorm_stats_kernel" in ex.text and ex.tokens <= 200


def test_source_that_does_not_parse_is_cut_plainly():
    ex = kernel_excerpt("def broken(:\n" + "x = 1\n" * 500, 50, COUNTER.count, COUNTER.truncate)
    assert ex.tokens <= 50 and ex.text.endswith(GAP)
