"""Decompositions for the trace: ATen ops rewritten into the small set the lowering knows.

Usage: table = decomposition_table()     # for make_fx(..., decomposition_table=table)

PyTorch's core set, PyTorch's own decompositions of the composite ops listed in _EXTRA, and ours where
PyTorch has none or its form does not lower (a scatter where a gather does, a loop where a comparison
count does).
"""

from __future__ import annotations

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

aten = torch.ops.aten

# Beyond PyTorch's core set: composite normalisations, softmaxes and losses become the pointwise and
# reduction ops they are made of (the lowering fuses them back into one kernel where they fit).
_EXTRA = [
    aten._softmax, aten._log_softmax, aten.native_layer_norm, aten.native_group_norm, aten.native_batch_norm,
    aten._native_batch_norm_legit_functional, aten._native_batch_norm_legit,
    aten._native_batch_norm_legit_no_training, aten.linalg_vector_norm, aten.var_mean, aten.var, aten.std,
    aten.std_mean, aten.nll_loss_forward, aten.nll_loss2d_forward, aten.logsumexp, aten.mse_loss,
    aten.smooth_l1_loss, aten.huber_loss, aten.binary_cross_entropy, aten.soft_margin_loss,
    aten.hardtanh, aten.leaky_relu, aten.elu, aten.hardsigmoid, aten.hardswish, aten.silu, aten.mish,
    aten.softplus, aten.gelu, aten.logit, aten.norm, aten.frobenius_norm, aten.addcmul, aten.addcdiv,
    aten.lerp, aten.threshold, aten.glu, aten.celu, aten.selu, aten.rrelu_with_noise, aten.log_sigmoid_forward,
    aten.instance_norm, aten.native_dropout, aten.baddbmm, aten.addmv, aten.mv, aten.dot, aten.vdot,
    aten.outer, aten.diag_embed, aten.diagonal, aten.trace, aten.triu, aten.tril, aten.roll, aten.flip,
    aten.masked_fill, aten.index_select, aten.embedding, aten.squeeze, aten.unsqueeze, aten.t,
    aten.transpose, aten.expand_as, aten.stack, aten.hstack, aten.vstack, aten.repeat, aten.tile,
    aten.narrow, aten.split, aten.chunk, aten.unbind, aten.clamp_min, aten.clamp_max, aten.sgn,
    aten.cosine_similarity, aten.cosine_embedding_loss, aten.margin_ranking_loss, aten.hinge_embedding_loss,
    aten.triplet_margin_loss, aten.pairwise_distance, aten.cdist, aten.kl_div, aten.l1_loss,
    aten.binary_cross_entropy_with_logits, aten.adaptive_avg_pool1d, aten.max_pool1d, aten.avg_pool1d,
    aten.max_pool1d_with_indices, aten.upsample_nearest2d, aten.upsample_bilinear2d, aten.pixel_shuffle,
    aten.im2col, aten.col2im, aten.reflection_pad1d, aten.reflection_pad2d, aten.replication_pad2d,
    aten.prod, aten.aminmax, aten.cummax, aten.cummin, aten.logcumsumexp,
    aten.rsub, aten.square, aten.xlogy, aten.special_xlog1py, aten.exp2, aten.log10, aten.frac, aten.clamp_min_,
    aten.clamp_max_, aten.clamp_, aten.upsample_bicubic2d, aten.upsample_trilinear3d, aten.grid_sampler_2d,
    aten.copysign,
]


