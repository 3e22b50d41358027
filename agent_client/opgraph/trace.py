"""The spec front end: any KernelBench-format file, as published, traced into an op graph.

Usage: graph = trace_spec(Path("23_Softmax.py"))                 # the default inputs
       graph = trace_spec(path, input_kwargs={"rows": 33})        # one of the spec's VARIANTS

The reference `Model` is built and run on PyTorch's meta device under make_fx (fake tensors): only shapes
and dtypes flow, so tracing costs neither memory nor time at any size. Everything Python does runs as
written (`super(Model, self)`, submodules, helper functions, tuple outputs, casts, masks built in forward);
parameters, buffers and tensors the module holds become graph inputs named by their attribute path;
mutations of buffers (BatchNorm's running statistics) are functionalised into final copies. ATen ops are
decomposed into the small set the lowering knows (pointwise, reductions, views, matmuls, convolutions,
pooling, scans, gathers). A spec whose control flow depends on tensor values cannot be traced: the error
names its line. The spec is trusted reference code the user gave us, never a candidate.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
import warnings
from pathlib import Path

import torch
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from agent_client.opgraph.graph import GraphInput, OpGraph, TensorMeta

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
    aten.clamp_max_, aten.clamp_,
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
    # offset may repeat: an empty bag); max bags are left to the op, which the lowering then names
    if mode not in (0, 1):
        return NotImplemented
    n = indices.shape[0]
    bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    starts = offsets[1:bags]
    marks = torch.zeros(n + 1, dtype=torch.long, device=indices.device).index_add(0, starts, torch.ones_like(starts))
    bag = marks.cumsum(0)[:n]
    rows = weight[indices]
    keep = (indices != padding_idx) if padding_idx is not None and padding_idx >= 0 else torch.ones_like(indices,
                                                                                                         dtype=torch.bool)
    weights = keep.to(weight.dtype)
    if per_sample_weights is not None:
        weights = weights * per_sample_weights
    out = torch.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device).index_add(
        0, bag, rows * weights[:, None])
    count = torch.zeros(bags, dtype=torch.long, device=indices.device).index_add(0, bag, keep.to(torch.long))
    if mode == 1:
        out = out / count.clamp(min=1).to(weight.dtype)[:, None]
    return out, bag, count, torch.zeros_like(count)


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
    return table


_TABLE: dict | None = None


class TraceError(ValueError):
    """A spec that cannot be traced; the message names the file, the line and why."""


def load_module(path: Path, source: str | None = None):
    """Import a spec file as a fresh module (trusted reference code)."""
    path = Path(path)
    if source is None:
        if not path.is_file():
            raise TraceError(f"spec {path}: no such file")
        source = path.read_text()
    name = f"_kkb_trace_{hashlib.sha256(source.encode()).hexdigest()[:12]}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and pickling look themselves up there while the spec runs
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the user's own spec
    except Exception as exc:
        raise TraceError(f"spec {path}: importing it failed: {_where(exc, path)}{type(exc).__name__}: "
                         f"{exc}") from exc
    finally:
        sys.modules.pop(name, None)
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise TraceError(f"spec {path}: missing {missing} (KernelBench format: Model, get_inputs, "
                         "get_init_inputs)")
    return module


def _where(exc: BaseException, path: Path) -> str:
    """'line N (`source`): ' for the innermost frame of the spec file in the traceback, else ''."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).name == Path(path).name:
            found = frame
    if found is None:
        return ""
    return f"line {found.lineno} (`{(found.line or '').strip()}`): "


