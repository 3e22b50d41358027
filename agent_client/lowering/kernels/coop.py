"""The cooperative form of a split group (kernels/split.py): persistent programs each hold one chunk of a row
in registers; per round they publish their partial results as 32-bit words and count themselves in on the
row's counter (a release), wait until the counter holds every chunk (an acquire), read and combine the row's
words, and at the end write the outputs from the registers: one read and one write, the minimum.

Why a counter and not self-tagged words polled by every thread: a tile of words is held by several warps at
once when it is smaller than the program (a [4, 32] tile over 16 warps: 4 copies), and each copy is its own
load. Polled, a copy can be published while another is not; Triton takes the copies to be equal, so the "all
in" test and the decode can read different copies, and a decoded unpublished word is NaN (H100: 4% of 1/23
Softmax's outputs, agent_client/lowering/README.md). The counter is read by one thread and broadcast (a
scalar atomic), so every thread takes the same decision, and after its acquire every copy of every word
reads published.

A round's programs are co-resident: the grid is at most the programs the GPU holds at once, whole rows a
round, registers capped (maxnreg) so that many fit. Should a peer not run (or, in the interpreter, programs
run one after another) a program stops waiting after a bound and reduces the whole row itself: slower, never
a hang. The launch falls back to the two-level form where a row has more chunks than the GPU holds programs.

Usage: kernel = coop_kernel(group, "cuda")   # group: kernels.split.Group
"""

from __future__ import annotations

import re

from agent_client.lowering import ops
from agent_client.lowering.index import delinearize, linearize
from agent_client.lowering.kernels.common import Kernel, evaluate, finish, loadable, pow2, pow2_range, tune
from agent_client.lowering.kernels.reduction import _combine, _init_lit
from agent_client.lowering.kernels.split import Group, reduce_code
from agent_client.lowering.writer import Buffer, KernelWriter, shape

_MAX_SPIN_GPU = 50_000  # polls (about a microsecond each) before a program reduces a row itself


def _bits(value: str, acc_t: str) -> str:
    """A 32-bit partial result as its int32 bits (the workspace's words)."""
    return f"{value}.to(tl.int32, bitcast=True)" if acc_t == "f32" else value


def coop_kernel(g: Group, target: str) -> Kernel:
    n = g.name
    w = KernelWriter(loadable(g.buffers, g.outputs + g.reductions), f"{n}_coop")
    ws, cnt, spin = f"{n}_ws", f"{n}_cnt", f"{n}_spin"
    w.emit("parts = tl.arange(0, SPLIT_P2)")
    w.emit(f"counts = tl.minimum(tl.maximum({g.rn} - parts * CHUNK, 0), CHUNK).to(tl.float32)")
    loop_at = len(w.lines)
    w.emit(f"for task in range(tl.program_id(0), {g.xn} * SPLIT, tl.num_programs(0)):")
    w.indent += 1
    w.push()
    body_at = len(w.lines)
    _tile(w, g, "task", "")
    xpart = g.xpart()
    full = g.full_idx(xpart, "ri")
    slots = f"{g.xn} * SPLIT"
    first_wait = None
    for r, reds in enumerate(g.rounds):
        w.mask = "xmask & rmask"
        for red in reds:  # this chunk's partial results, published
            for slot, value, acc_t in _partials(w, g, red, full):
                w.emit(f"tl.store({ws} + {slot} * {slots} + task, {_bits(value, acc_t)})")
        counter = f"{cnt} + {r * g.xn} + task // SPLIT"
        w.emit("tl.debug_barrier()  # every thread's stores before the release")
        w.emit(f"tl.atomic_add({counter}, 1, sem=\"release\")")
        if first_wait is None:
            first_wait = len(w.lines)
        words, miss = _wait(w, g, reds, ws, counter, spin, slots)
        for red in reds:  # the row's result from its words (plain reductions first: a merged one reads them)
            _combine_row(w, g, red, words, miss, xpart)
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
    _prefetch(w, g, loop_at, body_at, first_wait)
    w.args[ws] = Buffer(ws, None)
    w.args[cnt] = Buffer(cnt, None)
    w.args[spin] = Buffer(spin, None)
    return _launch(w, g, target)


