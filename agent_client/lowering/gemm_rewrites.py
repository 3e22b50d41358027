"""Rewrites of a traced graph around its matmuls, each exact in real arithmetic and checked by its condition.

Usage: rewrite_gemms(gm)   # in place, after normalize(): the lowering then schedules the smaller graph

- unit_reductions: a sum, max, min or product over dims that all have size 1 is its input (reshaped where the
  dims are dropped): after a row reduction, KernelBench chains more of them over the size-1 dim it kept.
- row_sum_of_linear: the sum over the output features of a matmul, with only linear maps in between, is a
  matrix-vector product with the column-summed weight: sum_n (x B)[m, n] f[n] = x (B f)[m], plus the sum of
  the additive terms; the weight row (1, N) x B^T is a matmul of one row. Condition: a 2D float32 matmul read by nothing else, then a chain of adds or subtracts of
  values that do not depend on it, multiplies or divides by values constant along the rows (a scalar or a
  per-feature vector), negations, ending in a sum over the last dim. A non-linear op anywhere between
  (an activation, a clamp, a product with a per-row or per-element tensor) blocks it. M x N x K products become
  N x K + M x K, the cost of reading the weight and the input once.
- matvec_to_reduction: a matmul with one output column is a product and a sum over K (a reduction kernel,
  memory-bound as the problem is) instead of a GEMM tile of which 15 of 16 columns would be padding.
- outer_product: a matmul over a K of 1 (rotary embeddings' positions times frequencies) is a broadcast product,
  which the kernels that read it compute inline instead of loading it from a GEMM's output.
Each new node gets its meta by running its op on meta tensors.
"""

from __future__ import annotations

import torch
import torch.fx

from agent_client.lowering.normalize import _add, _replace

aten, prims = torch.ops.aten, torch.ops.prims

_SUMS = (aten.sum.dim_IntList, prims.sum.default)
_UNIT_REDUCTIONS = {aten.sum.dim_IntList: "keep", prims.sum.default: "drop", aten.amax.default: "keep",
                    aten.amin.default: "keep", prims.amax.default: "drop", prims.amin.default: "drop",
                    prims.prod.default: "drop"}


def rewrite_gemms(gm: torch.fx.GraphModule) -> list[str]:
    """Apply every rewrite until none applies; the names of those applied, in order."""
    done = []
    changed = True
    while changed:
        changed = False
        for rewrite in (unit_reductions, row_sum_of_linear, matvec_to_reduction, outer_product):
            if rewrite(gm):
                done.append(rewrite.__name__)
                changed = True
    if done:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return done


def _shape(v) -> tuple[int, ...]:
    return tuple(int(s) for s in v.meta["val"].shape)


def _dims(node) -> list[int]:
    rank = len(_shape(node.args[0]))
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dims is None:
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({d % rank for d in dims}) if rank else []


def unit_reductions(gm: torch.fx.GraphModule) -> bool:
    """sum/amax/amin/prod over size-1 dims only -> the input itself, viewed to the result's shape."""
    graph, changed = gm.graph, False
    for node in list(graph.nodes):
        how = _UNIT_REDUCTIONS.get(node.target) if node.op == "call_function" else None
        if how is None:
            continue
        x = node.args[0]
        dims = _dims(node)
        if not dims or any(_shape(x)[d] != 1 for d in dims) or node.kwargs.get("dtype") not in (
                None, x.meta["val"].dtype) or node.meta["val"].dtype != x.meta["val"].dtype:
            continue
        with graph.inserting_before(node):
            new = x if _shape(node) == _shape(x) else _add(graph, aten.view.default, [x, list(_shape(node))])
        _replace(graph, node, new)
        changed = True
    return changed


def _depends_on(node, target, memo: dict) -> bool:
    if node is target:
        return True
    if not isinstance(node, torch.fx.Node):
        return False
    if node not in memo:
        memo[node] = any(_depends_on(a, target, memo) for a in node.all_input_nodes)
    return memo[node]


def _along_features(v, rows: int) -> bool:
    """A number, or a tensor that broadcast to (rows, N) is constant along the rows."""
    if isinstance(v, (int, float)):
        return True
    s = _shape(v)
    return len(s) <= 1 or (len(s) == 2 and s[0] == 1) or (rows == 1 and len(s) == 2)


