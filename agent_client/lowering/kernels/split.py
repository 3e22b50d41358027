"""Split rows: a group of reductions over rows too long (or too few) for one program each, the row cut into
chunks that several programs reduce. Two forms, chosen at run time by the group's `form` tunable:

- "split" (two levels): per round of dependent reductions (a softmax's max, then its sum of exponentials),
  a kernel of partial results per chunk and one that combines a row's partials; then the outputs the size
  of the input, in a pointwise kernel that reads the rows' results. Reads the row once per round, plus
  once for the outputs.
- "coop" (cooperative): persistent programs each hold one chunk of a row in registers; each round they
  publish their partial results as tagged 64-bit words (the value's bits and a clear high half: the word
  is its own ready flag), wait for the row's other words, combine them, and at the end write the outputs
  from the registers: one read and one write, the minimum. A round's programs are co-resident (the grid
  is at most the programs the GPU holds at once, whole rows a round, registers capped), and should a peer
  not run (or, in the interpreter, programs run one after another) a program stops waiting after a bound
  and reduces the whole row itself: slower, never a hang. Falls back to "split" where a row has more
  chunks than the GPU holds programs, or partial results wider than 32 bits.

Usage: kernels = split_kernels("k1", full_shape, dims, reductions, outputs, buffers, "cuda", limits)
"""

from __future__ import annotations

import math
import struct

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
_MAX_SPIN_GPU = 50_000  # polls (about a microsecond each) before a program reduces a row itself


def _reduce(kind: str, value: str, axis: int) -> str:
    fn = _FN.get(kind)
    return f"{fn}({value}, {axis})" if fn else f"tl.reduce({value}, {axis}, _kkb_mul)"


def _bits32(value: str, acc_t: str) -> str:
    """A 32-bit partial result as the low half of an int64 word (high half clear: published)."""
    raw = f"{value}.to(tl.int32, bitcast=True)" if acc_t == "f32" else value
    return f"({raw}.to(tl.int64) & 0xFFFFFFFF)"


def _pad_word(kind: str, acc_t: str) -> int:
    """The word of the reduction's neutral element (padding lanes of a row's words)."""
    lit = _init_lit(kind, acc_t)
    if acc_t == "f32":
        value = float(lit.replace('float("inf")', "inf").replace('-float("inf")', "-inf"))
        return struct.unpack("<I", struct.pack("<f", value))[0]
    return int(lit) & 0xFFFFFFFF


class _Group:
    """What every kernel of a split group shares: its rows, rounds and outputs."""

    def __init__(self, name, full_shape, dims, reductions, outputs, buffers):
        self.name, self.full_shape, self.dims = name, tuple(full_shape), list(dims)
        self.outer = [k for k in range(len(full_shape)) if k not in dims]
        self.xn = math.prod(full_shape[k] for k in self.outer)
        self.rn = math.prod(full_shape[k] for k in dims)
        self.reductions, self.outputs, self.buffers = list(reductions), list(outputs), buffers
        self.rounds = _rounds(self.reductions)
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
        self.wide_index = numel > INT32_MAX or any(b.meta is not None and b.meta.numel > INT32_MAX
                                                   for b in buffers.values())

    def full_idx(self, xpart, rvar: str) -> list[Index]:
        rpart = delinearize(Index.var(rvar, self.rn), tuple(self.full_shape[k] for k in self.dims))
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

    def xpart(self) -> list[Index]:
        return delinearize(Index.var("xi", self.xn), tuple(self.full_shape[k] for k in self.outer))

    def row_index(self, xpart, node) -> list[Index]:
        flat = linearize(self.reduced_idx(xpart, False), tuple(self.full_shape[k] for k in self.outer))
        return delinearize(flat, shape(node))

    def set_home(self, w: KernelWriter, red, value: str, xpart) -> None:
        """The row's result of `red` (its accumulator type) as the value consumers read."""
        kind, _, _, keep = self.info[red]
        acc_t, out_t = self.acc_t[red], ops.ctype_of(red.meta["val"].dtype)
        res, res_t = value, acc_t
        if kind in ("any", "all"):
            res, res_t = w.bind(f"({res} != 0)"), "i1"
        res = w.bind(w.round_to(w.cast(res, res_t, out_t), str(red.meta["val"].dtype).removeprefix("torch.")))
        w.homes[red] = (self.reduced_idx(xpart, keep), res, out_t)

    def coop_ready(self) -> bool:
        """The cooperative form applies: 32-bit partials, and elements read more than once in one program."""
        return all(self.acc_t[r] in ("f32", "i32") for r in self.reductions) and (
            bool(self.full_outs) or len(self.rounds) > 1)


