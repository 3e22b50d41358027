"""Partition an op graph into kernels: what is stored, which kernel computes it, in which order.

Usage: plan = schedule(graph, target="cuda"); plan.kernels (in launch order), plan.buffers, plan.allocations

Every reduction, scan, matmul and convolution (a "home" value) is computed by a kernel of its own kind;
reductions over the same elements and dims share one kernel. Everything else is inlined into the kernels
that read it. A value the graph returns (or writes back into a buffer) is stored by the kernel that can
compute it: the last home kernel it reads from (a matmul's or convolution's epilogue, a reduction's
per-row or per-element output), else a pointwise kernel of its own. Fusion is optimistic: when a kernel
needs a home value at indices it does not hold (a transpose of a matmul's result, a pooling window over
a convolution's output, a row of another reduction), the writer raises FusionError and the schedule is
rebuilt with that value stored by its kernel and read back by a later one.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import torch

from agent_client.lowering import kernels as K
from agent_client.lowering import ops
from agent_client.lowering.index import contiguous_strides
from agent_client.lowering.writer import Buffer, FusionError, LoweringError, shape
from agent_client.opgraph.graph import OpGraph, TensorMeta

_HOME_KINDS = ("reduction", "scan", "template", "select", "scatter")


@dataclass
class Plan:
    kernels: list[K.Kernel]
    buffers: dict  # fx node -> Buffer (graph inputs and every stored value)
    allocations: list  # fx nodes whose buffers the forward allocates, in order
    outputs: list  # fx nodes (or Python values) returned, in order
    mutations: list  # (attribute path, fx node) written back after the kernels
    rebuilds: int = 0  # schedules rebuilt after a FusionError


@dataclass
class _Group:
    kind: str  # "pointwise" | "reduction" | "scan" | "gemm" | "conv"
    anchors: list  # the reductions / the scan / the matmul or convolution it computes
    outputs: list = field(default_factory=list)  # what it stores
    key: tuple = ()  # reductions: (input shape, dims)
    strategy: str = "rows"  # reductions: "rows", "column" or "split" (kernels/reduction.py chooses)


def _meta(node) -> TensorMeta:
    v = node.meta["val"]
    shp = tuple(int(s) for s in v.shape)
    return TensorMeta(shp, str(v.dtype).removeprefix("torch."), contiguous_strides(shp))


def inputs_of(node) -> list:
    out = []
    for a in list(node.args) + list(node.kwargs.values()):
        if isinstance(a, torch.fx.Node):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out += [x for x in a if isinstance(x, torch.fx.Node)]
    return out


def _is_home(node) -> bool:
    return ops.kind_of(node) in _HOME_KINDS


def _reads(roots, stored: set) -> set:
    """Stored values, homes and graph inputs that computing `roots` inline touches (roots excluded)."""
    found, seen, stack = set(), set(), []
    for r in roots:
        stack += inputs_of(r)
    while stack:
        a = stack.pop()
        if a in seen:
            continue
        seen.add(a)
        if a in stored or a.op == "placeholder" or _is_home(a):
            found.add(a)
        else:
            stack += inputs_of(a)
    return found


class _Rebuild(Exception):
    pass


class _Scheduler:
    def __init__(self, graph: OpGraph, target: str = "cuda", options: dict | None = None):
        self.graph = graph
        self.target = target
        self.options = options or {}
        self.nodes = [n for n in graph.gm.graph.nodes if n.op == "call_function"]
        self.order = {n: i for i, n in enumerate(self.nodes)}
        self.pinned: set = set()  # homes that must be stored
        self.detached: set = set()  # (node, anchor): node may not share a kernel with anchor
        self._above: dict = {}  # node -> the homes it depends on
        for n in self.nodes:
            if ops.kind_of(n) == "random":
                raise LoweringError(f"{n.target} draws random numbers (node {n.name}): a stochastic "
                                    "reference cannot be matched by any candidate")
        for n in self.nodes:
            kind = ops.kind_of(n)
            if kind == "unsupported":
                raise LoweringError(f"no lowering for {n.target} (node {n.name})")

    def needed(self) -> list:
        out = [o for o in self.graph.outputs if isinstance(o, torch.fx.Node)]
        out += [v for _, v in self.graph.mutations]
        return list(dict.fromkeys(out))

    def groups(self) -> list[_Group]:
        needed = self.needed()
        groups: list[_Group] = []
        home_of: dict = {}
        for n in self.nodes:
            kind = ops.kind_of(n)
            if kind == "template":
                g = _Group("conv" if ops.packet(n) is ops.aten.convolution else "gemm", [n])
            elif kind == "scan":
                g = _Group("scan", [n])
            elif kind == "select":  # topk stores its values and indices; readers load them
                g = _Group("topk", [n], [u for u in n.users if u.target is operator.getitem])
            elif kind == "scatter":  # a copy of the tensor, then the written elements; readers load it
                g = _Group("scatter", [n], [n])
            elif kind == "reduction":
                _, x, dims, _ = K.reduce_info(n)
                key = (shape(x), tuple(dims))
                g = next(
                    (q for q in groups if q.kind == "reduction" and q.key == key
                     and not any((n, a) in self.detached for a in q.anchors) and not self._through_other(n, q)),
                    None)
                if g is not None:
                    g.anchors.append(n)
                    home_of[n] = g
                    continue
                g = _Group("reduction", [n], key=key)
            else:
                continue
            groups.append(g)
            home_of[n] = g
        self._channel_reductions_into_convs(groups, home_of)
        stored = set(needed) | self.pinned
        already = {o for g in groups for o in g.outputs}  # topk's values and indices
        # a value a kernel must read from memory (a convolution's computed input) is stored like a result
        loaded = sorted((p for p in self.pinned if not _is_home(p) and p not in needed), key=self.order.get)
        for n in needed + loaded:
            if n in already:
                continue
            if n in home_of:
                home_of[n].outputs.append(n)
                continue
            target = None
            for h in sorted(self._homes_read(n, stored), key=self.order.get, reverse=True):
                if (n, h) not in self.detached \
                        and home_of[h].kind not in ("topk", "scatter") and self._fits(n, home_of[h]):
                    target = home_of[h]
                    break
            if target is None:
                groups.append(_Group("pointwise", [], [n]))
            else:
                target.outputs.append(n)
        # a home read by any other kernel is stored by its own
        for _ in range(len(groups) + 1):
            stored = {o for g in groups for o in g.outputs}
            changed = False
            for g in groups:
                roots = g.outputs + g.anchors
                for h in _reads(roots, stored):
                    if h in home_of and home_of[h].kind in ("topk", "scatter"):
                        continue  # read through its stored values and indices
                    if h in home_of and home_of[h] is not g and h not in home_of[h].outputs:
                        home_of[h].outputs.append(h)
                        changed = True
            for h in self.pinned:
                if h in home_of and h not in home_of[h].outputs:
                    home_of[h].outputs.append(h)
                    changed = True
            if not changed:
                break
        return self._ordered(groups)

    def _channel_reductions_into_convs(self, groups: list, home_of: dict) -> None:
        """A reduction over the channels of a convolution's output (a softmax's, a min over channels), computed
        from that convolution alone, joins the convolution's kernel where one tile holds every channel: the
        convolution's output then need not be stored and read back."""
        for g in [g for g in groups if g.kind == "reduction" and g.key[1] == (1,)]:  # never a split: C fits a tile
            above = {h for a in g.anchors for h in self._homes_above(a)} - set(g.anchors)
            conv = next(iter(above)) if len(above) == 1 else None
            cg = home_of.get(conv)
            if cg is None or cg.kind != "conv" or cg.anchors[0] is not conv or g.key[0] != shape(conv) \
                    or not K.holds_channels(conv, self.options.get("conv_impl")) \
                    or any((a, conv) in self.detached or a in self.pinned for a in g.anchors):
                continue
            cg.anchors += g.anchors
            for a in g.anchors:
                home_of[a] = cg
            groups.remove(g)

    def _homes_above(self, node) -> frozenset:
        """Every home value `node` depends on, at any distance."""
        if not self._above:  # one pass in graph order (inputs come first), no recursion on deep graphs
            for n in self.graph.gm.graph.nodes:
                found = set()
                for a in inputs_of(n):
                    found |= self._above.get(a, frozenset())
                    if _is_home(a):
                        found.add(a)
                self._above[n] = frozenset(found)
        return self._above.get(node, frozenset())

    def _through_other(self, node, group: _Group) -> bool:
        """Whether `node` depends on the group's reductions through a home of another kernel (a matmul between
        two layer norms): one kernel cannot hold both ends."""
        anchors = set(group.anchors)
        return any(h not in anchors and anchors & self._homes_above(h) for h in self._homes_above(node))

    def _homes_read(self, node, stored) -> list:
        out, stack, seen = [], inputs_of(node), set()
        while stack:
            a = stack.pop()
            if a in seen:
                continue
            seen.add(a)
            if _is_home(a):
                out.append(a)
            elif a not in stored and a.op != "placeholder":
                stack += inputs_of(a)
        return out

    def _fits(self, node, g: _Group) -> bool:
        numel = math.prod(shape(node))
        if g.kind == "reduction":
            full = math.prod(g.key[0])
            rows = full // max(1, math.prod(g.key[0][d] for d in g.key[1]))
            return numel in (full, rows)
        full = math.prod(shape(g.anchors[0]))
        if g.kind == "conv" and len(g.anchors) > 1:  # with reductions over its channels: per pixel too
            return numel in (full, full // shape(g.anchors[0])[1])
        return numel == full

    def _ordered(self, groups) -> list[_Group]:
        produced = {o: g for g in groups for o in g.outputs}
        stored = set(produced)
        deps = {}
        for g in groups:
            reads = _reads(g.outputs + g.anchors, stored)
            deps[id(g)] = {id(produced[h]) for h in reads if h in produced and produced[h] is not g}
        order, done, pending = [], set(), list(groups)
        while pending:
            ready = [g for g in pending if deps[id(g)] <= done]
            if not ready:  # a cycle: give one attached output a kernel of its own and rebuild
                for g in pending:
                    victim = next((o for o in g.outputs if o not in g.anchors), None)
                    if g.anchors and victim is not None:
                        self.detached |= {(victim, a) for a in g.anchors}
                        raise _Rebuild()
                raise LoweringError("the kernels of this graph depend on each other in a cycle")
            for g in ready:
                order.append(g)
                done.add(id(g))
                pending.remove(g)
        return order

    def strategy(self, g: _Group, limits) -> str:
        """How a group of reductions runs (kernels/reduction.py's reduction_strategy): its elements are read
        twice in one program when it stores values of their size or reduces a reduction of its own."""
        full, dims = g.key
        numel = math.prod(full)
        anchors = set(g.anchors)
        passes = 2 if any(math.prod(shape(o)) == numel and o not in anchors for o in g.outputs) \
            or any(anchors & self._homes_above(a) for a in g.anchors) else 1
        kinds = [K.reduce_info(a)[0] for a in g.anchors]
        return K.reduction_strategy(full, list(dims), kinds, passes, limits)

    def learn(self, exc: FusionError, groups) -> None:
        """FusionError(node) while `exc.culprit` was computed: store node; keep culprit out of its kernel."""
        node, culprit = exc.node, getattr(exc, "culprit", None)
        self.pinned.add(node)
        home = next((g for g in groups if node in g.anchors), None)
        if culprit is not None and home is not None:
            self.detached |= {(culprit, a) for a in home.anchors}
        elif culprit is not None:
            self.detached.add((culprit, node))


def _input_var(gi) -> str:
    if gi.kind == "input":
        return f"in{gi.ref}"
    return "p_" + "".join(c if c.isalnum() else "_" for c in str(gi.ref))


def schedule(graph: OpGraph, target: str = "cuda", options: dict | None = None, prefix: str = "") -> Plan:
    options = options or {}
    s = _Scheduler(graph, target, options)
    for attempt in range(4 * len(s.nodes) + 8):
        try:
            groups = s.groups()
        except _Rebuild:
            continue
        buffers: dict = {}
        for node in graph.gm.graph.nodes:
            if node.op == "placeholder" and graph.inputs[node.name].meta is not None:
                buffers[node] = Buffer(_input_var(graph.inputs[node.name]), graph.inputs[node.name].meta)
        allocations = []
        for g in groups:
            for o in g.outputs:
                buffers[o] = Buffer(f"buf{len(allocations)}", _meta(o))
                allocations.append(o)
        limits = K.row_limits(target, options)
        for g in groups:  # a split reduction's two-level form stores each row's results, whoever reads them
            if g.kind == "reduction":
                g.strategy = s.strategy(g, limits)
            for red in g.anchors if g.strategy == "split" else []:
                if red not in buffers:
                    buffers[red] = Buffer(f"buf{len(allocations)}", _meta(red))
                    allocations.append(red)
        try:
            kernels = [k for i, g in enumerate(groups)
                       for k in _generate(g, f"{prefix}k{i}", buffers, target, options, limits)]
        except FusionError as exc:
            s.learn(exc, groups)
            continue
        return Plan(kernels, buffers, allocations, list(graph.outputs), list(graph.mutations), attempt)
    raise LoweringError("no schedule found: the fusion rules did not settle")


def _generate(g: _Group, tag: str, buffers, target, options, limits) -> list[K.Kernel]:
    name = f"_{tag}_{g.kind}"
    if g.kind == "pointwise":
        return [K.pointwise_kernel(name, g.outputs, buffers, target)]
    if g.kind == "reduction" and g.strategy == "split":
        full, dims = g.key
        return K.split_kernels(name, full, list(dims), g.anchors, g.outputs, buffers, target, limits)
    if g.kind == "reduction":
        full, dims = g.key
        return [K.reduction_kernel(name, full, list(dims), g.anchors, g.outputs, buffers, target, limits)]
    if g.kind == "scan":
        return [K.scan_kernel(name, g.anchors[0], g.outputs, buffers, target, limits)]
    if g.kind == "topk":
        return [K.topk_kernel(name, g.anchors[0], g.outputs, buffers, target)]
    if g.kind == "scatter":
        return K.scatter_kernels(name, g.anchors[0], buffers, target)
    if g.kind == "gemm":
        return K.gemm_kernels(name, g.anchors[0], g.outputs, buffers, target)
    return [K.conv_kernel(name, g.anchors[0], g.outputs, buffers, target, options.get("conv_impl"), g.anchors[1:])]