def _build(module, path: Path, init_kwargs: dict, input_kwargs: dict, dtype: str | None):
    init = list(module.get_init_inputs(**init_kwargs))
    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            model = module.Model(*init)
    except Exception:  # noqa: BLE001 - an __init__ that needs real values (an .item(), a QR): build it on the CPU
        torch.manual_seed(0)
        model = module.Model(*init).to("meta")
    with torch.device("meta"):
        torch.manual_seed(0)
        inputs = list(module.get_inputs(**input_kwargs))
    if dtype:
        target = getattr(torch, dtype)
        model = model.to(target)
        inputs = [x.to(target) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    return model, inputs


def _state(model: torch.nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Parameters, buffers and plain tensor attributes by attribute path, and the kind of each."""
    state, kinds = {}, {}
    for name, p in model.named_parameters():
        state[name], kinds[name] = p, "param"
    for name, b in model.named_buffers():
        state[name], kinds[name] = b, "buffer"
    for prefix, sub in model.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                name = f"{prefix}.{attr}" if prefix else attr
                if name not in state:
                    state[name], kinds[name] = value, "constant"
    return state, kinds


def _fake(mode: FakeTensorMode, t: torch.Tensor) -> torch.Tensor:
    meta = t.detach().to("meta") if not t.is_meta else t.detach()
    return FakeTensor(mode, meta, torch.device("cpu"))


def trace_spec(path: Path | str, input_kwargs: dict | None = None, init_kwargs: dict | None = None,
               source: str | None = None) -> OpGraph:
    """Trace the spec's Model.forward on fake tensors into an OpGraph (see the module docstring)."""
    global _TABLE
    path = Path(path)
    module = load_module(path, source)
    dtype = getattr(module, "DTYPE", None)
    dtype = str(dtype).removeprefix("torch.") if dtype else None
    try:
        model, inputs = _build(module, path, init_kwargs or {}, input_kwargs or {}, dtype)
    except TraceError:
        raise
    except Exception as exc:
        raise TraceError(f"spec {path}: building the model or its inputs failed: {_where(exc, path)}"
                         f"{type(exc).__name__}: {exc}") from exc
    state, kinds = _state(model)
    # Fake tensors that report the CPU (their data stays on the meta device): a tensor the forward makes
    # from Python values on its input's device (torch.tensor(0.5, device=x.device)) is then a real constant
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    state = {k: _fake(mode, v) for k, v in state.items()}
    inputs = [_fake(mode, x) if isinstance(x, torch.Tensor) else x for x in inputs]
    positions = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    scalars = {i: x for i, x in enumerate(inputs) if not isinstance(x, torch.Tensor)}

    returned = {}

    def forward(state_values: dict, *tensors):
        args = list(inputs)
        for i, t in zip(positions, tensors):
            args[i] = t
        out = torch.func.functional_call(model, state_values, tuple(args), tie_weights=False)
        returned["tuple"] = isinstance(out, (tuple, list))
        return out

    if _TABLE is None:
        _TABLE = decomposition_table()
    functional = torch.func.functionalize(forward, remove="mutations")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # fake tensors report the CPU: oneDNN off, so recurrent layers trace as their decomposable ops
            with torch.backends.mkldnn.flags(enabled=False):
                gm = make_fx(functional, tracing_mode="fake", decomposition_table=_TABLE,
                             _allow_non_fake_inputs=True)(state, *[inputs[i] for i in positions])
    except Exception as exc:
        raise TraceError(_trace_message(exc, path)) from exc
    if _writes_in_place(gm):  # a decomposition wrote in place: functionalize its graph once more
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gm = make_fx(torch.func.functionalize(gm, remove="mutations"), tracing_mode="fake",
                             decomposition_table=_TABLE, _allow_non_fake_inputs=True)(
                    state, *[inputs[i] for i in positions])
        except Exception:  # noqa: BLE001, S110 - some prims cannot be functionalized; the lowering checks what is left
            pass
    graph = _to_graph(gm, state, kinds, positions, scalars, len(inputs))
    graph.output_tuple = returned.get("tuple", graph.output_tuple)
    return graph


def _writes_in_place(gm) -> bool:
    """Whether an op other than a buffer update (copy_ into a placeholder) mutates one of its arguments."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or not hasattr(node.target, "_schema"):
            continue
        if node.target is aten.copy_.default and node.args[0].op == "placeholder":
            continue
        if any(a.alias_info is not None and a.alias_info.is_write for a in node.target._schema.arguments):
            return True
    return False


def _trace_message(exc: BaseException, path: Path) -> str:
    text = f"{type(exc).__name__}: {exc}".split("\n")[0][:300]
    data_dependent = any(w in type(exc).__name__ + str(exc) for w in
                         ("DataDependent", "data-dependent", "data dependent", "GuardOnDataDependent",
                          "item()", "Boolean value of Tensor"))
    dynamic_shape = "DynamicOutputShape" in type(exc).__name__
    if data_dependent:
        why = ("its control flow depends on tensor values (a branch, loop or .item() on data), which a trace "
               "over shapes alone cannot follow")
    elif dynamic_shape:
        why = ("an output's shape depends on tensor values (nonzero, indexing by a boolean mask, unique), which "
               "a kernel of fixed shapes cannot produce; torch.where or a masked sum keeps the shape")
    else:
        why = "tracing it on fake tensors failed"
    return f"spec {path}: {_where(exc, path)}{why}: {text}"


def _to_graph(gm, state, kinds, positions, scalars, n_inputs) -> OpGraph:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = list(state)
    described: dict[str, GraphInput] = {}
    for i, node in enumerate(placeholders):
        val = node.meta.get("val")
        meta = TensorMeta.of(val) if isinstance(val, torch.Tensor) else None
        if i < len(names):
            described[node.name] = GraphInput(kinds[names[i]], names[i], meta)
        else:
            described[node.name] = GraphInput("input", positions[i - len(names)], meta)
    mutations = []
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is aten.copy_.default and node.args[0].op == "placeholder":
            target = described[node.args[0].name]
            if target.kind != "input":  # a forward input written in place: the harness rejects that anyway
                mutations.append((str(target.ref), node.args[1]))
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    result = out_node.args[0]
    is_tuple = isinstance(result, (tuple, list))
    flat = list(result) if is_tuple else [result]
    # the forward's results, then the buffer updates: one output node keeps both alive through DCE
    out_node.args = (tuple(flat + [v for _, v in mutations]),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return OpGraph(gm=gm, inputs=described, n_outputs=len(flat), output_tuple=is_tuple,
                   mutation_targets=[t for t, _ in mutations], scalar_inputs=scalars, n_forward_inputs=n_inputs)
