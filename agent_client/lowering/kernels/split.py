"""Split rows: a group of reductions over rows too long (or too few) for one program each, the row cut into
chunks that several programs reduce. Two forms, chosen at run time by the group's `form` tunable ("split" by
default, the search reaches "coop"; kernels/coop.py says what an H100 measured of each):

- "split" (two levels): per round of dependent reductions, a kernel of partial results per chunk and one
  that combines a row's partials; then the outputs the size of the input, in a pointwise kernel that reads
  the rows' results. Reads the row once per round, plus once for the outputs.
- "coop" (cooperative, kernels/coop.py): persistent programs each hold one chunk of a row in registers,
  exchange their partial results, and write the outputs from the registers: one read and one write.

Two reductions of a reduction's result need no round of their own (a softmax, a norm read the row once):
- sum(exp(A - B)), B a per-row value of earlier reductions (a softmax's max): each chunk gives its max m_c of
  A and s_c = sum(exp(A - m_c)); the row's sum is sum_c s_c exp(m_c - B);
- sum((A - B)^2) (a norm's centred squares): each chunk gives its mean u_c of A and M2_c = sum((A - u_c)^2);
  the row's sum is sum_c M2_c + n_c (u_c - B)^2, for any B (Chan's merge: no cancellation).
A is free of the group's reductions; the partials come in the round of B's reductions, combined after them.

Usage: kernels = split_kernels("k1", full_shape, dims, reductions, outputs, buffers, "cuda", limits)
"""

from __future__ import annotations

import math

from agent_client.lowering import ops
from agent_client.lowering.index import Index, delinearize, linearize
from agent_client.lowering.kernels.common import (
    INT32_MAX,
    Kernel,
    evaluate,
    finish,
    loadable,
    pow2,
    pow2_range,
    tune,
)
from agent_client.lowering.kernels.pointwise import pointwise_kernel
from agent_client.lowering.kernels.reduction import RowLimits, _acc_type, _combine, _init_lit, reduce_info
from agent_client.lowering.writer import Buffer, KernelWriter, LoweringError, shape

_FN = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min", "any": "tl.max", "all": "tl.min"}
_STOP = ("reduction", "scan", "template", "select", "scatter")  # stored by their own kernels


def reduce_code(kind: str, value: str, axis: int) -> str:
    fn = _FN.get(kind)
    return f"{fn}({value}, {axis})" if fn else f"tl.reduce({value}, {axis}, _kkb_mul)"


def _group_deps(node, group: set) -> set | None:
    """The group's reductions `node` depends on (through values the group's kernels compute inline), or None
    when it also reads a tensor (an input, a stored value): then it is not a per-row value."""
    found, seen, stack = set(), set(), [node]
    while stack:
        a = stack.pop()
        if a in seen:
            continue
        seen.add(a)
        if a in group:
            found.add(a)
        elif a.op != "call_function" or ops.kind_of(a) in _STOP:
            return None
        else:
            stack += a.all_input_nodes
    return found


def _free_of(node, group: set) -> bool:
    """Whether `node` reads none of the group's reductions."""
    seen, stack = set(), [node]
    while stack:
        a = stack.pop()
        if a in seen:
            continue
        seen.add(a)
        if a in group:
            return False
        if a.op == "call_function" and ops.kind_of(a) not in _STOP:
            stack += a.all_input_nodes
    return True


