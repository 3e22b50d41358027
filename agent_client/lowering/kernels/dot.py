"""Matmul kernels: the skill library's GEMM main loop with the op graph's epilogue fused after it.

Usage: kernels = gemm_kernels("k5", node, outputs, buffers, "cuda")

A matmul (mm, bmm, addmm) reads its operands as strided tensors: each operand is a chain of views of a stored
buffer, replayed on a meta tensor of the buffer's layout to find its strides. An operand computed from others
(a prologue) is stored first (FusionError), so every GEMM runs the same loop: the gemm_epilogue family's
_gemm_acc (corpus/kernels/gemm_epilogue/mainloop.py), which wraps the rows and columns past the edges instead of
masking them and masks K only where it is not a multiple of BLOCK_K. After it, the generated epilogue computes
everything the kernel stores from the accumulator (bias, activations, scales, residuals) at the tile's indices.
Tiles come from a rule on the shape (_matmul_defaults), with the search's space beside it. A problem with few
output tiles and a long K splits K over programs (SPLIT_K), whose partial tiles a second kernel sums before the
epilogue. A tril/triu of the product skips the K loop of tiles the mask zeroes entirely. An fp32 operand whose K
is not contiguous may be copied K-major first, each batch's matrix (A_KMAJOR / B_KMAJOR, tunables; on by default
where dot_rules.kmajor_pays says the copy pays).

The older helpers below (_dot_types, _dot_line, _gemm_tunables, _tile_order, _store_epilogue) serve the
convolution's implicit GEMM (kernels/conv.py).
"""

from __future__ import annotations

import torch

from agent_client.lowering import ops
from agent_client.lowering.errors import LoweringError
from agent_client.lowering.index import Index, delinearize, linearize
from agent_client.lowering.kernels.common import (
    INT32_MAX,
    Kernel,
    evaluate,
    finish,
    loadable,
    pow2,
    tune,
)
from agent_client.lowering.kernels.dot_rules import (
    gemm_tunables,
    kmajor_batches,
    kmajor_offered,
    kmajor_pays,
    matmul_defaults,
    matmul_space,
    operand,
    tma_form,
    triangle,
)
from agent_client.lowering.kernels.library_code import library_functions
from agent_client.lowering.writer import Buffer, KernelWriter, shape
from agent_client.opgraph.graph import TensorMeta

aten, prims = torch.ops.aten, torch.ops.prims
MAINLOOP = "gemm_epilogue/mainloop"


# ---- matmul --------------------------------------------------------------------------------------------
def _dot_types(*operands) -> str:
    kinds = {str(o.meta["val"].dtype).removeprefix("torch.") for o in operands}
    if kinds <= {"bfloat16"}:
        return "tl.bfloat16"
    if kinds <= {"float16"}:
        return "tl.float16"
    return "tl.float32"


def _dot_line(av: str, bv: str, dot_t: str, target: str) -> str:
    """One K step of the tile product. 16-bit operands meet the tensor cores as 16-bit on a GPU; the CPU
    interpreter's 16-bit dot is wrong (it multiplies bf16 bit patterns), so there the operands stay in fp32:
    they hold 16-bit values exactly, so the products are exact and the sum is fp32, as an MMA's is."""
    if dot_t == "tl.float32":
        return f"acc += tl.dot({av}, {bv}, input_precision=PREC)"
    if target == "cpu":
        return f'acc += tl.dot({av}, {bv}, input_precision="ieee")'
    return f"acc += tl.dot({av}.to({dot_t}), {bv}.to({dot_t}))"