def row_sum_of_linear(gm: torch.fx.GraphModule) -> bool:
    graph = gm.graph
    for red in list(graph.nodes):
        if red.op != "call_function" or red.target not in _SUMS:
            continue
        z = red.args[0]
        if len(_shape(z)) != 2 or _dims(red) != [1] or z.meta["val"].dtype != torch.float32 \
                or red.kwargs.get("dtype") not in (None, torch.float32):
            continue
        found = _linear_chain(z)
        if found is None:
            continue
        mm, chain = found
        _rewrite_row_sum(graph, red, mm, chain)
        return True
    return False


def _linear_chain(z):
    """(the matmul, the ops from it to z in order) when z is linear in a 2D matmul that only the chain reads."""
    chain, v = [], z
    while not (v.op == "call_function" and v.target in (aten.mm.default, aten.addmm.default)):
        carrier = _chain_input(v) if v.op == "call_function" else None
        if carrier is None or len(v.users) != 1:
            return None
        chain.append(v)
        v = carrier
    mm = v
    if len(mm.users) != 1 or mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
        return None
    if any(_shape(op) != _shape(mm) for op in chain):  # the product broadcast to more rows: not a row sum of it
        return None
    rows = _shape(mm)[0]
    memo: dict = {}
    for op in chain:  # no other operand may depend on the matmul, and a factor may not vary by row
        others = [a for a in op.args if a is not _chain_input(op)]
        if any(_depends_on(a, mm, memo) for a in others):
            return None
        if op.target in (aten.mul.Tensor, aten.div.Tensor) and not all(_along_features(a, rows) for a in others):
            return None
    return mm, list(reversed(chain))


def _chain_input(op):
    """The argument of an add/sub/mul/div/neg that carries the running value (the first node argument that is
    not a broadcast constant), or None for any other op."""
    if op.target is aten.neg.default:
        return op.args[0]
    if op.target in (aten.add.Tensor, aten.sub.Tensor):
        if op.kwargs.get("alpha", 1) != 1:
            return None
        return _pick(op)
    if op.target is aten.mul.Tensor:
        return _pick(op)
    if op.target is aten.div.Tensor:  # only the numerator may carry the matmul
        return op.args[0] if isinstance(op.args[0], torch.fx.Node) else None
    return None


def _pick(op):
    """The one node argument that a matmul flows into (None when neither or both do)."""
    nodes = [a for a in op.args[:2] if isinstance(a, torch.fx.Node)]
    carriers = [a for a in nodes if _reaches_matmul(a)]
    return carriers[0] if len(carriers) == 1 else None


def _reaches_matmul(v) -> bool:
    seen, stack = set(), [v]
    while stack:
        u = stack.pop()
        if u in seen or not isinstance(u, torch.fx.Node):
            continue
        seen.add(u)
        if u.op == "call_function" and u.target in (aten.mm.default, aten.addmm.default):
            return True
        stack += u.all_input_nodes
    return False


def _rewrite_row_sum(graph, red, mm, chain) -> None:
    if mm.target is aten.addmm.default:
        bias, x, b = mm.args[0], mm.args[1], mm.args[2]
    else:
        bias, (x, b) = None, mm.args[:2]
    m, n = _shape(mm)
    keep = red.target is aten.sum.dim_IntList and (red.args[2] if len(red.args) > 2 else red.kwargs.get("keepdim",
                                                                                                       False))
    with graph.inserting_before(red):
        # the features' weights: a row of the chain's factors times B^T, (1, N) x (N, K) -> (1, K); as a matmul
        # the (N, K) weight is read along its rows (a column sum over it would read it with a stride of K)
        f = _add(graph, aten.full.default, [[1, n], 1.0], {"dtype": torch.float32, "device": torch.device("meta")})
        for op in chain:
            if op.target is aten.neg.default:
                f = _add(graph, aten.neg.default, [f])
            elif op.target in (aten.mul.Tensor, aten.div.Tensor):
                other = next(a for a in op.args if a is not _chain_input(op))
                f = _add(graph, op.target, [f, _feature_row(graph, other)])
        w_row = _add(graph, aten.mm.default, [f, _add(graph, aten.permute.default, [b, [1, 0]])])
        prod = _add(graph, aten.mul.Tensor, [x, w_row])
        total = _add(graph, aten.sum.dim_IntList, [prod, [1], keep])
        # the additive part: the chain with the matmul's product replaced by the bias (or zero), summed by row
        value = bias if bias is not None else 0.0
        for op in chain:
            value = _apply(graph, op, value)
        if isinstance(value, torch.fx.Node):
            full = _add(graph, aten.expand.default, [value, [m, n]]) if _shape(value) != (m, n) else value
            total = _add(graph, aten.add.Tensor, [total, _add(graph, aten.sum.dim_IntList, [full, [1], keep])])
        elif value != 0:
            total = _add(graph, aten.add.Tensor, [total, float(value) * n])
    _replace(graph, red, total)