def _logcumsumexp(x, dim):
    # shifted by the row's maximum so exp cannot overflow; a row of -inf keeps a zero shift
    m = torch.amax(x, dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    return torch.log(torch.cumsum(torch.exp(x - m), dim)) + m


def _cumulative_extreme(x, dim, largest: bool):
    # every position against every earlier one (rows are short in practice): the running extreme, and the
    # last index that holds it, as PyTorch's cummax and cummin report ties
    x = x.movedim(dim, -1)
    n = x.shape[-1]
    j = torch.arange(n, device=x.device)
    earlier = j[None, :] <= j[:, None]  # (i, j): j is at or before i
    pairs = x.unsqueeze(-2).expand(*x.shape[:-1], n, n)
    fill = float("-inf") if largest else float("inf")
    masked = torch.where(earlier, pairs, torch.full_like(pairs, fill))
    values = masked.amax(-1) if largest else masked.amin(-1)
    hit = earlier & (pairs == values.unsqueeze(-1))
    indices = torch.where(hit, j.expand_as(pairs), torch.full_like(j, -1).expand_as(pairs)).amax(-1)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    # each input gains size-1 dims at its expand list; the product is summed over sumdim (nn.Bilinear's form)
    for d in expand1:
        i1 = i1.unsqueeze(d)
    for d in expand2:
        i2 = i2.unsqueeze(d)
    for d in expand3:
        i3 = i3.unsqueeze(d)
    product = i1 * i2 * i3
    return product.sum(list(sumdim)) if sumdim else product


def _im2col(x, kernel_size, dilation, padding, stride):
    # F.unfold as a pad and one gather (PyTorch's own form writes the input into a view of a zero buffer)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    batched = x.dim() == 4
    x = x if batched else x.unsqueeze(0)
    n, c, h, w = x.shape
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    padded = torch.constant_pad_nd(x, [pw, pw, ph, ph])
    rows = (torch.arange(kh, device=x.device) * dh)[:, None] + (torch.arange(oh, device=x.device) * sh)[None, :]
    cols = (torch.arange(kw, device=x.device) * dw)[:, None] + (torch.arange(ow, device=x.device) * sw)[None, :]
    patches = padded[:, :, rows[:, :, None, None], cols[None, None, :, :]]  # (n, c, kh, oh, kw, ow)
    patches = patches.permute(0, 1, 2, 4, 3, 5).reshape(n, c * kh * kw, oh * ow)
    return patches if batched else patches.squeeze(0)


def _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    # sums and means of bags as an index_add over each index's bag number, counted from the offsets (an
    # offset may repeat: an empty bag); maxima through scatter_reduce's amax, an empty bag giving 0
    if mode not in (0, 1, 2):
        return NotImplemented
    n = indices.shape[0]
    bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    starts = offsets[1:bags]
    marks = torch.zeros(n + 1, dtype=torch.long, device=indices.device).index_add(0, starts, torch.ones_like(starts))
    bag = marks.cumsum(0)[:n]
    rows = weight[indices]
    keep = (indices != padding_idx) if padding_idx is not None and padding_idx >= 0 else torch.ones_like(indices,
                                                                                                         dtype=torch.bool)
    count = torch.zeros(bags, dtype=torch.long, device=indices.device).index_add(0, bag, keep.to(torch.long))
    if mode == 2:
        lowest = torch.full_like(rows, float("-inf"))
        out = torch.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device).scatter_reduce(
            0, bag[:, None].expand_as(rows), torch.where(keep[:, None], rows, lowest), "amax", include_self=False)
        return torch.where(count[:, None] > 0, out, torch.zeros_like(out)), bag, count, torch.zeros_like(out,
                                                                                                       dtype=torch.long)
    weights = keep.to(weight.dtype)
    if per_sample_weights is not None:
        weights = weights * per_sample_weights
    out = torch.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device).index_add(
        0, bag, rows * weights[:, None])
    if mode == 1:
        out = out / count.clamp(min=1).to(weight.dtype)[:, None]
    return out, bag, count, torch.zeros_like(count)


def _count_below(values, edges, right: bool, out_int32: bool):
    # bucketize and searchsorted as a count of the edges below each value (at or below, with right):
    # a comparison and a sum, where PyTorch's own form loops over a binary search
    below = (edges <= values.unsqueeze(-1)) if right else (edges < values.unsqueeze(-1))
    return below.sum(-1, dtype=torch.int32 if out_int32 else torch.int64)


def _bucketize(x, boundaries, *, out_int32=False, right=False):
    return _count_below(x, boundaries, right, out_int32)


