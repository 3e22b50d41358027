"""Pooling windows and gathers, inlined into whatever kernel reads them (a part of the KernelWriter).

Usage: class KernelWriter(WindowsAndGathers): ...   (self.value, self.bind, self.emit come from it)

A pooling window is a maximum or a sum over its positions, unrolled when small and looped when large, each
position's input evaluated at its shifted indices with its own validity (padding, ceil mode, adaptive
bounds). A gather reads its index tensor first and uses the value as an index (negative ones counted from
the end, as PyTorch does).
"""

from __future__ import annotations

import itertools
import math

import torch

from agent_client.lowering import ops
from agent_client.lowering.errors import LoweringError
from agent_client.lowering.index import Index, delinearize, linearize

aten = torch.ops.aten
_UNROLL_MAX = 27  # pooling windows up to this many positions are unrolled, larger ones looped


def _shape(node) -> tuple[int, ...]:
    return tuple(int(s) for s in node.meta["val"].shape)


def _both(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return f"({a}) & ({b})"


def _in_range(c: Index, size: int) -> str | None:
    """The test 0 <= c < size, without the halves that c's bounds already prove (None: both proven): a window
    position away from the padding needs no test, and each test costs instructions on every output."""
    r = c.render()
    top = c.max_value()
    return _both(None if c.min_is_nonneg() else f"(({r}) >= 0)",
                 None if top is not None and top < size else f"(({r}) < {size})")


class WindowsAndGathers:
    # ---- pooling windows -----------------------------------------------------------------------
    def _window(self, node, idx, cond, want_index: bool):
        p = ops.packet(node)
        x = node.args[0]
        in_shape, out_shape = _shape(x), _shape(node) if not isinstance(node.meta["val"], tuple) \
            else tuple(node.meta["val"][0].shape)
        adaptive = p in (aten._adaptive_avg_pool2d, aten._adaptive_avg_pool3d, aten.adaptive_max_pool2d)
        nd = {aten.max_pool1d_with_indices: 1, aten.max_pool2d_with_indices: 2, aten.max_pool3d_with_indices: 3,
              aten.avg_pool2d: 2, aten.avg_pool3d: 3, aten._adaptive_avg_pool2d: 2,
              aten._adaptive_avg_pool3d: 3, aten.adaptive_max_pool2d: 2}[p]
        is_max = p in (aten.max_pool1d_with_indices, aten.max_pool2d_with_indices,
                       aten.max_pool3d_with_indices, aten.adaptive_max_pool2d)
        lead = len(in_shape) - nd
        sp_in, sp_out = in_shape[lead:], out_shape[lead:]

        def expand(v, default):
            if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
                v = default
            v = list(v) if isinstance(v, (list, tuple)) else [v]
            return v * nd if len(v) == 1 else v

        if adaptive:
            kernel = [-(-sp_in[j] // sp_out[j]) + 1 for j in range(nd)]
            stride, pad, dil = [1] * nd, [0] * nd, [1] * nd
        else:
            a = list(node.args) + [None] * 8
            kernel = expand(a[1], None)
            stride = expand(a[2], kernel)
            pad = expand(a[3] if a[3] is not None else 0, 0)
            dil = expand(a[4] if (is_max and a[4] is not None) else 1, 1) if is_max else [1] * nd
        ceil_mode = bool(node.args[5] if is_max and len(node.args) > 5 else
                         (node.args[4] if not is_max and not adaptive and len(node.args) > 4 else False))
        count_include_pad = bool(node.args[5]) if (not is_max and not adaptive and len(node.args) > 5) else True
        divisor_override = node.args[6] if (not is_max and not adaptive and len(node.args) > 6) else None
        del ceil_mode  # the output size already reflects it; windows past the input are masked below

        o = list(idx[lead:])
        starts, ends = [], []
        for j in range(nd):
            if adaptive:
                starts.append((o[j] * sp_in[j]) // sp_out[j])
                ends.append((o[j] * sp_in[j] + (sp_in[j] + sp_out[j] - 1)) // sp_out[j])
            else:
                starts.append(o[j] * stride[j] - pad[j])
        positions = math.prod(kernel)
        looped = positions > _UNROLL_MAX
        tile = self.mask or "True"
        self.n += 1
        tag = self.n
        acc, best, count = f"wacc{tag}", f"widx{tag}", f"wcnt{tag}"
        init = {"acc": 'float("-inf")' if is_max else "0.0", "best": "0", "count": "0.0"}
        self.emit(f"{acc} = tl.where({tile}, {init['acc']}, {init['acc']})")
        if is_max and want_index:
            self.emit(f"{best} = tl.where({tile}, 0, 0)")
        if not is_max:
            self.emit(f"{count} = tl.where({tile}, 0.0, 0.0)")
        if looped:
            self.emit(f"for kw{tag} in range(0, {positions}):")
            self.indent += 1
            self.push()
            offsets_list = [delinearize(Index.var(f"kw{tag}", positions), tuple(kernel))]
        else:
            offsets_list = [[Index.of(v) for v in combo]
                            for combo in itertools.product(*[range(k) for k in kernel])]
        self.window_depth += 1
        for offsets in offsets_list:
            coords, valid = [], None
            for j in range(nd):
                c = starts[j] + offsets[j] * dil[j]
                coords.append(c)
                if adaptive:
                    valid = _both(valid, f"(({c.render()}) < ({ends[j].render()}))")
                else:
                    valid = _both(valid, _in_range(c, sp_in[j]))
            code, c = self.value(x, list(idx[:lead]) + coords, _both(cond, valid))
            v = self.cast(code, c, "f32")
            zero = valid is not None and self.zero_outside.get(code) == _both(cond, valid)  # loaded as 0 outside
            if is_max and want_index:
                take = self.bind(_both(valid, f"({v} > {acc}) | ({v} != {v})"))  # a NaN wins, as in PyTorch
                flat = linearize(coords, tuple(sp_in)).render()
                self.emit(f"{best} = tl.where({take}, {flat}, {best})")
                self.emit(f"{acc} = tl.where({take}, {v}, {acc})")
            elif is_max:  # one select and one NaN-keeping maximum a position (a NaN wins, as in PyTorch)
                inside = v if valid is None else self.bind(f'tl.where({valid}, {v}, float("-inf"))')
                self.emit(f"{acc} = tl.maximum({acc}, {inside}, propagate_nan=tl.PropagateNan.ALL)")
            else:
                self.emit(f"{acc} = {acc} + " + (v if valid is None or zero else f"tl.where({valid}, {v}, 0.0)"))
                self.emit(f"{count} = {count} + " + ("1.0" if valid is None else f"tl.where({valid}, 1.0, 0.0)"))
        self.window_depth -= 1
        if looped:
            self.pop()
            self.indent -= 1
        out_t = ops.ctype_of((node.meta["val"][0] if isinstance(node.meta["val"], tuple) else node.meta["val"]).dtype)
        if is_max:
            return (best, "i64") if want_index else (acc, out_t)
        if divisor_override:
            return self.bind(f"{acc} / {float(divisor_override)}"), out_t
        if adaptive or not count_include_pad:
            return self.bind(f"{acc} / {count}"), out_t
        # count_include_pad: the window clipped to the padded input, as PyTorch counts it
        size = None
        for j in range(nd):
            s = starts[j].render()
            end = f"tl.minimum(({s}) + {kernel[j]}, {sp_in[j] + pad[j]})"
            size = f"({end} - ({s}))" if size is None else f"{size} * ({end} - ({s}))"
        return self.bind(f"{acc} / ({size}).to(tl.float32)"), out_t

    # ---- gathers -------------------------------------------------------------------------------
    def _indirect(self, node, idx, cond):
        p = ops.packet(node)
        x = node.args[0]
        in_shape, out_shape = _shape(x), _shape(node)

        def as_index(n, at):
            code, c = self.value(n, at, cond)
            v = self.bind(self.cast(code, c, "i64"))
            size = in_shape[dim] if dim is not None else None
            if size is not None:  # negative indices count from the end, as in PyTorch
                v = self.bind(f"tl.where({v} < 0, {v} + {size}, {v})")
            return Index.opaque(v)

        if p is aten.gather:
            dim = node.args[1] % len(in_shape)
            src = list(idx)
            src[dim] = as_index(node.args[2], list(idx))
        elif p is aten.index_select:
            dim = node.args[1] % len(in_shape)
            src = list(idx)
            src[dim] = as_index(node.args[2], [idx[dim]])
        elif p is aten.embedding:
            dim = 0
            w, ind = node.args[0], node.args[1]
            n_ind = len(_shape(ind))
            src = [as_index(ind, list(idx[:n_ind])), idx[-1]]
            return self.value(w, src, cond)
        elif p is aten.index:
            indices = list(node.args[1])
            present = [k for k, t in enumerate(indices) if t is not None]
            b_shape = tuple(torch.broadcast_shapes(*[_shape(indices[k]) for k in present]))
            adjacent = present == list(range(present[0], present[-1] + 1))
            start = present[0] if adjacent else 0
            b_idx = list(idx[start:start + len(b_shape)])
            src, k_out = [], 0
            for k in range(len(in_shape)):
                if k in present:
                    dim = k
                    t = indices[k]
                    src.append(as_index(t, self.arg_idx(t, b_shape, b_idx)))
                    continue
                if adjacent and k < start:
                    src.append(idx[k])
                else:
                    lead = start + len(b_shape) if adjacent else len(b_shape)
                    before = sum(1 for q in range(k) if q not in present and not (adjacent and q < start))
                    src.append(idx[lead + before])
                k_out += 1
            del out_shape
        else:
            raise LoweringError(f"no lowering for {node.target}")
        return self.value(x, src, cond)
