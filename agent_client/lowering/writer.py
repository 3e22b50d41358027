"""The body of one generated kernel: any node's value at a tile of indices, as Triton source.

Usage: ctx = KernelWriter(plan, name); code, ctype = ctx.value(node, idx); ctx.store(buffer, idx, code, ctype)

`value` inlines everything that is not materialized: views become index transforms, pointwise ops become
expressions, pooling windows become unrolled (or looped) maxima and sums, gathers become indirect loads.
A node the kernel computes itself (a reduction, a scan, a matmul's accumulator) is a "home" value: it is
returned only at the indices the kernel computed it for; asked for elsewhere, the writer raises
FusionError and the scheduler materializes that node instead. Values are memoized per scope (a loop body
is a scope), so a diamond in the graph is computed once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from agent_client.lowering import ops
from agent_client.lowering.errors import FusionError, LoweringError
from agent_client.lowering.index import Index, address, contiguous_strides, delinearize, linearize
from agent_client.lowering.windows import WindowsAndGathers
from agent_client.opgraph.graph import TensorMeta

_NUMBER = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")


def tile_shaped(code: str, like: str) -> str:
    """A constant value (a copy of a full tensor, a write of one value) given the shape of `like`, a tile
    expression, so that it can be cast and stored; any other value as it is."""
    literal = {"True": "1", "False": "0"}.get(code, code)
    return f"(tl.zeros_like({like}) + {literal})" if _NUMBER.fullmatch(literal) else code

aten, prims = torch.ops.aten, torch.ops.prims
_UNROLL_MAX = 27  # pooling windows up to this many positions are unrolled, larger ones looped


# ops whose result is one of their inputs (or a constant): nothing to round
_EXACT = {aten.neg, aten.abs, aten.relu, aten.where, prims.where, aten.maximum, aten.minimum, aten.clamp,
          aten.clamp_min, aten.clamp_max, aten.full, aten.full_like, aten.scalar_tensor, aten.copy,
          aten._to_copy, prims.convert_element_type, aten.zeros, aten.zeros_like, aten.ones, aten.ones_like}


@dataclass(frozen=True)
class Buffer:
    name: str  # the Python variable holding the tensor in the generated forward
    meta: TensorMeta


def shape(node) -> tuple[int, ...]:
    return tuple(int(s) for s in node.meta["val"].shape)


def both(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return f"({a}) & ({b})"


class KernelWriter(WindowsAndGathers):
    def __init__(self, buffers: dict, name: str):
        self.buffers = buffers  # fx node -> Buffer for every materialized node and graph input
        self.name = name
        self.lines: list[str] = []
        self.indent = 1
        self.args: dict[str, Buffer] = {}  # pointer arguments in order
        self.scopes: list[dict] = [{}]
        self.homes: dict = {}  # node -> (canonical idx, code, ctype)
        self.mask: str | None = None
        self.tile_var = "xi"  # a variable shaped like the kernel's tile (broadcasts scalar addresses)
        self.n = 0
        self.helpers: set[str] = set()
        self.zero_outside: dict[str, str] = {}  # a loaded value's name -> the condition outside which it is 0
        self.window_depth = 0  # > 0 while a pooling window's positions are written (see load)

    # ---- emission ------------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def bind(self, code: str, ctype: str | None = None) -> str:
        if code.isidentifier():
            return code
        self.n += 1
        var = f"t{self.n}"
        self.emit(f"{var} = {code}")
        return var

    def cast(self, code: str, src: str, dst: str) -> str:
        if src == dst:
            return code
        literal = {"True": "1", "False": "0"}.get(code, code)
        if _NUMBER.fullmatch(literal):  # a constant (a full tensor of one value) is written in the new type
            value = float(literal)
            if dst == "i1":
                return "True" if value else "False"
            return ops._lit(value) if dst in ("f32", "f64") else str(int(value))
        if dst == "i1":
            return f"({code} != 0)"
        return f"{code}.to({ops.TL_TYPE[dst]})"

    def round_to(self, code: str, dtype: str) -> str:
        """A computed fp32 value rounded as eager PyTorch stores it in `dtype` (bf16, fp16), kept in fp32."""
        if dtype == "bfloat16":
            return f"_kkb_bf16({code})"
        if dtype == "float16":
            return f"{code}.to(tl.float16).to(tl.float32)"
        return code

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def arg(self, buf: Buffer) -> str:
        self.args.setdefault(buf.name, buf)
        return buf.name

    # ---- memory --------------------------------------------------------------------------------
    def load(self, buf: Buffer, idx: list[Index], cond: str | None) -> tuple[str, str]:
        ptr = self.arg(buf)
        addr = address(idx, buf.meta.stride)
        off = addr.render()
        tiles = _tile_vars(self.mask)
        if cond is not None and tiles and not any(re.search(rf"\b{v}\b", cond) for v in tiles):
            # a condition on program ids alone (which input of a cat a GEMM's batch reads): given a tile's
            # shape, since the interpreter cannot mask a tile with a scalar
            tv = tiles[0]
            cond = f"tl.where({cond}, {tv} == {tv}, {tv} != {tv})"
        mask = both(self.mask, cond)
        if not any(re.search(rf"\b{v}\b", off) for v in tiles) and (tiles or addr.is_const()):
            if cond is None:
                mask = None  # one scalar per program (a constant or program-id address), always in bounds
            else:
                off = f"{off} + 0 * {self.tile_var}"
        at = f"{ptr} + ({off})"
        if self.window_depth and addr.const and not addr.is_const() and off == addr.render():
            # in a pooling window, the constant added to the pointer last: the positions' loads share one address
            # and take their distance as the load's immediate. Only there: a direct convolution's taps held as
            # 64-bit addresses compiled to more registers (sm90-check-pooling-*.json, 2/27's direct kernel)
            at = f"({ptr} + ({Index(addr.terms).render()})) + ({addr.const})"
        ctype = ops.CTYPE[buf.meta.dtype]
        code = f"tl.load({at}" + (f", mask={mask}, other=0)" if mask else ")")
        if buf.meta.dtype in ("float16", "bfloat16"):
            code += ".to(tl.float32)"
        name = self.bind(code)
        if cond is not None and mask is not None:
            self.zero_outside[name] = cond
        return name, ctype

    def store(self, buf: Buffer, idx: list[Index], code: str, mask: str | None) -> None:
        ptr = self.arg(buf)
        off = address(idx, buf.meta.stride).render()
        missing = [v for v in _tile_vars(mask) if not re.search(rf"\b{v}\b", off)]
        if missing:  # the pointer must have the value's (the tile's) shape
            off += " + 0 * (" + " + ".join(missing) + ")"
        code = tile_shaped(code, off)
        value = code if buf.meta.dtype != "bool" else f"({code} != 0)"
        if buf.meta.dtype == "bfloat16":
            value = self.round_to(value, "bfloat16")
        self.emit(f"tl.store({ptr} + ({off}), {value}.to({ptr}.dtype.element_ty)"
                  + (f", mask={mask})" if mask else ")"))

    # ---- values --------------------------------------------------------------------------------
    def value(self, node, idx: list[Index], cond: str | None = None) -> tuple[str, str]:
        if not isinstance(node, torch.fx.Node):
            return ops.code(self, node, "f32" if isinstance(node, float) else "i64"), \
                "f32" if isinstance(node, float) else "i64"
        key = (node.name, tuple(i.render() for i in idx), cond)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        out = self._compute(node, idx, cond)
        self.scopes[-1][key] = out
        return out

    def _compute(self, node, idx, cond):
        if node in self.homes:
            canon, code, ctype = self.homes[node]
            if list(idx) != list(canon):
                raise FusionError(node)
            return code, ctype
        if node in self.buffers:
            return self.load(self.buffers[node], list(idx), cond)
        kind = ops.kind_of(node)
        if kind == "constant":
            return self._constant(node, idx)
        if kind == "view":
            return self._view(node, idx, cond)
        if kind == "pointwise":
            return self._pointwise(node, idx, cond)
        if kind == "window":
            return self._window(node, idx, cond, want_index=False)
        if kind == "getitem":
            src, which = node.args
            if ops.kind_of(src) == "window":
                return self._window(src, idx, cond, want_index=which == 1)
            if ops.packet(src) in (aten.split_with_sizes, aten.split, aten.unbind):
                return self._split_piece(src, which, idx, cond)
            raise LoweringError(f"{node.name}: an element of {src.target}'s result is not lowered")
        if kind == "indirect":
            return self._indirect(node, idx, cond)
        if kind in ("reduction", "scan", "template"):
            raise FusionError(node)
        if kind == "random":
            raise LoweringError(f"{node.target} draws random numbers: a stochastic reference cannot be "
                                "matched by any candidate")
        raise LoweringError(f"no lowering for {node.target}")

    def arg_idx(self, arg, out_shape: tuple, idx: list[Index]) -> list[Index]:
        """Broadcast (right-aligned) indices of `out_shape` onto the argument's shape."""
        a_shape = shape(arg)
        off = len(out_shape) - len(a_shape)
        return [Index.of(0) if (s == 1 and out_shape[j + off] != 1) else idx[j + off]
                for j, s in enumerate(a_shape)]

    def _pointwise(self, node, idx, cond):
        out_shape = shape(node)
        p = ops.packet(node)
        if p in (aten.arange, prims.iota):
            return self._arange(node, idx)
        args = []
        for a in node.args:
            if isinstance(a, torch.fx.Node):
                args.append(self.value(a, self.arg_idx(a, out_shape, idx), cond))
            else:
                args.append(a)
        code, ctype = ops.POINTWISE[p](self, node, args)
        dtype = str(node.meta["val"].dtype).removeprefix("torch.")
        if dtype in ("bfloat16", "float16") and p not in _EXACT:  # eager rounds every op's result
            code = self.round_to(code, dtype)
        return self.bind(code), ctype

    def _arange(self, node, idx):
        ctype = ops.ctype_of(node.meta["val"].dtype)
        if ops.packet(node) is prims.iota:
            start, step = node.kwargs.get("start", 0), node.kwargs.get("step", 1)
        else:
            a = list(node.args)
            if len(a) == 1:
                start, step = 0, 1
            else:
                start, step = a[0], a[2] if len(a) > 2 else node.kwargs.get("step", 1)
        i = self.cast(f"({idx[0].render()})", "i32", ctype)
        return self.bind(f"({ops.code(self, start, ctype)} + {ops.code(self, step, ctype)} * {i})"), ctype

    def _constant(self, node, idx):
        """A tensor the forward built from Python values: its elements become literals."""
        value = getattr(node.graph.owning_module, str(node.target))
        flat = value.detach().reshape(-1).tolist()
        ctype = ops.ctype_of(value.dtype)
        if len(flat) > 64:
            raise LoweringError(f"{node.name}: a constant tensor of {len(flat)} elements made in forward is not "
                                "lowered (constants up to 64 elements become literals)")
        code = ops.code(self, flat[-1], ctype)
        pos = linearize(list(idx), tuple(value.shape)).render() if flat and value.dim() else "0"
        for i in range(len(flat) - 2, -1, -1):  # a where-chain over the flat position
            code = f"tl.where(({pos}) == {i}, {ops.code(self, flat[i], ctype)}, {code})"
        return self.bind(code), ctype

    # ---- views ---------------------------------------------------------------------------------
    def _view(self, node, idx, cond):
        p = ops.packet(node)
        x = node.args[0]
        out_shape = shape(node)
        if p is aten.cat:
            return self._cat(node, idx, cond)
        if p is aten.constant_pad_nd:
            return self._pad(node, idx, cond)
        if p in (aten.slice_scatter, aten.select_scatter):
            return self._scatter_view(node, idx, cond)
        in_shape = shape(x)
        if p in (aten.view, aten._unsafe_view, aten.reshape, prims.reshape, prims.collapse_view,
                 prims.split_dim, aten.view_copy):
            src = delinearize(linearize(list(idx), out_shape), in_shape)
        elif p in (aten.permute, aten.permute_copy):
            dims = [d % len(in_shape) for d in node.args[1]]
            src = [None] * len(in_shape)
            for k, d in enumerate(dims):
                src[d] = idx[k]
        elif p in (aten.t, aten.transpose):
            d0, d1 = (0, 1) if p is aten.t else (node.args[1] % len(in_shape), node.args[2] % len(in_shape))
            src = list(idx)
            if len(src) >= 2:
                src[d0], src[d1] = idx[d1], idx[d0]
        elif p in (aten.expand, aten.expand_copy):
            src = self.arg_idx(x, out_shape, idx)
        elif p is prims.broadcast_in_dim:
            bdims = node.args[2]
            src = [idx[bdims[j]] if in_shape[j] == out_shape[bdims[j]] else Index.of(0)
                   for j in range(len(in_shape))]
        elif p in (aten.unsqueeze, aten.unsqueeze_copy):
            d = node.args[1] % len(out_shape)
            src = [i for k, i in enumerate(idx) if k != d]
        elif p in (aten.squeeze, prims.squeeze, aten.squeeze_copy):
            src, k = [], 0
            for s in in_shape:  # walk the input's dims; those the output lacks were size-1 squeezed dims
                if k < len(out_shape) and out_shape[k] == s and not self._squeezed_here(node, len(src)):
                    src.append(idx[k])
                    k += 1
                else:
                    src.append(Index.of(0))
        elif p is aten.slice:
            dim = node.args[1] % len(in_shape) if len(node.args) > 1 else 0
            start = node.args[2] if len(node.args) > 2 and node.args[2] is not None else 0
            step = node.args[4] if len(node.args) > 4 else 1
            start = min(max(start + in_shape[dim] if start < 0 else start, 0), in_shape[dim])
            src = list(idx)
            src[dim] = idx[dim] * step + start
        elif p is aten.select:
            dim, i = node.args[1] % len(in_shape), node.args[2]
            src = list(idx[:dim]) + [Index.of(i % in_shape[dim])] + list(idx[dim:])
        elif p is aten.as_strided:  # over a contiguous tensor: the storage index is its element index
            val = x.meta["val"]
            if tuple(val.stride()) != contiguous_strides(in_shape) or val.storage_offset() != 0:
                raise LoweringError(f"{node.name}: as_strided over a tensor that is not contiguous is not lowered")
            offset = node.args[3] if len(node.args) > 3 and node.args[3] is not None else 0
            src = delinearize(address(list(idx), tuple(node.args[2]), offset), in_shape)
        elif p is aten.unfold:  # windows of `size` every `step` along dim, the window's offset last
            dim, step = node.args[1] % max(len(in_shape), 1), node.args[3]
            src = list(idx[:-1])
            src[dim] = idx[dim] * step + idx[-1]
        elif p in (prims.rev, aten.flip):
            dims = [d % len(in_shape) for d in node.args[1]]
            src = [Index.of(in_shape[k] - 1) - i if k in dims else i for k, i in enumerate(idx)]
        else:  # alias, clone, detach, lift_fresh_copy, view_of: the same values
            src = list(idx)
        return self.value(x, src, cond)

    def _split_piece(self, node, which: int, idx, cond):
        x = node.args[0]
        rank = len(shape(x))
        if ops.packet(node) is aten.unbind:
            dim = (node.args[1] if len(node.args) > 1 else 0) % rank
            return self.value(x, list(idx[:dim]) + [Index.of(which)] + list(idx[dim:]), cond)
        dim = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % rank
        sizes = node.args[1]
        if isinstance(sizes, int):
            sizes = [sizes] * (-(-shape(x)[dim] // sizes))
        src = list(idx)
        src[dim] = idx[dim] + sum(sizes[:which])
        return self.value(x, src, cond)

    def _squeezed_here(self, node, position: int) -> bool:
        if len(node.args) < 2:
            return shape(node.args[0])[position] == 1
        dims = node.args[1]
        dims = [dims] if isinstance(dims, int) else list(dims)
        rank = len(shape(node.args[0]))
        return position in [d % rank for d in dims] and shape(node.args[0])[position] == 1

    def _cat(self, node, idx, cond):
        tensors = [t for t in node.args[0] if isinstance(t, torch.fx.Node)]
        out_shape = shape(node)
        dim = (node.args[1] if len(node.args) > 1 else 0) % len(out_shape)
        ctype = ops.ctype_of(node.meta["val"].dtype)
        pieces, offset = [], 0
        for t in tensors:
            size = shape(t)[dim] if len(shape(t)) == len(out_shape) else 0
            if size == 0:
                continue
            lo, hi = offset, offset + size
            here = f"(({idx[dim].render()}) >= {lo}) & (({idx[dim].render()}) < {hi})"
            src = list(idx)
            src[dim] = idx[dim] - lo
            code, c = self.value(t, src, both(cond, here))
            pieces.append((here, self.cast(code, c, ctype)))
            offset = hi
        code = pieces[-1][1]
        for here, piece in reversed(pieces[:-1]):
            code = f"tl.where({here}, {piece}, {code})"
        return self.bind(code), ctype

    def _scatter_view(self, node, idx, cond):
        """slice_scatter / select_scatter (an assignment into a slice, functionalized): inside the slice the
        source's element, elsewhere the input's."""
        x, src_node = node.args[0], node.args[1]
        out_shape = shape(node)
        rank = len(out_shape)
        ctype = ops.ctype_of(node.meta["val"].dtype)
        if ops.packet(node) is aten.select_scatter:
            dim = node.args[2] % rank
            i = node.args[3] % out_shape[dim]
            at = idx[dim]
            here = f"(({at.render()}) == {i})"
            src = [j for k, j in enumerate(idx) if k != dim]
        else:
            dim = (node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)) % rank
            size = out_shape[dim]
            start = node.args[3] if len(node.args) > 3 and node.args[3] is not None else 0
            end = node.args[4] if len(node.args) > 4 and node.args[4] is not None else size
            step = node.args[5] if len(node.args) > 5 else node.kwargs.get("step", 1)
            start = min(max(start + size if start < 0 else start, 0), size)
            end = min(max(end + size if end < 0 else end, start), size)
            at = idx[dim]
            here = f"(({at.render()}) >= {start}) & (({at.render()}) < {end})"
            if step != 1:
                here += f" & ((({at.render()}) - {start}) % {step} == 0)"
            src = list(idx)
            src[dim] = (idx[dim] - start) // step if step != 1 else idx[dim] - start
        inside, c_in = self.value(src_node, src, both(cond, here))
        outside, c_out = self.value(x, list(idx), cond)
        code = f"tl.where({here}, {self.cast(inside, c_in, ctype)}, {self.cast(outside, c_out, ctype)})"
        return self.bind(code), ctype

    def _pad(self, node, idx, cond):
        x, pad = node.args[0], list(node.args[1])
        fill = node.args[2] if len(node.args) > 2 else 0
        in_shape = shape(x)
        src, inside = list(idx), None
        for j in range(len(pad) // 2):
            d = len(in_shape) - 1 - j
            before = pad[2 * j]
            src[d] = idx[d] - before
            r = src[d].render()
            inside = both(inside, f"(({r}) >= 0) & (({r}) < {in_shape[d]})")
        ctype = ops.ctype_of(node.meta["val"].dtype)
        code, c = self.value(x, src, both(cond, inside))
        return self.bind(f"tl.where({inside}, {self.cast(code, c, ctype)}, {ops.code(self, fill, ctype)})"), ctype


def _tile_vars(mask: str | None) -> list[str]:
    """The index variables whose broadcast is a kernel's tile, read off its mask."""
    if not mask:
        return []
    found = ["xi"] if "xmask" in mask else []
    found += ["ri"] if "rmask" in mask else []
    return found + [v for v in ("mi", "ni", "ka", "kb", "fi") if re.search(rf"\b{v}\b", mask)]