def _rounds(reductions: list) -> list[list]:
    """The group's reductions by round: a reduction of a reduction's result comes a round later."""
    level: dict = {}
    group = set(reductions)
    for red in reductions:  # graph order: a reduction's inputs come before it
        deps, seen, stack = set(), set(), list(red.all_input_nodes)
        while stack:
            a = stack.pop()
            if a in seen:
                continue
            seen.add(a)
            if a in group:
                deps.add(a)
            elif a.op == "call_function" and ops.kind_of(a) not in ("reduction", "scan", "template"):
                stack += a.all_input_nodes
        level[red] = 1 + max((level[d] for d in deps if d in level), default=-1)
    return [[r for r in reductions if level[r] == k] for k in range(max(level.values()) + 1)]


def split_kernels(name: str, full_shape: tuple, dims: list[int], reductions: list, outputs: list, buffers: dict,
                  target: str, limits: RowLimits) -> list[Kernel]:
    """Every reduction of the group has a buffer (the two-level form stores each row's results)."""
    g = _Group(name, full_shape, dims, reductions, outputs, buffers)
    kernels: list[Kernel] = []
    when = None
    if g.coop_ready():
        kernels.append(_coop_kernel(g, target))
        when = f"not {name}_use_coop"
    kernels += _two_level_kernels(g, target, when)
    return kernels