class Group:
    """What every kernel of a split group shares: rows, rounds, merged reductions, outputs, word slots."""

    def __init__(self, name, full_shape, dims, reductions, outputs, buffers):
        self.name, self.full_shape, self.dims = name, tuple(full_shape), list(dims)
        self.outer = [k for k in range(len(full_shape)) if k not in dims]
        self.xn = math.prod(full_shape[k] for k in self.outer)
        self.rn = math.prod(full_shape[k] for k in dims)
        self.reductions, self.outputs, self.buffers = list(reductions), list(outputs), buffers
        numel = self.xn * self.rn
        self.full_outs = [o for o in outputs if math.prod(shape(o)) == numel and numel != self.xn]
        self.row_outs = [o for o in outputs if o not in self.full_outs and o not in self.reductions]
        for node in self.row_outs:
            if math.prod(shape(node)) != self.xn:
                raise LoweringError(f"{node.name}: shape {shape(node)} fits neither the rows nor the elements "
                                    f"of split reduction {name}")
        self.info = {r: reduce_info(r) for r in self.reductions}
        self.acc_t = {r: _acc_type(self.info[r][0], r, ops.ctype_of(self.info[r][1].meta["val"].dtype))
                      for r in self.reductions}
        self.merged = {r: m for r in self.reductions if (m := self._merge(r)) is not None}
        self.rounds = self._rounds()
        self.slots: dict = {}  # reduction -> its words' rows in the workspace (two for a merged one), a
        used = 0  #               round's rows together
        for r in (r for reds in self.rounds for r in reds):
            self.slots[r] = list(range(used, used + (2 if r in self.merged else 1)))
            used += len(self.slots[r])
        self.wide_index = numel > INT32_MAX or any(b.meta is not None and b.meta.numel > INT32_MAX
                                                   for b in buffers.values())

    # ---- analysis --------------------------------------------------------------------------------
    def _merge(self, red):
        """("lse" | "var", A, B) when `red` is sum(exp(A - B)) or sum((A - B)^2) with A free of the group's
        reductions and B a per-row value of them; else None."""
        kind, x, _, _ = self.info[red]
        if kind != "sum" or self.acc_t[red] != "f32" or str(x.meta["val"].dtype) != "torch.float32":
            return None
        group = set(self.reductions)
        p = ops.packet(x)
        if p in (ops.aten.exp, ops.prims.exp):
            form, diff = "lse", x.args[0]
        elif p is ops.aten.mul and len(x.args) == 2 and x.args[0] is x.args[1] or p is ops.aten.pow and len(x.args) == 2 and x.args[1] in (2, 2.0):
            form, diff = "var", x.args[0]
        else:
            return None
        if not hasattr(diff, "op") or ops.packet(diff) not in (ops.aten.sub, ops.prims.sub) or diff.kwargs:
            return None
        a, b = diff.args[0], diff.args[1]
        for first, second in ((a, b), (b, a)) if form == "var" else ((a, b),):
            if not hasattr(first, "op") or not hasattr(second, "op"):
                continue
            deps = _group_deps(second, group)
            if deps and _free_of(first, group) and shape(first) == self.full_shape:
                return form, first, second
        return None

    def _rounds(self) -> list[list]:
        """The reductions by round: one of a reduction's result comes a round later, a merged one in the
        round of its B's reductions (combined after them)."""
        group, level = set(self.reductions), {}
        for red in self.reductions:  # graph order: a reduction's inputs come before it
            if red in self.merged:
                deps = _group_deps(self.merged[red][2], group) or set()
                level[red] = max((level[d] for d in deps if d in level), default=0)
                continue
            deps, seen, stack = set(), set(), list(red.all_input_nodes)
            while stack:
                a = stack.pop()
                if a in seen:
                    continue
                seen.add(a)
                if a in group:
                    deps.add(a)
                elif a.op == "call_function" and ops.kind_of(a) not in _STOP:
                    stack += a.all_input_nodes
            level[red] = 1 + max((level[d] for d in deps if d in level), default=-1)
        out = []
        for k in range(max(level.values()) + 1):  # plain reductions first: a merged one reads them
            reds = [r for r in self.reductions if level[r] == k]
            out.append([r for r in reds if r not in self.merged] + [r for r in reds if r in self.merged])
        return out

    # ---- indices ---------------------------------------------------------------------------------
    def xpart(self) -> list[Index]:
        return delinearize(Index.var("xi", self.xn), tuple(self.full_shape[k] for k in self.outer))

    def full_idx(self, xpart, rvar: str | None) -> list[Index]:
        """The input's indices at the row `xpart` and the reduced position `rvar` (None: position 0)."""
        rdims = tuple(self.full_shape[k] for k in self.dims)
        rpart = delinearize(Index.var(rvar, self.rn), rdims) if rvar else [Index.of(0)] * len(rdims)
        out, xs, rs = [], iter(xpart), iter(rpart)
        for k in range(len(self.full_shape)):
            out.append(next(rs) if k in self.dims else next(xs))
        return out

    def reduced_idx(self, xpart, keep: bool) -> list[Index]:
        out, xs = [], iter(xpart)
        for k in range(len(self.full_shape)):
            if k in self.dims:
                if keep:
                    out.append(Index.of(0))
            else:
                out.append(next(xs))
        return out

    def row_index(self, xpart, node) -> list[Index]:
        flat = linearize(self.reduced_idx(xpart, False), tuple(self.full_shape[k] for k in self.outer))
        return delinearize(flat, shape(node))

    # ---- values ----------------------------------------------------------------------------------
    def set_home(self, w: KernelWriter, red, value: str, xpart) -> None:
        """The row's result of `red` (in its accumulator type) as the value consumers read."""
        kind, _, _, keep = self.info[red]
        acc_t, out_t = self.acc_t[red], ops.ctype_of(red.meta["val"].dtype)
        res, res_t = value, acc_t
        if kind in ("any", "all"):
            res, res_t = w.bind(f"({res} != 0)"), "i1"
        res = w.bind(w.round_to(w.cast(res, res_t, out_t), str(red.meta["val"].dtype).removeprefix("torch.")))
        w.homes[red] = (self.reduced_idx(xpart, keep), res, out_t)

    def merged_total(self, w: KernelWriter, red, first: str, second: str, counts: str, axis: int,
                     xpart) -> str:
        """The row's sum of a merged reduction from its chunks' two partials (vectors along `axis`) and the
        chunks' element counts; B is evaluated at the row (it is per-row)."""
        form, _, b = self.merged[red]
        bv, bc = evaluate(w, b, self.full_idx(xpart, None), red)
        bv = w.cast(bv, bc, "f32")
        if form == "lse":  # first: chunk maxima, second: sums of exp(A - max)
            terms = f"tl.where({first} > -float(\"inf\"), {second} * tl.exp({first} - {bv}), 0.0)"
        else:  # first: chunk means, second: centred sums of squares
            terms = f"{second} + {counts} * ({first} - {bv}) * ({first} - {bv})"
        return w.bind(f"tl.sum({terms}, {axis})")

    def coop_ready(self) -> bool:
        """The cooperative form applies: 32-bit partials, and elements read more than once in one program."""
        return all(self.acc_t[r] in ("f32", "i32") for r in self.reductions) and (
            bool(self.full_outs) or len(self.rounds) > 1 or bool(self.merged))


