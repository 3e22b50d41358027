"""The index algebra: reshapes and their inverses cancel, bounded mods vanish, rendering is Python-exact."""

from __future__ import annotations

import itertools
import random

import pytest

from agent_client.lowering.index import Index, address, contiguous_strides, delinearize, linearize


def _evaluate(idx: Index, **values) -> int:
    return eval(idx.render(), {}, values)  # the rendering is valid Python (and Triton) arithmetic


@pytest.mark.parametrize("shape", [(32, 128), (6, 7, 5), (1, 9, 1, 4), (2, 1, 3)])  # size-1 dims: index 0
def test_delinearize_then_linearize_is_the_variable(shape):
    n = 1
    for s in shape:
        n *= s
    x = Index.var("x", n)
    assert linearize(delinearize(x, shape), shape) == x


def test_a_reshape_of_a_reshape_reads_the_same_elements():
    rng = random.Random(0)
    for _ in range(200):
        shape = tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 4)))
        other = list(shape)
        rng.shuffle(other)
        n = 1
        for s in shape:
            n *= s
        idx = delinearize(linearize(delinearize(Index.var("x", n), shape), shape), tuple(other))
        for x in range(n):
            expect = [(x // st) % sz if sz != 1 else 0 for st, sz in zip(contiguous_strides(tuple(other)), other)]
            assert [_evaluate(i, x=x) for i in idx] == expect


def test_batched_matmul_view_round_trip():
    # bmm [1024, 512, 512] viewed as [32, 32, 512, 512] and back: the epilogue reads the accumulator
    b, m, n = Index.var("b", 1024), Index.var("m", 512), Index.var("n", 512)
    four = delinearize(linearize([b, m, n], (1024, 512, 512)), (32, 32, 512, 512))
    assert [i.render() for i in four] == ["(b // 32)", "(b % 32)", "m", "n"]
    assert delinearize(linearize(four, (32, 32, 512, 512)), (1024, 512, 512)) == [b, m, n]


def test_group_norm_view_round_trip():
    # [N, G, C/G*H*W] rows over x, elements over r; the output viewed as [N, C, H, W]
    full = delinearize(Index.var("x", 8), (2, 4)) + [Index.var("r", 32)]
    nchw = delinearize(linearize(full, (2, 4, 32)), (2, 8, 4, 4))
    assert delinearize(linearize(nchw, (2, 8, 4, 4)), (2, 4, 32)) == full


@pytest.mark.parametrize("expr,values", [
    (Index.var("m", 100) * 3 - 1 + Index.var("k", 3) * 2, {"m": range(100), "k": range(3)}),  # padded conv
    ((Index.var("x", 60) + 7) // 4, {"x": range(60)}),
    ((Index.var("x", 60) * 5 + 3) % 8, {"x": range(60)}),
])
def test_division_and_modulus_match_python(expr, values):
    names = list(values)
    for combo in itertools.product(*values.values()):
        env = dict(zip(names, combo))
        assert _evaluate(expr, **env) == eval(expr.render(), {}, env)


def test_address_skips_broadcast_strides():
    idx = [Index.var("a", 4), Index.var("b", 5)]
    assert address(idx, (0, 1)).render() == "b"  # an expanded dim (stride 0) adds nothing