def _gemm_tunables(name, m, n, k, target, dot_t):
    tun, space, exprs = {}, {}, {}
    cap = lambda v: max(16, min(pow2(v), 256))
    if target == "cpu":  # the interpreter pays per operation, not per element: few, large tiles
        defaults = {"BLOCK_M": min(cap(m) if m <= 256 else pow2(m), 2048), "BLOCK_N": min(cap(n), 128),
                    "BLOCK_K": min(cap(k), 128)}
    else:
        defaults = {"BLOCK_M": min(cap(m), 128), "BLOCK_N": min(cap(n), 128),
                    "BLOCK_K": min(cap(k), 64 if dot_t != "tl.float32" else 32)}
    for key, default in defaults.items():
        e, t, s = tune(name, key, default, [v for v in (16, 32, 64, 128, 256) if v <= max(default, 16) * 2]
                        if target != "cpu" else [default])
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    big_tile = defaults["BLOCK_M"] * defaults["BLOCK_N"] >= 128 * 128
    for key, default, allowed in (("GROUP_M", 8, [1, 4, 8, 16]), ("num_warps", 8 if big_tile else 4, [2, 4, 8]),
                                  ("num_stages", 3, [2, 3, 4, 5])):
        e, t, s = tune(name, key, default, allowed)
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    if dot_t == "tl.float32":  # fp32 inputs: exact fp32 products, or three TF32 products (same accuracy)
        e, t, s = tune(name, "PREC", "ieee" if target == "cpu" else "tf32x3", ["ieee", "tf32x3"])
        exprs["PREC"], tun, space = e, {**tun, **t}, {**space, **s}
    return exprs, tun, space


def _tile_order(w: KernelWriter, m: int, n: int) -> None:
    w.emit(f"num_m = tl.cdiv({m}, BLOCK_M)")
    w.emit(f"num_n = tl.cdiv({n}, BLOCK_N)")
    w.emit("group = GROUP_M * num_n")
    w.emit("first_m = (pid // group) * GROUP_M")
    w.emit("size_m = tl.minimum(num_m - first_m, GROUP_M)")
    w.emit("pid_m = first_m + (pid % group) % size_m")
    w.emit("pid_n = (pid % group) // size_m")


def _store_epilogue(w: KernelWriter, node, canon: list[Index], outputs: list, buffers: dict, mask: str):
    w.mask = mask
    for out in outputs:
        idx = delinearize(linearize(canon, shape(node)), shape(out))
        code, _ = evaluate(w, out, idx)
        w.store(buffers[out], idx, code, mask)