# ---- two levels ----------------------------------------------------------------------------------------
def _two_level_kernels(g: _Group, target: str, when: str | None) -> list[Kernel]:
    n = g.name
    split_default = min(1024, pow2(max(1, 1024 // g.xn)), pow2(-(-g.rn // 4096)))
    split, t_s, s_s = tune(n, "SPLIT", split_default, [s for s in pow2_range(1, 1024) if s <= pow2(g.rn)])
    rb, t_r, s_r = tune(n, "RBLOCK", min(4096 if target == "cpu" else 2048, pow2(-(-g.rn // split_default))),
                        [256, 512, 1024, 2048, 4096])
    nw, t_w, s_w = tune(n, "num_warps", 8, [2, 4, 8, 16])
    tunables, space = {**t_s, **t_r, **t_w}, {**s_s, **s_r, **s_w}
    kernels = []
    for k, reds in enumerate(g.rounds):
        last = k == len(g.rounds) - 1
        part = _part_kernel(g, k, reds, split, rb, nw)
        part.tunables, part.space, part.when = (tunables, space, when) if k == 0 else ({}, {}, when)
        comb = _combine_kernel(g, k, reds, split, last)
        comb.when = when
        kernels += [part, comb]
    if g.full_outs:
        out = pointwise_kernel(f"{n}_out", g.full_outs, g.buffers, target)
        out.when = when
        kernels.append(out)
    return kernels


def _partial_name(g: _Group, red) -> str:
    return f"{g.name}_p{g.reductions.index(red)}"


def _part_kernel(g: _Group, k: int, reds: list, split: str, rb: str, nw: str) -> Kernel:
    w = KernelWriter(loadable(g.buffers, reds), f"{g.name}_part{k}")
    w.tile_var = "ri"
    w.emit("xi = tl.program_id(0) // SPLIT")
    w.emit("ci = tl.program_id(0) % SPLIT")
    if g.wide_index:
        w.emit("xi = xi.to(tl.int64)")
    accs = []
    for j, red in enumerate(reds):
        acc_t = g.acc_t[red]
        w.emit(f"acc{j} = tl.full([RBLOCK], {_init_lit(g.info[red][0], acc_t)}, {ops.TL_TYPE[acc_t]})")
        accs.append(f"acc{j}")
    w.emit("for roff in range(0, CHUNK, RBLOCK):")
    w.indent += 1
    w.push()
    w.emit("ri = ci * CHUNK + roff + tl.arange(0, RBLOCK)")
    w.emit(f"rmask = (ri < {g.rn}) & (roff + tl.arange(0, RBLOCK) < CHUNK)")
    w.mask = "rmask"
    full = g.full_idx(g.xpart(), "ri")
    for acc, red in zip(accs, reds):
        kind, x, _, _ = g.info[red]
        v, c = evaluate(w, x, full, red)
        init = _init_lit(kind, g.acc_t[red])
        v = w.bind(f"tl.where(rmask, {w.cast(v, c, g.acc_t[red])}, {init})")
        w.emit(f"{acc} = {_combine(kind, acc, v)}")
    w.pop()
    w.indent -= 1
    temps = []
    for acc, red in zip(accs, reds):
        part = _partial_name(g, red)
        w.args[part] = Buffer(part, None)
        w.emit(f"tl.store({part} + tl.program_id(0), {_reduce(g.info[red][0], acc, 0)})")
        dtype = {"f32": "float32", "f64": "float64", "i64": "int64", "i32": "int32"}[g.acc_t[red]]
        temps.append(f"{part} = torch.empty(({g.xn} * {split},), device=dev, dtype=torch.{dtype})")
    note = (f"split reduction of {g.rn} over {g.xn} rows, round {k}: partial {', '.join(r.name for r in reds)} "
            f"of each chunk")
    return Kernel(w.name, finish(w, ["SPLIT", "CHUNK", "RBLOCK"]), list(w.args), f"({g.xn} * {split},)",
                  {"SPLIT": split, "CHUNK": f"triton.cdiv({g.rn}, {split})", "RBLOCK": rb, "num_warps": nw},
                  kind="reduction", note=note, setup=temps)


def _combine_kernel(g: _Group, k: int, reds: list, split: str, last: bool) -> Kernel:
    stored = reds + (g.row_outs if last else [])
    w = KernelWriter(loadable(g.buffers, stored), f"{g.name}_comb{k}")
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    w.emit(f"xmask = xi < {g.xn}")
    w.emit("si = tl.arange(0, SBLOCK)[None, :]")
    w.mask = "xmask"
    xpart = g.xpart()
    for red in reds:
        kind = g.info[red][0]
        part = _partial_name(g, red)
        w.args[part] = Buffer(part, None)
        init = _init_lit(kind, g.acc_t[red])
        p = w.bind(f"tl.load({part} + xi * SPLIT + si, mask=xmask & (si < SPLIT), other={init})")
        g.set_home(w, red, w.bind(f"{_reduce(kind, p, 1)}[:, None]"), xpart)
    for node in stored:
        idx = g.row_index(xpart, node)
        code, _ = evaluate(w, node, idx)
        w.store(g.buffers[node], idx, code, "xmask")
    xb = min(64, pow2(g.xn))
    note = f"split reduction, round {k}: the rows' {', '.join(r.name for r in reds)} from their chunks"
    return Kernel(w.name, finish(w, ["SPLIT", "SBLOCK", "XBLOCK"]), list(w.args), f"(triton.cdiv({g.xn}, {xb}),)",
                  {"SPLIT": split, "SBLOCK": f"triton.next_power_of_2({split})", "XBLOCK": str(xb),
                   "num_warps": "4"}, kind="reduction", note=note)


# ---- cooperative ---------------------------------------------------------------------------------------
def _coop_kernel(g: _Group, target: str) -> Kernel:
    n = g.name
    kname = f"{n}_coop"
    w = KernelWriter(loadable(g.buffers, g.outputs + g.reductions), kname)
    ws, spin = f"{n}_ws", f"{n}_spin"
    w.emit("parts = tl.arange(0, SPLIT_P2)")
    w.emit(f"for task in range(tl.program_id(0), {g.xn} * SPLIT, tl.num_programs(0)):")
    w.indent += 1
    w.push()
    w.emit("ci = task % SPLIT")
    w.emit("xi = task // SPLIT + tl.zeros([1, 1], tl.int32)")
    if g.wide_index:
        w.emit("xi = xi.to(tl.int64)")
    w.emit(f"xmask = xi < {g.xn}")
    w.emit("ri = ci * CHUNK + tl.arange(0, CHUNK)[None, :]")
    w.emit(f"rmask = ri < {g.rn}")
    xpart = g.xpart()
    full = g.full_idx(xpart, "ri")
    slots = f"{g.xn} * SPLIT"
    for reds in g.rounds:
        w.mask = "xmask & rmask"
        for red in reds:  # publish this chunk's partial results
            kind, x, _, _ = g.info[red]
            acc_t = g.acc_t[red]
            v, c = evaluate(w, x, full, red)
            v = w.bind(f"tl.where(xmask & rmask, {w.cast(v, c, acc_t)}, {_init_lit(kind, acc_t)})")
            p = w.bind(_reduce(kind, _reduce(kind, v, 1), 0))
            j = g.reductions.index(red)
            w.emit(f"tl.atomic_xchg({ws} + {j} * {slots} + task, {_bits32(p, acc_t)}, sem=\"relaxed\")")
        for red in reds:  # the row's partial results, then their combination
            _wait_and_combine(w, g, red, ws, spin, slots, xpart)
    w.mask = "xmask & rmask"
    for node in g.full_outs:
        idx = delinearize(linearize(full, g.full_shape), shape(node))
        code, _ = evaluate(w, node, idx)
        w.store(g.buffers[node], idx, code, "xmask & rmask")
    w.mask = "xmask"
    rows = [o for o in g.outputs if o not in g.full_outs]
    if rows:  # a row's results, by its first chunk (a tile's mask: the interpreter's ci may be an int)
        w.emit("first = (tl.zeros([1, 1], tl.int32) + ci) == 0")
    for node in rows:
        idx = g.row_index(xpart, node)
        code, _ = evaluate(w, node, idx)
        w.store(g.buffers[node], idx, code, "xmask & first")
    w.pop()
    w.indent -= 1
    w.args[ws] = Buffer(ws, None)
    w.args[spin] = Buffer(spin, None)
    lo = 16 if target == "cpu" else 1024
    chunks = [c for c in pow2_range(lo, 32768) if c // 2 < pow2(g.rn)] or [lo]
    chunk, t_c, s_c = tune(n, "CHUNK", min(4096 if target == "cpu" else 16384, chunks[-1]), chunks)
    warps, t_w, s_w = tune(n, "coop_warps", 16, [4, 8, 16, 32])
    per_sm, t_p, s_p = tune(n, "coop_per_sm", 2, [1, 2, 4])
    form, t_f, s_f = tune(n, "form", "coop", ["coop", "split"])
    sms = "(torch.cuda.get_device_properties(dev).multi_processor_count if dev.type == 'cuda' else 4)"
    setup = [
        f"{n}_split = triton.cdiv({g.rn}, {chunk})",
        f"{n}_per_sm = max(1, min({per_sm}, 64 // {warps}))  # resident programs an SM holds",
        f"{n}_cap = {sms} * {n}_per_sm",
        f"{n}_use_coop = {form} == 'coop' and {n}_split <= {n}_cap  # a row's chunks all resident at once",
        f"{n}_grid = triton.cdiv({g.xn}, triton.cdiv({g.xn}, max(1, {n}_cap // {n}_split))) * {n}_split",
        (f"{ws} = torch.full(({len(g.reductions)}, {g.xn} * {n}_split), -1, dtype=torch.int64, device=dev) "
         f"if {n}_use_coop else None"),
        f"{spin} = {_MAX_SPIN_GPU} if dev.type == 'cuda' else 0  # the interpreter runs programs in turn",
    ]
    constexprs = {"CHUNK": chunk, "SPLIT": f"{n}_split", "SPLIT_P2": f"triton.next_power_of_2({n}_split)",
                  "FBLOCK": "4096" if target == "cpu" else "2048", "num_warps": warps,
                  "maxnreg": f"min(255, 65536 // ({n}_per_sm * {warps} * 32) // 8 * 8)"}
    note = (f"cooperative split reduction of {g.rn} over {g.xn} rows, {len(g.rounds)} round(s): "
            f"{', '.join(r.name for r in g.reductions)} -> {', '.join(o.name for o in g.outputs)}")
    return Kernel(kname, finish(w, ["CHUNK", "SPLIT", "SPLIT_P2", "FBLOCK"]), list(w.args), f"({n}_grid,)",
                  constexprs, {**t_f, **t_c, **t_w, **t_p}, {**s_f, **s_c, **s_w, **s_p}, "reduction", note,
                  setup=setup, when=f"{n}_use_coop")


def _wait_and_combine(w: KernelWriter, g: _Group, red, ws: str, spin: str, slots: str, xpart) -> None:
    kind, x, _, _ = g.info[red]
    acc_t = g.acc_t[red]
    j = g.reductions.index(red)
    w.n += 1
    words, miss, res = f"words{w.n}", f"miss{w.n}", f"row{w.n}"
    load = (f"tl.load({ws} + {j} * {slots} + (task - ci) + parts, mask=parts < SPLIT, "
            f"other={_pad_word(kind, acc_t)}, volatile=True)")
    w.emit(f"{words} = {load}")
    w.emit(f"{miss} = tl.min(({words} >> 32).to(tl.int32), 0) < 0")
    w.emit("spins = 0")
    w.emit(f"while {miss} & (spins < {spin}):")
    w.emit(f"    {words} = {load}")
    w.emit(f"    {miss} = tl.min(({words} >> 32).to(tl.int32), 0) < 0")
    w.emit("    spins += 1")
    vals = f"({words} & 0xFFFFFFFF).to(tl.int32)" + (".to(tl.float32, bitcast=True)" if acc_t == "f32" else "")
    w.emit(f"{res} = {_reduce(kind, vals, 0)}")
    # a peer that never ran: this program reduces the whole row itself
    init = _init_lit(kind, acc_t)
    w.emit(f"if {miss}:")
    w.indent += 1
    w.push()
    facc = f"facc{w.n}"
    w.emit(f"{facc} = tl.full([1, FBLOCK], {init}, {ops.TL_TYPE[acc_t]})")
    w.emit(f"for foff in range(0, {g.rn}, FBLOCK):")
    w.indent += 1
    w.push()
    w.emit("fi = foff + tl.arange(0, FBLOCK)[None, :]")
    fmask = f"xmask & (fi < {g.rn})"
    saved, w.mask = w.mask, fmask
    v, c = evaluate(w, x, g.full_idx(xpart, "fi"), red)
    v = w.bind(f"tl.where({fmask}, {w.cast(v, c, acc_t)}, {init})")
    w.emit(f"{facc} = {_combine(kind, facc, v)}")
    w.pop()
    w.indent -= 1
    w.emit(f"{res} = {_reduce(kind, _reduce(kind, facc, 1), 0)}")
    w.pop()
    w.indent -= 1
    w.mask = saved
    g.set_home(w, red, res, xpart)