def _tile(w: KernelWriter, g: Group, task: str, prefix: str) -> None:
    """The tile of chunk `task`: its row xi ([1, 1]), positions ri ([1, CHUNK]) and masks."""
    if not prefix:
        w.emit(f"ci = {task} % SPLIT")
    w.emit(f"{prefix}xi = {task} // SPLIT + tl.zeros([1, 1], tl.int32)")
    if g.wide_index:
        w.emit(f"{prefix}xi = {prefix}xi.to(tl.int64)")
    w.emit(f"{prefix}xmask = {prefix}xi < {g.xn}")
    w.emit(f"{prefix}ri = ({task} % SPLIT) * CHUNK + tl.arange(0, CHUNK)[None, :]")
    w.emit(f"{prefix}rmask = {prefix}ri < {g.rn}")


_TILE_NAMES = {"xi", "ri", "xmask", "rmask"}
_LOAD = re.compile(r"^(\s*)(t\d+) = (tl\.load\(.*\))$")


def _prefetch(w: KernelWriter, g: Group, loop_at: int, body_at: int, first_wait: int) -> None:
    """PREFETCH: the next chunk's loads of the first round are issued before this chunk's wait, so that
    they are in flight while the program polls (carried through the task loop). Only loads that read
    nothing but the tile (the input at the chunk's positions) are moved."""
    allowed = _TILE_NAMES | set(w.args) | {"tl", "load", "mask", "other", "to", "float32", "int64", "int32"}
    moved = []
    for i in range(body_at, first_wait):
        m = _LOAD.match(w.lines[i])
        if m and len(m.group(1)) == 8 and set(re.findall(r"[A-Za-z_]\w*", m.group(3))) <= allowed:
            moved.append((i, m.group(2), m.group(3)))
    if not moved:
        return

    def block(indent: int, task: str, prefix: str) -> list[str]:
        """The loads at chunk `task`'s tile (its variables prefixed: the loop carries only the loads)."""
        sub = KernelWriter({}, "")
        sub.indent = indent + 1
        _tile(sub, g, task, prefix)
        return (["    " * indent + "if PREFETCH:"] + sub.lines
                + ["    " * (indent + 1) + f"pf{k} = " + re.sub(r"\b(xi|ri|xmask|rmask)\b", prefix + r"\1", load)
                   for k, (_, _, load) in enumerate(moved)])

    for k, (i, var, load) in enumerate(moved):
        w.lines[i] = ("        if PREFETCH:\n" f"            {var} = pf{k}\n" "        else:\n"
                      f"            {var} = {load}")
    w.lines[first_wait:first_wait] = block(2, "(task + tl.num_programs(0))", "n")
    w.lines[loop_at:loop_at] = block(1, "tl.program_id(0)", "p")


def _partials(w: KernelWriter, g: Group, red, full) -> list[tuple[int, str, str]]:
    """(word row, value, accumulator type) of each partial result of `red` over this program's chunk."""
    kind, x, _, _ = g.info[red]
    if red in g.merged:
        form, a, _ = g.merged[red]
        v, c = evaluate(w, a, full, red)
        v = w.bind(w.cast(v, c, "f32"))
        if form == "lse":
            vm = w.bind(f"tl.where(xmask & rmask, {v}, -float(\"inf\"))")
            m = w.bind(f"tl.max(tl.max({vm}, 1), 0)")
            s = w.bind(f"tl.sum(tl.sum(tl.where({vm} > -float(\"inf\"), tl.exp({vm} - {m}), 0.0), 1), 0)")
            values = [m, s]
        else:
            cnt = w.bind("tl.sum(tl.sum((xmask & rmask).to(tl.float32), 1), 0)")
            u = w.bind(f"tl.sum(tl.sum(tl.where(xmask & rmask, {v}, 0.0), 1), 0) / tl.maximum({cnt}, 1.0)")
            q = w.bind(f"tl.sum(tl.sum(tl.where(xmask & rmask, ({v} - {u}) * ({v} - {u}), 0.0), 1), 0)")
            values = [u, q]
        return [(slot, value, "f32") for slot, value in zip(g.slots[red], values)]
    acc_t = g.acc_t[red]
    v, c = evaluate(w, x, full, red)
    v = w.bind(f"tl.where(xmask & rmask, {w.cast(v, c, acc_t)}, {_init_lit(kind, acc_t)})")
    return [(g.slots[red][0], w.bind(reduce_code(kind, reduce_code(kind, v, 1), 0)), acc_t)]