# ---- the matmul kernels --------------------------------------------------------------------------------------
def gemm_kernels(name: str, node, outputs: list, buffers: dict, target: str) -> list[Kernel]:
    if ops.packet(node) is aten.addmm:
        bias, a, b = node.args[0], node.args[1], node.args[2]
        beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    else:
        bias, (a, b), beta, alpha = None, node.args[:2], 1, 1
    out = shape(node)
    batched = len(out) == 3
    m, n, k = out[-2], out[-1], shape(a)[-1]
    nb = out[0] if batched else 1
    dtype = str(a.meta["val"].dtype).removeprefix("torch.")
    if dtype not in ("float32", "bfloat16", "float16"):
        raise LoweringError(f"{node.name}: a matmul of {dtype} is not lowered (float32, bfloat16, float16 are)")
    loads = loadable(buffers, outputs)
    g = _Gemm(name, node, m, n, k, nb, dtype, operand(a, loads), operand(b, loads), target)
    g.w = KernelWriter(loads, name)
    kernels = g.kmajor_copy()
    g.setup()
    if g.tma:  # two forms in one kernel, chosen by the PERSISTENT tunable at compile time
        g.w.emit("if PERSISTENT:")
        g.w.indent += 1
        g.persistent_loop(lambda: _epilogue(g.w, node, bias, alpha, beta, g.canon(), outputs, buffers, g.mask))
        g.w.indent -= 1
        g.w.emit("else:")
        g.w.indent += 1
    g.w.push()
    g.tile_product()
    if not g.split:
        _epilogue(g.w, node, bias, alpha, beta, g.canon(), outputs, buffers, g.mask)
        g.w.pop()
        return kernels + [g.kernel(f"{g.what} with its epilogue -> {', '.join(o.name for o in outputs)}")]
    # split K: each program stores its part's partial tile; a second kernel sums them and runs the epilogue
    parts = max(g.space[f"{name}_SPLIT_K"])
    ws = f"{name}_parts"
    g.w.args[ws] = Buffer(ws, TensorMeta((parts, m, n), "float32", (m * n, n, 1)))
    g.w.emit(f"tl.store({ws} + part * {m * n} + mi * {n} + ni, acc, mask={g.mask})")
    g.w.pop()
    first = g.kernel(f"{g.what}, part 1: K split over SPLIT_K programs a tile", temps=[(ws, (parts, m, n), "float32")])
    w2 = KernelWriter(loads, f"{name}_sum")
    w2.args[ws] = g.w.args[ws]
    w2.emit(f"pid_m, pid_n = _tile_coords(tl.program_id(0), {m}, {n}, BLOCK_M, BLOCK_N, GROUP_M)")
    w2.emit("mi = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    w2.emit("ni = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    w2.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w2.emit("for part in range(SPLIT_K):")
    w2.emit(f"    acc += tl.load({ws} + part * {m * n} + mi * {n} + ni, mask={g.mask}, other=0.0)")
    _epilogue(w2, node, bias, alpha, beta, [Index.var("mi", m), Index.var("ni", n)], outputs, buffers, g.mask)
    launch = {key: g.exprs[key] for key in ("BLOCK_M", "BLOCK_N", "GROUP_M", "SPLIT_K")} | {"num_warps": "4"}
    second = Kernel(w2.name, finish(w2, ["BLOCK_M", "BLOCK_N", "GROUP_M", "SPLIT_K"]), list(w2.args),
                    f"({g.tiles},)", launch, {}, {}, "gemm", f"{g.what}, part 2: the partial tiles summed, then the "
                    f"epilogue -> {', '.join(o.name for o in outputs)}", helpers=g.shared)
    return kernels + [first, second]


class _Gemm:
    """One matmul's kernel as it is written: its operands, tunables and optional forms, and the writer's lines."""

    def __init__(self, name, node, m, n, k, nb, dtype, opa, opb, target):
        self.name, self.node, self.m, self.n, self.k, self.nb, self.dtype = name, node, m, n, k, nb, dtype
        self.opa, self.opb, self.target = opa, opb, target
        self.batched = len(shape(node)) == 3  # (a bmm of one batch still indexes its output by bi)
        self.fp32 = dtype == "float32"
        self.shared = [library_functions(MAINLOOP)]  # the main loop's functions, pasted once into the candidate
        defaults = matmul_defaults(m, n, k, nb, self.fp32, target)
        space = matmul_space(defaults, self.fp32, target)
        self.split = defaults["SPLIT_K"] > 1
        # which operands may be copied K-major first, each batch's matrix (fp32: see kmajor_offered), and how
        # many matrices each copy holds (one for an operand shared by every batch)
        self.kmajor = [x for x, op, kd in (("A", opa, -1), ("B", opb, -2)) if kmajor_offered(op, self.fp32, kd)]
        self.copies = {x: kmajor_batches(opa if x == "A" else opb, nb, self.batched) for x in self.kmajor}
        self.tma = tma_form(opa, opb, 0 if self.batched else nb, self.fp32, self.split)
        gpu = target != "cpu"
        for x in self.kmajor:  # on where each copied element feeds enough products (kmajor_pays)
            products = (m if x == "B" else n) * (nb // self.copies[x])
            defaults[f"{x}_KMAJOR"] = gpu and kmajor_pays(products)
            space[f"{x}_KMAJOR"] = [False, True] if gpu else [False]
        if self.tma:  # the library's 16-bit form: 0.2223 ms against 0.2580 through pointers at 4096^3 (NOTES.md)
            defaults["PERSISTENT"], space["PERSISTENT"] = gpu, [False, True] if gpu else [False]
        self.exprs, self.tun, self.space = gemm_tunables(name, defaults, space, self.fp32, target)
        self.big = max(nb * m * k, nb * k * n, nb * m * n, opa.buffer.meta.numel, opb.buffer.meta.numel) > INT32_MAX
        self.mask = f"(mi < {m}) & (ni < {n})"
        self.tiles = f"triton.cdiv({m}, {self.exprs['BLOCK_M']}) * triton.cdiv({n}, {self.exprs['BLOCK_N']})"
        self.what = f"matmul {nb}x{m}x{n}x{k} ({dtype})"
        self.host: list[str] = []
        self.w: KernelWriter | None = None

    def canon(self) -> list[Index]:
        return ([Index.var("bi", self.nb)] if self.batched else []) + [Index.var("mi", self.m), Index.var("ni", self.n)]

    def kmajor_copy(self) -> list[Kernel]:
        """With A_KMAJOR / B_KMAJOR, kernels that copy the operand K-major first, A as (M, K) and B as its
        transpose (N, K), row-major, one such matrix a batch (program_id(1)) or one for an operand every batch
        shares (no launch with the tunable off: a grid of zero programs)."""
        kernels = []
        for x in self.kmajor:
            op = self.opa if x == "A" else self.opb
            rows, k, copies = (self.m if x == "A" else self.n), self.k, self.copies[x]
            s_row, s_k = (op.strides[-2], op.strides[-1]) if x == "A" else (op.strides[-1], op.strides[-2])
            on, src, dst = self.exprs[f"{x}_KMAJOR"], op.buffer.name, f"{self.name}_{x.lower()}k"
            dims = f"({copies}, {rows}, {k})" if copies > 1 else f"({rows}, {k})"
            alloc = f"{dst} = torch.empty({dims}, device=dev, dtype=torch.float32) if {on} else {src}"
            kt = -(-k // 64)
            i64 = ".to(tl.int64)" if max(copies * rows * k, op.buffer.meta.numel) > INT32_MAX else ""
            lines = [f"@triton.jit\ndef {dst}_copy({src}, {dst}):",
                     f"    tile = tl.program_id(0){i64}",
                     f"    ri = (tile // {kt}) * 64 + tl.arange(0, 64)[:, None]",
                     f"    ki = (tile % {kt}) * 64 + tl.arange(0, 64)[None, :]",
                     f"    mask = (ri < {rows}) & (ki < {k})"]
            src_at, dst_at = f"{src} + {op.offset}", dst
            if copies > 1:  # this program's batch: its operand matrix and its place in the copy
                lines.append(f"    bi = tl.program_id(1){i64}")
                src_at, dst_at = f"{src_at} + bi * {op.strides[0]}", f"{dst} + bi * {rows * k}"
            lines += [f"    v = tl.load({src_at} + ri * {s_row} + ki * {s_k}, mask=mask)",
                      f"    tl.store({dst_at} + ri * {k} + ki, v, mask=mask)"]
            grid = f"({-(-rows // 64) * kt} if {on} else 0{f', {copies}' if copies > 1 else ''},)"
            each = f", each of {copies} batches" if copies > 1 else ""
            kernels.append(Kernel(f"{dst}_copy", "\n".join(lines) + "\n", [src, dst], grid, {"num_warps": "4"}, {},
                                  {}, "gemm", f"{x} of {self.what} copied K-major{each} (with {x}_KMAJOR)",
                                  host=[alloc]))
        return kernels

    def setup(self) -> None:
        w = self.w
        self.pa, self.pb = w.arg(self.opa.buffer), w.arg(self.opb.buffer)
        for x in self.kmajor:
            w.args[f"{self.name}_{x.lower()}k"] = Buffer(f"{self.name}_{x.lower()}k", None)
        w.emit("pid = tl.program_id(0)")
        if self.batched:
            w.emit(f"bi = tl.program_id(1){'.to(tl.int64)' if self.big else ''}")

    def _k_range(self) -> None:
        w = self.w
        w.emit(f"k_total = tl.cdiv({self.k}, BLOCK_K)")
        if self.split:
            w.emit("part = tl.program_id(1)")
            w.emit("per_part = tl.cdiv(k_total, SPLIT_K)")
            w.emit("k_first = part * per_part")
            w.emit("k_steps = tl.maximum(tl.minimum(per_part, k_total - k_first), 0)")
        else:
            w.emit("k_first = 0")
            w.emit("k_steps = k_total")
        tri = triangle(self.node)
        if tri is not None:  # a tile the mask zeroes entirely needs no product
            rel, d = tri
            zero = f"off_n - (off_m + BLOCK_M - 1) > {d}" if rel == "lower" else f"(off_n + BLOCK_N - 1) - off_m < {d}"
            w.emit(f"k_steps = tl.where({zero}, 0, k_steps)")

    def _tile(self, tile: str) -> None:
        w, i64 = self.w, ".to(tl.int64)" if self.big else ""
        w.emit(f"pid_m, pid_n = _tile_coords({tile}, {self.m}, {self.n}, BLOCK_M, BLOCK_N, GROUP_M)")
        w.emit(f"off_m = pid_m * BLOCK_M{i64}")
        w.emit(f"off_n = pid_n * BLOCK_N{i64}")

    def _copied(self, x: str) -> str:
        """This program's matrix of operand x's K-major copy."""
        copy = f"{self.name}_{x.lower()}k"
        return f"{copy} + bi * {(self.m if x == 'A' else self.n) * self.k}" if self.copies[x] > 1 else copy

    def tile_product(self) -> None:
        """acc of this program's tile through pointers (the _gemm_acc loop), then mi, ni."""
        w = self.w
        self._tile("pid")
        self._k_range()
        sa, sb = self.opa.strides, self.opb.strides
        base_a, base_b = f"{self.pa} + {self.opa.offset}", f"{self.pb} + {self.opb.offset}"
        if self.batched:
            base_a, base_b = f"{base_a} + bi * {sa[0]}", f"{base_b} + bi * {sb[0]}"
        w.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
        tail = (f"acc, EVEN_K, {self.fp32}, {'PREC' if self.fp32 else repr('ieee')}, "
                f"{not self.fp32 and self.target == 'cpu'}, BLOCK_M, BLOCK_N, BLOCK_K)")
        k = self.k
        # (A copied K-major, B copied K-major): one call of the main loop for each combination the flags allow
        a_opts = [False, True] if "A" in self.kmajor else [False]
        b_opts = [False, True] if "B" in self.kmajor else [False]
        forms = [(fa, fb) for fa in a_opts for fb in b_opts]
        for i, (fa, fb) in enumerate(forms):
            a_ptr, a_strides = (self._copied("A"), f"{k}, 1") if fa else (base_a, f"{sa[-2]}, {sa[-1]}")
            b_ptr, b_strides = (self._copied("B"), f"1, {k}") if fb else (base_b, f"{sb[-2]}, {sb[-1]}")
            call = (f"acc = _gemm_acc({a_ptr}, {b_ptr}, off_m, off_n, {self.m}, {self.n}, {k}, k_first, k_steps, "
                    f"{a_strides}, {b_strides}, {tail}")
            if len(forms) == 1:
                w.emit(call)
                continue
            test = " and ".join(f"{'' if on else 'not '}{x}_KMAJOR" for x, on in (("A", fa), ("B", fb))
                                if x in self.kmajor)
            w.emit(f"if {test}:" if i == 0 else f"elif {test}:" if i < len(forms) - 1 else "else:")
            w.emit("    " + call)
        w.emit("mi = off_m + tl.arange(0, BLOCK_M)[:, None]")
        w.emit("ni = off_n + tl.arange(0, BLOCK_N)[None, :]")

    def persistent_loop(self, epilogue) -> None:
        """PERSISTENT: one program an SM walks the tiles; A and B tiles come by TMA (the library's 16-bit form)."""
        w, e, name = self.w, self.exprs, self.name
        on, (m, n, k) = e["PERSISTENT"], (self.m, self.n, self.k)
        sa, sb, pa, pb = self.opa.strides, self.opb.strides, self.opa.buffer.name, self.opb.buffer.name
        b_view = (f"{pb}.as_strided(({n}, {k}), ({sb[-1]}, {sb[-2]}), {self.opb.offset}), [{e['BLOCK_N']}, "
                  f"{e['BLOCK_K']}]") if self.tma == "nk" else \
            (f"{pb}.as_strided(({k}, {n}), ({sb[-2]}, {sb[-1]}), {self.opb.offset}), [{e['BLOCK_K']}, "
             f"{e['BLOCK_N']}]")
        self.host += [
            "from triton.tools.tensor_descriptor import TensorDescriptor",
            (f"{name}_programs = min({self.tiles}, torch.cuda.get_device_properties(dev).multi_processor_count "
             "if dev.type == 'cuda' else 4)"),
            (f"{name}_a = TensorDescriptor.from_tensor({pa}.as_strided(({m}, {k}), ({sa[-2]}, {sa[-1]}), "
             f"{self.opa.offset}), [{e['BLOCK_M']}, {e['BLOCK_K']}]) if {on} else {pa}"),
            f"{name}_b = TensorDescriptor.from_tensor({b_view}) if {on} else {pb}",
        ]
        w.args[f"{name}_a"] = Buffer(f"{name}_a", None)
        w.args[f"{name}_b"] = Buffer(f"{name}_b", None)
        w.emit(f"for tile in tl.range(pid, tl.cdiv({m}, BLOCK_M) * tl.cdiv({n}, BLOCK_N), NUM_PROGRAMS):")
        w.indent += 1
        w.push()
        self._tile("tile")
        self._k_range()
        w.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
        w.emit(f"acc = _gemm_acc_tma({name}_a, {name}_b, off_m, off_n, k_steps, acc, False, 'ieee', "
               f"{self.target == 'cpu'}, BLOCK_K, {self.tma == 'kn'})")
        w.emit("mi = off_m + tl.arange(0, BLOCK_M)[:, None]")
        w.emit("ni = off_n + tl.arange(0, BLOCK_N)[None, :]")
        epilogue()
        w.pop()
        w.indent -= 1

    def kernel(self, note: str, temps=None) -> Kernel:
        e = self.exprs
        constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EVEN_K"] + (["PREC"] if self.fp32 else [])
        launch = {key: e[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")}
        launch["EVEN_K"] = f"{self.k} % {e['BLOCK_K']} == 0"
        if self.fp32:
            launch["PREC"] = e["PREC"]
        grid = f"({self.tiles}, {self.nb})"
        for flag in ("A_KMAJOR", "B_KMAJOR", "PERSISTENT", "SPLIT_K"):
            if flag in e and (flag != "SPLIT_K" or self.split):
                constexprs.append(flag)
                launch[flag] = e[flag]
        if self.split:
            grid = f"({self.tiles}, {e['SPLIT_K']})"
        if self.tma:
            constexprs.append("NUM_PROGRAMS")
            launch["NUM_PROGRAMS"] = f"{self.name}_programs"
            grid = f"({self.name}_programs if {e['PERSISTENT']} else {self.tiles}, {self.nb})"
        return Kernel(self.name, finish(self.w, constexprs), list(self.w.args), grid, launch, self.tun, self.space,
                      "gemm", note, temps=temps or [], host=list(self.host), helpers=self.shared)


def _epilogue(w: KernelWriter, node, bias, alpha, beta, canon: list[Index], outputs: list, buffers: dict,
              mask: str) -> None:
    """acc * alpha + beta * bias, rounded as eager stores the matmul's dtype, then every output from it."""
    w.tile_var = "(mi + ni)"
    value = "acc" if alpha == 1 else f"acc * {float(alpha)}"
    out = shape(node)
    if bias is not None:
        w.mask = mask
        bv, bc = evaluate(w, bias, w.arg_idx(bias, out, canon))
        value = f"{value} + {w.cast(bv, bc, 'f32')}" if beta == 1 else f"{value} + {float(beta)} * {bv}"
    res = w.bind(w.round_to(w.cast(value, "f32", ops.ctype_of(node.meta["val"].dtype)),
                            str(node.meta["val"].dtype).removeprefix("torch.")))
    w.homes[node] = (canon, res, ops.ctype_of(node.meta["val"].dtype))
    _store_epilogue(w, node, canon, outputs, buffers, mask)