def _searchsorted(sorted_sequence, x, *, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        return NotImplemented
    right = right or side == "right"
    if sorted_sequence.dim() == 1:
        return _count_below(x, sorted_sequence, right, out_int32)
    return _count_below(x, sorted_sequence.unsqueeze(-2), right, out_int32)


def _cdist(x1, x2, p, compute_mode=None):
    # every pair's difference reduced in one pass (no matmul form: it loses digits to cancellation)
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (diff != 0).sum(-1, dtype=x1.dtype)
    if p == float("inf"):
        return diff.amax(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return diff.square().sum(-1).sqrt()
    return diff.pow(p).sum(-1).pow(1.0 / p)


def _pdist(x, p=2.0):
    # the upper triangle of cdist(x, x), row by row: a gather at positions computed from the output's index
    # (no constant of n(n-1)/2 positions). Row i starts at s(i) = i(2n - i - 1)/2; i comes from the
    # quadratic's root in fp64, then is corrected by one either way where rounding moved it.
    n = x.shape[0]
    k = torch.arange(n * (n - 1) // 2, device=x.device)
    b = 2 * n - 1
    i = ((b - torch.sqrt((b * b - 8 * k).to(torch.float64))) / 2).floor().to(torch.long)
    start = lambda r: r * (b - r) // 2
    i = torch.where(start(i + 1) <= k, i + 1, torch.where(start(i) > k, i - 1, i))
    j = k - start(i) + i + 1
    return _cdist(x, x, p).reshape(-1)[i * n + j]


def _order_statistic(x, k: int, dim: int, keepdim: bool):
    # the k-th smallest (0-based) along dim, and where it was, through a sort
    values, indices = torch.sort(x, dim=dim, stable=True)
    values, indices = values.narrow(dim, k, 1), indices.narrow(dim, k, 1)
    return (values, indices) if keepdim else (values.squeeze(dim), indices.squeeze(dim))


def _median_dim(x, dim=-1, keepdim=False):
    dim = dim % max(x.dim(), 1)
    return _order_statistic(x, (x.shape[dim] - 1) // 2, dim, keepdim)


def _median_all(x):
    flat = x.reshape(-1)
    return torch.sort(flat).values[(flat.shape[0] - 1) // 2]


def _kthvalue(x, k, dim=-1, keepdim=False):
    dim = dim % max(x.dim(), 1)
    return _order_statistic(x, k - 1, dim, keepdim)


def _hypot(a, b):
    return torch.sqrt(a * a + b * b)


def _triangle_indices(lower: bool, row, col, offset=0, *, dtype=None, device=None, **_):
    # computed from the index, as DLRM's interaction layer uses them: each row's count of kept columns, their
    # running sum, then for each position k its row (how many rows end at or before k) and its column
    counts = torch.arange(row, device=device) + offset
    counts = (counts + 1).clamp(0, col) if lower else (col - counts.clamp(min=0)).clamp(0, col)
    ends = torch.cumsum(counts, 0)
    total = sum(min(max(r + offset + 1, 0), col) if lower else min(max(col - max(r + offset, 0), 0), col)
                for r in range(row))
    k = torch.arange(total, device=device)
    i = (ends <= k.unsqueeze(-1)).sum(-1)
    first = torch.zeros_like(i) if lower else (i + offset).clamp(min=0)
    j = first + k - (ends[i] - counts[i])
    return torch.stack([i, j]).to(dtype or torch.long)


def _embedding_renorm(weight, indices, max_norm, norm_type):
    # nn.Embedding(max_norm=...): each looked-up row whose norm exceeds max_norm is scaled to it (with
    # PyTorch's 1e-7 in the divisor); a functional copy of the weight that the trace writes back
    norms = torch.linalg.vector_norm(weight, norm_type, dim=1, keepdim=True)
    used = torch.zeros(weight.shape[0], 1, dtype=torch.bool, device=weight.device).index_put(
        (indices.reshape(-1),), torch.ones((), dtype=torch.bool, device=weight.device))
    return torch.where(used & (norms > max_norm), weight * (max_norm / (norms + 1e-7)), weight)


def _scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    # sums and means through scatter_add (a mean counts the scattered values, and x's own where it is
    # included); amax and amin over x's own values are left to the lowering's atomic maxima, and without
    # them each scattered position first takes one of the values scattered there; prod is left as it is
    if reduce in ("amax", "amin") and include_self:
        return NotImplemented
    if reduce not in ("sum", "mean", "amax", "amin"):
        return NotImplemented
    if reduce in ("amax", "amin"):  # each scattered position first holds one of its own values: no fill needed
        return torch.scatter_reduce(x.scatter(dim, index, src), dim, index, src, reduce, include_self=True)
    base = x if include_self else x.scatter(dim, index, 0)
    total = base.scatter_add(dim, index, src)
    if reduce == "sum":
        return total
    ones = torch.ones_like(x)
    count = (ones if include_self else ones.scatter(dim, index, 0)).scatter_add(dim, index, torch.ones_like(src))
    count = count.clamp(min=1)
    return total / count if x.is_floating_point() else torch.div(total, count, rounding_mode="floor")


def _masked_scatter(x, mask, source):
    # the i-th selected position (row-major) takes source's i-th element: a running count of the mask, then a
    # gather at fixed shape (multimodal models put image features into token embeddings this way)
    selected = mask.expand_as(x).reshape(-1)
    position = (torch.cumsum(selected.to(torch.long), 0) - 1).clamp(min=0)
    return torch.where(selected, source.reshape(-1)[position], x.reshape(-1)).view(x.shape)


def _angle(x):
    # the argument of a real number: pi below zero, 0 at or above, nan kept
    if x.is_complex():
        return NotImplemented
    zero = torch.zeros_like(x, dtype=torch.get_default_dtype() if not x.is_floating_point() else x.dtype)
    return torch.where(x < 0, zero + torch.pi, torch.where(torch.isnan(x), x, zero))


def _ldexp(x, other):
    return x * torch.pow(2.0, other)


def _rrelu_eval(x, noise, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    # outside training rrelu is a leaky relu with the middle slope; in training it is random
    if training:
        return NotImplemented
    return torch.nn.functional.leaky_relu(x, (lower + upper) / 2), noise


def decomposition_table() -> dict:
    table = dict(core_aten_decompositions())
    table.update(get_decompositions([op for op in _EXTRA if hasattr(op, "overloads")]))
    table[aten.logcumsumexp.default] = _logcumsumexp
    table[aten._trilinear.default] = _trilinear
    table[aten.im2col.default] = _im2col
    table[aten._embedding_bag_forward_only.default] = _embedding_bag
    table[aten._embedding_bag.default] = _embedding_bag
    table[aten.cummax.default] = lambda x, dim: _cumulative_extreme(x, dim, True)
    table[aten.cummin.default] = lambda x, dim: _cumulative_extreme(x, dim, False)
    table[aten.bucketize.Tensor] = _bucketize
    table[aten.searchsorted.Tensor] = _searchsorted
    table[aten._cdist_forward.default] = _cdist
    table[aten._pdist_forward.default] = _pdist
    table[aten.median.dim] = _median_dim
    table[aten.median.default] = _median_all
    table[aten.kthvalue.default] = _kthvalue
    table[aten.rrelu_with_noise_functional.default] = _rrelu_eval
    table[aten.hypot.default] = _hypot
    table[aten.embedding_renorm.default] = _embedding_renorm
    table[aten.scatter_reduce.two] = _scatter_reduce
    table[aten.masked_scatter.default] = _masked_scatter
    table[aten.angle.default] = _angle
    table[aten.ldexp.Tensor] = _ldexp
    table[aten.tril_indices.default] = lambda *a, **k: _triangle_indices(True, *a, **k)
    table[aten.triu_indices.default] = lambda *a, **k: _triangle_indices(False, *a, **k)
    return table