def split_kernels(name: str, full_shape: tuple, dims: list[int], reductions: list, outputs: list, buffers: dict,
                  target: str, limits: RowLimits) -> list[Kernel]:
    """Every reduction of the group has a buffer (the two-level form stores each row's results)."""
    from agent_client.lowering.kernels.coop import coop_kernel

    g = Group(name, full_shape, dims, reductions, outputs, buffers)
    kernels: list[Kernel] = []
    when = None
    if g.coop_ready():
        kernels.append(coop_kernel(g, target))
        when = f"not {name}_use_coop"
    return kernels + _two_level_kernels(g, target, when)


# ---- two levels ----------------------------------------------------------------------------------------
def _two_level_kernels(g: Group, target: str, when: str | None) -> list[Kernel]:
    n = g.name
    split_default = min(1024, pow2(max(1, 1024 // g.xn)), pow2(-(-g.rn // 4096)))
    split, t_s, s_s = tune(n, "SPLIT", split_default, [s for s in pow2_range(1, 1024) if s <= pow2(g.rn)])
    rb, t_r, s_r = tune(n, "RBLOCK", min(4096 if target == "cpu" else 2048, pow2(-(-g.rn // split_default))),
                        [256, 512, 1024, 2048, 4096])
    nw, t_w, s_w = tune(n, "num_warps", 8, [2, 4, 8, 16])
    kernels = []
    for k, reds in enumerate(g.rounds):
        part = _part_kernel(g, k, reds, split, rb, nw)
        if k == 0:
            part.tunables, part.space = {**t_s, **t_r, **t_w}, {**s_s, **s_r, **s_w}
        kernels += [part, _combine_kernel(g, k, reds, split, k == len(g.rounds) - 1)]
    if g.full_outs:
        kernels.append(pointwise_kernel(f"{n}_out", g.full_outs, g.buffers, target))
    for k in kernels:
        k.when = when
    return kernels


def _partial_name(g: Group, red, second: bool = False) -> str:
    return f"{g.name}_p{g.slots[red][1 if second else 0]}"


def _part_kernel(g: Group, k: int, reds: list, split: str, rb: str, nw: str) -> Kernel:
    """Each program: one chunk of one row; per lane, a running result (a merged reduction: a running max
    and rescaled sum of exp, or Welford's count, mean and centred squares), then the chunk's."""
    w = KernelWriter(loadable(g.buffers, reds), f"{g.name}_part{k}")
    w.tile_var = "ri"
    w.emit("xi = tl.program_id(0) // SPLIT")
    w.emit("ci = tl.program_id(0) % SPLIT")
    if g.wide_index:
        w.emit("xi = xi.to(tl.int64)")
    for j, red in enumerate(reds):
        kind, acc_t = g.info[red][0], g.acc_t[red]
        if red in g.merged:
            lo = '-float("inf")' if g.merged[red][0] == "lse" else "0.0"
            w.emit(f"a{j} = tl.full([RBLOCK], {lo}, tl.float32)")
            w.emit(f"b{j} = tl.zeros([RBLOCK], tl.float32)")
            w.emit(f"c{j} = tl.zeros([RBLOCK], tl.float32)")
        else:
            w.emit(f"a{j} = tl.full([RBLOCK], {_init_lit(kind, acc_t)}, {ops.TL_TYPE[acc_t]})")
    w.emit("for roff in range(0, CHUNK, RBLOCK):")
    w.indent += 1
    w.push()
    w.emit("ri = ci * CHUNK + roff + tl.arange(0, RBLOCK)")
    w.emit(f"rmask = (ri < {g.rn}) & (roff + tl.arange(0, RBLOCK) < CHUNK)")
    w.mask = "rmask"
    full = g.full_idx(g.xpart(), "ri")
    for j, red in enumerate(reds):
        kind, x, _, _ = g.info[red]
        if red in g.merged:
            form, a, _ = g.merged[red]
            v, c = evaluate(w, a, full, red)
            v = w.bind(w.cast(v, c, "f32"))
            if form == "lse":  # one exp: of exp(a_old - a_new) and exp(v - a_new) one is 1; -inf adds nothing
                live = w.bind(f"rmask & ({v} > -float(\"inf\"))")
                d = w.bind(f"tl.where({live}, {v} - a{j}, 0.0)")
                e = w.bind(f"tl.exp(-tl.abs({d}))")
                w.emit(f"b{j} = tl.where({live}, tl.where({d} > 0, b{j} * {e} + 1.0, b{j} + {e}), b{j})")
                w.emit(f"a{j} = tl.where({live}, tl.maximum(a{j}, {v}), a{j})")
            else:  # Welford: a count, b mean, c centred squares
                w.emit(f"c{j}_n = tl.where(rmask, a{j} + 1.0, a{j})")
                d = w.bind(f"tl.where(rmask, {v} - b{j}, 0.0)")
                w.emit(f"b{j} = b{j} + {d} / tl.maximum(c{j}_n, 1.0)")
                w.emit(f"c{j} = c{j} + {d} * tl.where(rmask, {v} - b{j}, 0.0)")
                w.emit(f"a{j} = c{j}_n")
        else:
            v, c = evaluate(w, x, full, red)
            v = w.bind(f"tl.where(rmask, {w.cast(v, c, g.acc_t[red])}, {_init_lit(kind, g.acc_t[red])})")
            w.emit(f"a{j} = {_combine(kind, f'a{j}', v)}")
    w.pop()
    w.indent -= 1
    host = []
    for j, red in enumerate(reds):
        firsts = [_partial_name(g, red)] + ([_partial_name(g, red, True)] if red in g.merged else [])
        for p in firsts:
            w.args[p] = Buffer(p, None)
        if red in g.merged and g.merged[red][0] == "lse":
            w.emit(f"m{j} = tl.max(a{j}, 0)")
            w.emit(f"s{j} = tl.sum(tl.where(a{j} > -float(\"inf\"), b{j} * tl.exp(a{j} - m{j}), 0.0), 0)")
            values = [f"m{j}", f"s{j}"]
        elif red in g.merged:  # the chunk's mean and centred squares from its lanes' (Chan)
            w.emit(f"n{j} = tl.sum(a{j}, 0)")
            w.emit(f"u{j} = tl.sum(a{j} * b{j}, 0) / tl.maximum(n{j}, 1.0)")
            w.emit(f"q{j} = tl.sum(c{j} + a{j} * (b{j} - u{j}) * (b{j} - u{j}), 0)")
            values = [f"u{j}", f"q{j}"]
        else:
            values = [reduce_code(g.info[red][0], f"a{j}", 0)]
        dtype = {"f32": "float32", "f64": "float64", "i64": "int64", "i32": "int32"}[g.acc_t[red]]
        for p, value in zip(firsts, values):
            w.emit(f"tl.store({p} + tl.program_id(0), {value})")
            host.append(f"{p} = torch.empty(({g.xn} * {split},), device=dev, dtype=torch.{dtype})")
    note = (f"split reduction of {g.rn} over {g.xn} rows, round {k}: partial {', '.join(r.name for r in reds)} "
            f"of each chunk")
    return Kernel(w.name, finish(w, ["SPLIT", "CHUNK", "RBLOCK"]), list(w.args), f"({g.xn} * {split},)",
                  {"SPLIT": split, "CHUNK": f"triton.cdiv({g.rn}, {split})", "RBLOCK": rb, "num_warps": nw},
                  kind="reduction", note=note, host=host)


def _combine_kernel(g: Group, k: int, reds: list, split: str, last: bool) -> Kernel:
    stored = reds + (g.row_outs if last else [])
    w = KernelWriter(loadable(g.buffers, stored), f"{g.name}_comb{k}")
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    w.emit(f"xmask = xi < {g.xn}")
    w.emit("si = tl.arange(0, SBLOCK)[None, :]")
    w.emit(f"counts = tl.minimum(tl.maximum({g.rn} - si * CHUNK, 0), CHUNK).to(tl.float32)")
    w.mask = "xmask"
    xpart = g.xpart()
    for red in reds:
        kind = g.info[red][0]
        names = [_partial_name(g, red)] + ([_partial_name(g, red, True)] if red in g.merged else [])
        for p in names:
            w.args[p] = Buffer(p, None)
        if red in g.merged:
            lo = '-float("inf")' if g.merged[red][0] == "lse" else "0.0"
            first = w.bind(f"tl.load({names[0]} + xi * SPLIT + si, mask=xmask & (si < SPLIT), other={lo})")
            second = w.bind(f"tl.load({names[1]} + xi * SPLIT + si, mask=xmask & (si < SPLIT), other=0.0)")
            total = g.merged_total(w, red, first, second, "counts", 1, xpart)
            g.set_home(w, red, w.bind(f"{total}[:, None]"), xpart)
            continue
        init = _init_lit(kind, g.acc_t[red])
        p = w.bind(f"tl.load({names[0]} + xi * SPLIT + si, mask=xmask & (si < SPLIT), other={init})")
        g.set_home(w, red, w.bind(f"{reduce_code(kind, p, 1)}[:, None]"), xpart)
    for node in stored:
        idx = g.row_index(xpart, node)
        code, _ = evaluate(w, node, idx)
        w.store(g.buffers[node], idx, code, "xmask")
    xb = min(64, pow2(g.xn))
    note = f"split reduction, round {k}: the rows' {', '.join(r.name for r in reds)} from their chunks"
    return Kernel(w.name, finish(w, ["SPLIT", "SBLOCK", "CHUNK", "XBLOCK"]), list(w.args),
                  f"(triton.cdiv({g.xn}, {xb}),)",
                  {"SPLIT": split, "SBLOCK": f"triton.next_power_of_2({split})",
                   "CHUNK": f"triton.cdiv({g.rn}, {split})", "XBLOCK": str(xb), "num_warps": "4"},
                  kind="reduction", note=note)