def _feature_row(graph, other):
    """A factor constant along the rows, as a (1, N)-broadcastable value: numbers as they are."""
    if not isinstance(other, torch.fx.Node) or len(_shape(other)) <= 1:
        return other
    return _add(graph, aten.view.default, [other, [_shape(other)[-1]]])  # (1, N) -> (N,)


def _apply(graph, op, value):
    """op with its running value replaced by `value` (a node or a number), as a node or a number."""
    on = _chain_input(op)
    if op.target is aten.neg.default:
        return -value if not isinstance(value, torch.fx.Node) else _add(graph, aten.neg.default, [value])
    other = next(a for a in op.args if a is not on)
    first = op.args[0] is on
    if not isinstance(value, torch.fx.Node) and not isinstance(other, torch.fx.Node):
        return {aten.add.Tensor: lambda: value + other, aten.sub.Tensor: lambda: value - other if first
                else other - value, aten.mul.Tensor: lambda: value * other, aten.div.Tensor: lambda: value / other}[
            op.target]()
    if isinstance(value, torch.fx.Node):
        return _add(graph, op.target, [value, other] if first else [other, value])
    # a number and a node: written with the node first (aten's Tensor overloads take a tensor first)
    if op.target is aten.add.Tensor:
        return _add(graph, aten.add.Tensor, [other, value]) if value != 0 else other
    if op.target is aten.sub.Tensor:
        if not first:
            return _add(graph, aten.sub.Tensor, [other, value])
        neg = _add(graph, aten.neg.default, [other])
        return _add(graph, aten.add.Tensor, [neg, value]) if value != 0 else neg
    if value == 0:  # 0 * c, 0 / c
        return 0.0
    if op.target is aten.mul.Tensor:
        return _add(graph, aten.mul.Tensor, [other, value])
    return _add(graph, aten.mul.Tensor, [_add(graph, aten.reciprocal.default, [other]), value])


def matvec_to_reduction(gm: torch.fx.GraphModule) -> bool:
    """mm (M, K) x (K, 1) [+ bias] -> sum over K of the broadcast product [+ bias]."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.mm.default, aten.addmm.default):
            continue
        out = _shape(node)
        if out[1] != 1 or node.meta["val"].dtype != torch.float32 or node.kwargs:
            continue
        bias, (x, v) = (node.args[0], node.args[1:3]) if node.target is aten.addmm.default else (None, node.args)
        with graph.inserting_before(node):
            row = _add(graph, aten.view.default, [v, [1, _shape(v)[0]]])  # (K, 1) -> (1, K)
            total = _add(graph, aten.sum.dim_IntList, [_add(graph, aten.mul.Tensor, [x, row]), [1], True])
            if bias is not None:
                total = _add(graph, aten.add.Tensor, [total, bias])
        _replace(graph, node, total)
        return True
    return False


def outer_product(gm: torch.fx.GraphModule) -> bool:
    """mm / bmm / addmm over K = 1 -> a[..., :, 0:1] * b[..., 0:1, :] (one product an element, as the matmul's)."""
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.mm.default, aten.bmm.default, aten.addmm.default):
            continue
        bias, (a, b) = (node.args[0], node.args[1:3]) if node.target is aten.addmm.default else (None, node.args[:2])
        if _shape(a)[-1] != 1 or node.kwargs:
            continue
        with graph.inserting_before(node):
            total = _add(graph, aten.mul.Tensor, [a, b])  # (.., M, 1) * (.., 1, N) -> (.., M, N)
            if bias is not None:
                total = _add(graph, aten.add.Tensor, [total, bias])
        _replace(graph, node, total)
        return True
    return False
