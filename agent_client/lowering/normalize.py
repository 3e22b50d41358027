"""Rewrite a traced op graph into the small canonical set the lowering emits.

Usage: normalize(graph)   # in place, before scheduling

- mean -> sum * (1 / n); var (prims) -> two sums around the mean, so every reduction is one of
  sum, prod, amax, amin, argmax, argmin, any, all over a list of dims;
- max.dim / min.dim (values, indices) -> amax / argmax (one reduction per result);
- reductions over no dims (`x.sum()`) -> over every dim;
- a reduction computed twice (the same op of the same value) -> once;
- flip(cumsum(flip(x))) and cat([0, cumsum(x[..., :-1])]) -> one scan of x marked "reverse" or "exclusive".
New nodes get their meta by running the op on meta tensors.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.fx

from agent_client.lowering import ops
from agent_client.lowering.errors import LoweringError

aten, prims = torch.ops.aten, torch.ops.prims


def _meta_val(target, args, kwargs):
    def conv(a):
        if isinstance(a, torch.fx.Node):
            v = a.meta["val"]
            return torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="meta")
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a)
        return a
    return target(*conv(args), **{k: conv(v) for k, v in kwargs.items()})


def _add(graph: torch.fx.Graph, target, args, kwargs=None) -> torch.fx.Node:
    node = graph.call_function(target, tuple(args), kwargs or {})
    node.meta["val"] = _meta_val(target, args, kwargs or {})
    return node


def reduce_dims(node: torch.fx.Node, dims) -> list[int]:
    rank = node.meta["val"].dim()
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % rank if rank else 0 for d in dims})


def _replace(graph, old, new):
    old.replace_all_uses_with(new)
    graph.erase_node(old)


# in-place ops that change a tensor's shape or strides; their out-of-place forms have other overload names
_METADATA_IN_PLACE = {aten.transpose_.default: aten.transpose.int, aten.t_.default: aten.t.default,
                      aten.unsqueeze_.default: aten.unsqueeze.default, aten.squeeze_.dim: aten.squeeze.dim}


def _disjoint_piece(piece: torch.fx.Node, writer: torch.fx.Node, order: dict) -> bool:
    """A piece of a split or unbind (an element of a GRU's gate chunks) that is written in place: its write
    touches no other piece, so it reads as a new value when the split's input is read nowhere after it."""
    split = piece.args[0]
    if not isinstance(split, torch.fx.Node) or getattr(split.target, "overloadpacket", None) not in (
            aten.split, aten.split_with_sizes, aten.unbind):
        return False
    base = split.args[0]
    return all(u is split or order[u] < order[writer] for u in base.users)


def _out_of_place(node: torch.fx.Node, order: dict) -> bool:
    """An in-place op a decomposition left (`add_`) becomes its out-of-place form where that cannot be told
    apart: its target is a fresh value (not an input, not a view) that nothing reads after it. True when done."""
    t = node.target
    if not isinstance(t, torch._ops.OpOverload) or not t._schema.name.endswith("_") \
            or t._schema.name.endswith("__") or t is aten.copy_.default:
        return False
    if not (t._schema.arguments and t._schema.arguments[0].alias_info is not None
            and t._schema.arguments[0].alias_info.is_write):
        return False
    packet = getattr(aten, t._schema.name.split("::")[-1][:-1], None)
    functional = _METADATA_IN_PLACE.get(t) or (getattr(packet, t._overloadname, None) if packet is not None else None)
    target = node.args[0] if node.args else None
    if functional is None or not isinstance(target, torch.fx.Node) or target.op != "call_function":
        return False
    if target.target is operator.getitem and not _disjoint_piece(target, node, order):
        return False
    metadata_only = t in _METADATA_IN_PLACE  # changes the tensor's shape, not the storage it shares
    if not metadata_only and isinstance(target.target, torch._ops.OpOverload) and any(
            r.alias_info is not None for r in target.target._schema.returns):  # a view of something else
        return False
    if any(order[u] > order[node] for u in target.users if u is not node):
        return False
    node.target = functional
    return True


def normalize(gm: torch.fx.GraphModule) -> None:
    graph = gm.graph
    out_node = next(n for n in graph.nodes if n.op == "output")
    results = list(out_node.args[0])
    for i, r in enumerate(results):  # a returned input (or a value returned twice) gets a copy of its own
        if isinstance(r, torch.fx.Node) and (r.op == "placeholder" or r in results[:i]):
            with graph.inserting_before(out_node):
                results[i] = _add(graph, aten.clone.default, [r])
    out_node.args = (tuple(results),)
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        t = node.target
        if _out_of_place(node, order):
            continue
        if t in (aten.copy_.default, prims.copy_to.default) and not node.users \
                and node.args[0].op != "placeholder":
            # a copy whose value nobody reads writes through a view into another tensor: lowering it as a
            # value would drop the write, so decline
            raise LoweringError(f"{node.name}: a copy into a view of another tensor (an in-place write left by "
                                "a decomposition) is not lowered")
        with graph.inserting_before(node):
            if t in (aten.mean.dim, aten.mean.default):
                x = node.args[0]
                dims = reduce_dims(x, node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"))
                keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
                n = math.prod(x.meta["val"].shape[d] for d in dims)
                s = _add(graph, aten.sum.dim_IntList, [x, dims, keep], {"dtype": node.meta["val"].dtype})
                _replace(graph, node, _add(graph, aten.mul.Tensor, [s, 1.0 / max(n, 1)]))
            elif t is prims.var.default:
                x, dims, correction = node.args[0], list(node.args[1]), node.args[2]
                dims = reduce_dims(x, dims)
                shape = list(x.meta["val"].shape)
                n = math.prod(shape[d] for d in dims)
                kept = [i for i in range(len(shape)) if i not in dims]
                s = _add(graph, prims.sum.default, [x, dims])
                mean = _add(graph, aten.mul.Tensor, [s, 1.0 / max(n, 1)])
                mean_b = _add(graph, prims.broadcast_in_dim.default, [mean, shape, kept])
                diff = _add(graph, aten.sub.Tensor, [x, mean_b])
                sq = _add(graph, aten.mul.Tensor, [diff, diff])
                ss = _add(graph, prims.sum.default, [sq, dims])
                _replace(graph, node, _add(graph, aten.mul.Tensor, [ss, 1.0 / max(n - correction, 1)]))
            elif t in (aten.max.dim, aten.min.dim):
                x, dim = node.args[0], node.args[1]
                keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
                values = _add(graph, aten.amax.default if t is aten.max.dim else aten.amin.default,
                              [x, [dim], keep])
                index = _add(graph, aten.argmax.default if t is aten.max.dim else aten.argmin.default,
                             [x, dim, keep])
                for user in list(node.users):
                    if user.target is operator.getitem:
                        _replace(graph, user, values if user.args[1] == 0 else index)
                if not node.users:
                    graph.erase_node(node)
            elif t in (aten.max.default, aten.min.default):
                x = node.args[0]
                red = aten.amax.default if t is aten.max.default else aten.amin.default
                _replace(graph, node, _add(graph, red, [x, list(range(x.meta["val"].dim())), False]))
    _merge_equal_reductions(graph)
    _fold_scan_views(graph)
    graph.eliminate_dead_code()
    gm.recompile()


def _only_user(node, user) -> bool:
    return isinstance(node, torch.fx.Node) and list(node.users) == [user]


def _flip_dims(node) -> list | None:
    if not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.target not in (
            prims.rev.default, aten.flip.default):
        return None
    return reduce_dims(node.args[0], node.args[1])


def _fold_scan_views(graph: torch.fx.Graph) -> None:
    """A scan read only through a flip of its flipped input (a cumulative sum from the end) or through a cat
    after a zero that drops its input's last element (an exclusive cumulative sum) becomes one scan of the
    input with meta["kkb_scan"] "reverse" or "exclusive": the scan kernel writes it where it computes it."""
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.cumsum.default, aten.cumprod.default):
            continue
        x = node.args[0]
        dim = node.args[1] % max(x.meta["val"].dim(), 1)
        users = list(node.users)
        if len(users) != 1:
            continue
        user = users[0]
        if _flip_dims(user) == [dim] and _flip_dims(x) == [dim] and _only_user(x, node):
            form, source, result = "reverse", x.args[0], user
        elif node.target is aten.cumsum.default and _exclusive(node, user, dim):
            form, source, result = "exclusive", x.args[0], user
        else:
            continue
        with graph.inserting_before(user):
            scan = _add(graph, node.target, [source, dim], dict(node.kwargs))
        scan.meta["kkb_scan"] = form
        _replace(graph, result, scan)


def _exclusive(scan, cat, dim: int) -> bool:
    """cat([zeros of length 1 along dim, scan(x[..., :n - 1])], dim) over x of length n along dim."""
    if cat.target is not aten.cat.default or len(cat.args) < 2 or cat.args[1] % cat.meta["val"].dim() != dim:
        return False
    parts = cat.args[0]
    if len(parts) != 2 or parts[1] is not scan:
        return False
    zero, cut = parts[0], scan.args[0]
    if zero.target not in (aten.full_like.default, aten.full.default, aten.zeros.default, aten.zeros_like.default) \
            or zero.meta["val"].shape[dim] != 1:
        return False
    if zero.target in (aten.full_like.default, aten.full.default) and zero.args[1] != 0:
        return False
    if cut.target is not aten.slice.Tensor or not _only_user(cut, scan) or cut.args[1] % cut.meta["val"].dim() != dim:
        return False
    source = cut.args[0]
    n = source.meta["val"].shape[dim]
    start = cut.args[2] if len(cut.args) > 2 else 0
    end = cut.args[3] if len(cut.args) > 3 else n
    step = cut.args[4] if len(cut.args) > 4 else 1
    return start in (0, None) and end == n - 1 and step == 1 and cat.meta["val"].shape == source.meta["val"].shape

def _merge_equal_reductions(graph: torch.fx.Graph) -> None:
    """A reduction computed twice (a layer norm's decomposition sums x for its mean and again for its
    variance) is computed once: the later one's users read the first."""
    seen: dict = {}
    for node in list(graph.nodes):
        if node.op != "call_function" or ops.kind_of(node) != "reduction":
            continue
        key = (node.target, repr(node.args), repr(sorted(node.kwargs.items())))
        if key in seen and seen[key].meta["val"].shape == node.meta["val"].shape:
            node.replace_all_uses_with(seen[key])
            graph.erase_node(node)
        else:
            seen.setdefault(key, node)