def _wait(w: KernelWriter, g: Group, reds: list, ws: str, counter: str, spin: str, slots: str) -> tuple[str, str]:
    """(words, missing): the round's words of the chunk's row ([slots, SPLIT_P2]), read once the row's counter
    holds all SPLIT chunks, or after `spin` polls (then `missing`, the same in every thread)."""
    rows = [s for r in reds for s in g.slots[r]]
    w.n += 1
    words, miss, k = f"words{w.n}", f"miss{w.n}", f"k{w.n}"
    got = f"got{w.n}"
    w.emit(f"{got} = tl.atomic_add({counter}, 0, sem=\"acquire\")")
    w.emit("spins = 0")
    w.emit(f"while ({got} < SPLIT) & (spins < {spin}):")
    w.emit(f"    {got} = tl.atomic_add({counter}, 0, sem=\"acquire\")")
    w.emit("    spins += 1")
    w.emit(f"{miss} = {got} < SPLIT")
    w.emit(f"{k} = tl.arange(0, {pow2(len(rows))})[:, None]")
    w.emit(f"{words} = tl.load({ws} + ({rows[0]} + {k}) * {slots} + (task - ci) + parts[None, :], "
           f"mask=({k} < {len(rows)}) & (parts[None, :] < SPLIT), other=0, volatile=True)")
    return words, miss


def _row_of(w: KernelWriter, words: str, row: int, first: int, acc_t: str, pad: str) -> str:
    """One slot's words of the row, decoded; padding lanes (past SPLIT) give `pad`."""
    k = words.replace("words", "k")
    bits = f"tl.sum(tl.where({k} == {row - first}, {words}, 0), 0)"
    value = bits + (".to(tl.float32, bitcast=True)" if acc_t == "f32" else "")
    return w.bind(f"tl.where(parts < SPLIT, {value}, {pad})")


def _combine_row(w: KernelWriter, g: Group, red, words: str, miss: str, xpart) -> None:
    kind, x, _, _ = g.info[red]
    acc_t = g.acc_t[red]
    base = min(s for r in g.rounds if red in r for q in r for s in g.slots[q])
    if red in g.merged:
        lo = '-float("inf")' if g.merged[red][0] == "lse" else "0.0"
        first = _row_of(w, words, g.slots[red][0], base, "f32", lo)
        second = _row_of(w, words, g.slots[red][1], base, "f32", "0.0")
        total = g.merged_total(w, red, first, second, "counts", 0, xpart)
    else:
        vals = _row_of(w, words, g.slots[red][0], base, acc_t, _init_lit(kind, acc_t))
        total = w.bind(reduce_code(kind, vals, 0))
    res = f"row{w.n}"
    w.emit(f"{res} = {total}")
    # a peer that never ran: this program reduces the whole row itself (FALLBACK: always, but where a test
    # launches a second time on a workspace of published words, to check their combine alone)
    init = _init_lit(kind, acc_t)
    w.emit(f"if FALLBACK and {miss}:")
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
    w.emit(f"{res} = {reduce_code(kind, reduce_code(kind, facc, 1), 0)}")
    w.pop()
    w.indent -= 1
    w.mask = saved
    g.set_home(w, red, res, xpart)


