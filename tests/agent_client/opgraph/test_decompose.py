"""Our decompositions against the ATen ops they replace, on real CPU tensors (edge values included)."""

import pytest
import torch

from agent_client.opgraph import decompose
from agent_client.opgraph.decompose import decomposition_table

aten = torch.ops.aten


def test_bucketize_counts_edges_as_aten_does_on_and_between_edges():
    edges = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    x = torch.tensor([[-3.0, -1.0, 0.0, 0.25], [0.5, 1.0, 2.0, 9.0]])
    for right in (False, True):
        for out_int32 in (False, True):
            got = decompose._bucketize(x, edges, right=right, out_int32=out_int32)
            want = torch.bucketize(x, edges, right=right, out_int32=out_int32)
            assert got.dtype == want.dtype
            assert torch.equal(got, want), (right, out_int32)


def test_searchsorted_rows_and_side():
    seq = torch.sort(torch.randn(3, 6), dim=-1).values
    x = torch.cat([seq[:, :2], torch.randn(3, 3)], dim=1)  # values equal to entries: left and right differ
    for side in ("left", "right"):
        assert torch.equal(decompose._searchsorted(seq, x, side=side), torch.searchsorted(seq, x, side=side))
    flat = seq[0]
    assert torch.equal(decompose._searchsorted(flat, x, right=True), torch.searchsorted(flat, x, right=True))
    assert decompose._searchsorted(flat, x, sorter=torch.arange(6)) is NotImplemented


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_and_pdist_match_for_every_norm(p):
    a, b = torch.randn(2, 5, 4), torch.randn(2, 3, 4)
    b[0, 0] = a[0, 0]  # a zero distance: p=0 counts differing coordinates
    torch.testing.assert_close(decompose._cdist(a, b, p), torch.cdist(a, b, p=p))
    torch.testing.assert_close(decompose._pdist(a[0], p), torch.pdist(a[0], p=p))


def test_median_and_kthvalue_values_and_indices():
    x = torch.randn(4, 7)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            got, want = decompose._median_dim(x, dim, keepdim), torch.median(x, dim=dim, keepdim=keepdim)
            assert torch.equal(got[0], want.values) and torch.equal(got[1], want.indices)
            got, want = decompose._kthvalue(x, 2, dim, keepdim), torch.kthvalue(x, 2, dim=dim, keepdim=keepdim)
            assert torch.equal(got[0], want.values) and torch.equal(got[1], want.indices)
    y = torch.randn(6, 4)
    assert torch.equal(decompose._median_all(y), y.median())  # an even count: the lower of the middle two


def test_rrelu_outside_training_is_the_middle_slope_and_training_is_left_to_aten():
    x = torch.randn(64)
    out, _ = decompose._rrelu_eval(x, torch.zeros(64), 0.1, 0.3, False)
    torch.testing.assert_close(out, torch.nn.functional.rrelu(x, 0.1, 0.3, training=False))
    assert decompose._rrelu_eval(x, torch.zeros(64), 0.1, 0.3, True) is NotImplemented


def test_hypot_and_the_table_names_our_forms():
    a, b = torch.randn(32), torch.randn(32)
    torch.testing.assert_close(decompose._hypot(a, b), torch.hypot(a, b))
    table = decomposition_table()
    for op in (aten.bucketize.Tensor, aten.searchsorted.Tensor, aten._cdist_forward.default,
               aten._pdist_forward.default, aten.median.dim, aten.kthvalue.default, aten.hypot.default,
               aten.grid_sampler_2d.default, aten.upsample_bicubic2d.default):
        assert op in table, op


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize(("rows", "cols", "offset"),
                         [(4, 4, 0), (5, 3, -1), (3, 6, 2), (0, 3, 0), (4, 2, 5), (27, 27, -1), (6, 9, -3), (9, 4, 1)])
def test_triangle_indices_match(lower, rows, cols, offset):
    want = torch.tril_indices(rows, cols, offset) if lower else torch.triu_indices(rows, cols, offset)
    assert torch.equal(decompose._triangle_indices(lower, rows, cols, offset), want)


def test_embedding_renorm_scales_only_looked_up_rows_over_the_norm():
    weight = torch.randn(20, 6) * 2
    weight[3] = 0.01  # under max_norm: unchanged even when looked up
    indices = torch.tensor([[3, 5, 5], [7, 0, 3]])
    want = weight.clone()
    torch.embedding_renorm_(want, indices, 1.0, 2.0)
    got = decompose._embedding_renorm(weight, indices, 1.0, 2.0)
    torch.testing.assert_close(got, want)
    untouched = [r for r in range(20) if r not in indices.tolist()[0] + indices.tolist()[1]]
    assert torch.equal(got[untouched], weight[untouched])



@pytest.mark.parametrize("n", [2, 3, 17, 300])
def test_pdist_positions_from_the_index_at_every_size(n):
    x = torch.randn(n, 3, dtype=torch.float64)
    torch.testing.assert_close(decompose._pdist(x, 2.0), torch.pdist(x))


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_sums_and_means_through_scatter_add(reduce, include_self):
    x, src, index = torch.randn(4, 5), torch.randn(4, 16), torch.randint(0, 4, (4, 16))  # column 4 untouched
    want = x.scatter_reduce(1, index, src, reduce, include_self=include_self)
    torch.testing.assert_close(decompose._scatter_reduce(x, 1, index, src, reduce, include_self=include_self), want)
    xi, si = torch.randint(-5, 5, (4, 5)), torch.randint(-9, 9, (4, 16))  # an integer mean rounds down
    want = xi.scatter_reduce(1, index, si, reduce, include_self=include_self)
    assert torch.equal(decompose._scatter_reduce(xi, 1, index, si, reduce, include_self=include_self), want)


def test_scatter_reduce_leaves_extremes_over_self_and_prod_to_the_op():
    x, src, index = torch.randn(4, 5), torch.randn(4, 8), torch.randint(0, 5, (4, 8))
    assert decompose._scatter_reduce(x, 1, index, src, "amax", include_self=True) is NotImplemented
    assert decompose._scatter_reduce(x, 1, index, src, "prod") is NotImplemented


def test_scatter_reduce_extremes_without_self_start_from_a_scattered_value():
    x, src, index = torch.randn(4, 5), torch.randn(4, 16), torch.randint(0, 4, (4, 16))
    for reduce in ("amax", "amin"):
        got = decompose._scatter_reduce(x, 1, index, src, reduce, include_self=False)  # on real tensors: the op
        torch.testing.assert_close(got, x.scatter_reduce(1, index, src, reduce, include_self=False))


def test_masked_scatter_angle_and_ldexp_match():
    x, source = torch.randn(3, 4), torch.randn(12)
    for mask in (torch.rand(3, 4) > 0.5, torch.rand(4) > 0.5):  # full and broadcast masks
        assert torch.equal(decompose._masked_scatter(x, mask, source), x.masked_scatter(mask, source))
    v = torch.tensor([-1.0, -0.0, 0.0, 2.0, float("nan")])
    torch.testing.assert_close(decompose._angle(v), torch.angle(v), equal_nan=True)
    e = torch.randint(-3, 4, (3, 4))
    torch.testing.assert_close(decompose._ldexp(x, e), torch.ldexp(x, e))


@pytest.mark.parametrize("padding_idx", [-1, 0])
def test_embedding_bag_max_with_empty_and_padding_only_bags(padding_idx):
    weight, ids = torch.randn(30, 8), torch.randint(1, 30, (20,))
    ids[5:8] = 0  # the second bag holds padding only; the third (8, 8) is empty
    offsets = torch.tensor([0, 5, 8, 8, 14])
    want = torch.nn.functional.embedding_bag(ids, weight, offsets, mode="max",
                                             padding_idx=None if padding_idx < 0 else padding_idx)
    got = decompose._embedding_bag(weight, ids, offsets, mode=2, padding_idx=padding_idx)[0]
    assert torch.equal(got, want)