def _launch(w: KernelWriter, g: Group, target: str) -> Kernel:
    n = g.name
    lo = 16 if target == "cpu" else 1024
    chunks = [c for c in pow2_range(lo, 32768) if c // 2 < pow2(g.rn)] or [lo]
    chunk, t_c, s_c = tune(n, "CHUNK", min(4096 if target == "cpu" else 16384, chunks[-1]), chunks)
    warps, t_w, s_w = tune(n, "coop_warps", 16, [4, 8, 16, 32])
    per_sm, t_p, s_p = tune(n, "coop_per_sm", 2, [1, 2, 4])
    # two levels by default; the search reaches the cooperative form. On an H100 at published sizes the
    # cooperative form read 1/23 Softmax (4096 rows of 393,216) at 78% of a copy against two levels' 67%
    # (benchmarks/results/rows-probe-nvidia-h100-80gb-hbm3-20261207T215653Z.json) and the search found it
    # (5.455 ms, 1.19x torch.compile: kernelbench-h100-20261207T220404Z.json); as the default it cost 2/21's
    # GroupNorm 4.86 ms against 2.60 (kernelbench-h100-20261207T220058Z.json in commit 5e9a78057) and 1/40
    # LayerNorm 33% of a copy against 40%
    form, t_f, s_f = tune(n, "form", "split", ["coop", "split"])
    # without the next chunk's loads in flight while a program waits: in the rows probe above 1/23 78% of a
    # copy against 49% with them (the library's softmax on an H200 had gained 12% with them: NOTES.md)
    prefetch, t_q, s_q = tune(n, "coop_prefetch", False, [False, True])
    sms = "(torch.cuda.get_device_properties(dev).multi_processor_count if dev.type == 'cuda' else 4)"
    words = sum(len(s) for s in g.slots.values())
    host = [
        f"{n}_split = triton.cdiv({g.rn}, {chunk})",
        f"{n}_per_sm = max(1, min({per_sm}, 64 // {warps}))  # resident programs an SM holds",
        f"{n}_cap = {sms} * {n}_per_sm",
        f"{n}_use_coop = {form} == 'coop' and {n}_split <= {n}_cap  # a row's chunks all resident at once",
        f"{n}_grid = triton.cdiv({g.xn}, triton.cdiv({g.xn}, max(1, {n}_cap // {n}_split))) * {n}_split",
        f"{n}_ws = torch.empty(({words}, {g.xn} * {n}_split), dtype=torch.int32, device=dev) if {n}_use_coop else None",
        (f"{n}_cnt = torch.zeros(({len(g.rounds)}, {g.xn}), dtype=torch.int32, device=dev) "
         f"if {n}_use_coop else None  # chunks in, per round and row"),
        f"{n}_spin = {_MAX_SPIN_GPU} if dev.type == 'cuda' else 0  # the interpreter runs programs in turn",
    ]
    constexprs = {"CHUNK": chunk, "SPLIT": f"{n}_split", "SPLIT_P2": f"triton.next_power_of_2({n}_split)",
                  "FBLOCK": "4096" if target == "cpu" else "2048", "PREFETCH": prefetch, "FALLBACK": "True",
                  "num_warps": warps,
                  "maxnreg": f"min(255, 65536 // ({n}_per_sm * {warps} * 32) // 8 * 8)"}
    note = (f"cooperative split reduction of {g.rn} over {g.xn} rows, {len(g.rounds)} round(s): "
            f"{', '.join(r.name for r in g.reductions)} -> {', '.join(o.name for o in g.outputs)}")
    return Kernel(w.name, finish(w, ["CHUNK", "SPLIT", "SPLIT_P2", "FBLOCK", "PREFETCH", "FALLBACK"]), list(w.args),
                  f"({n}_grid,)", constexprs, {**t_f, **t_c, **t_w, **t_p, **t_q}, {**s_f, **s_c, **s_w, **s_p, **s_q},
                  "reduction", note,
                  host=host, when=f"{n}_use_coop")
