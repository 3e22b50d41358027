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
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._pytree import tree_flatten, tree_unflatten, treespec_dumps

from agent_client.opgraph.decompose import decomposition_table
from agent_client.opgraph.graph import GraphInput, OpGraph, TensorMeta
from harness.redirect import model_on_meta, tensors_on
from harness.spec import SpecError, argument_list

aten = torch.ops.aten

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
    _without_compile(module)
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise TraceError(f"spec {path}: missing {missing} (KernelBench format: Model, get_inputs, "
                         "get_init_inputs)")
    return module



def _eager(value):
    """The function under a torch.compile wrapper, or the value itself."""
    return getattr(value, "_torchdynamo_orig_callable", value)


def _without_compile(module) -> None:
    # Helpers and methods decorated with @torch.compile run as written: the trace records their ops (FX
    # cannot trace through dynamo), and the lowering fuses them as it would anyway
    for name, value in list(vars(module).items()):
        setattr(module, name, _eager(value))
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in list(vars(value).items()):
                if _eager(member) is not member:
                    setattr(value, attr, _eager(member))


def _compiled_submodules_eager(model: torch.nn.Module) -> torch.nn.Module:
    """Submodules wrapped by torch.compile in __init__ (OptimizedModule) call the module inside directly; the
    wrapper stays, so parameters keep the names the spec's own model gives them (`a._orig_mod.0.weight`)."""
    for module in model.modules():
        inner = getattr(module, "_orig_mod", None)
        if isinstance(inner, torch.nn.Module):
            module.forward = inner.__call__
    return model


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
    with tensors_on("cpu"):
        init = argument_list(module.get_init_inputs(**init_kwargs), "get_init_inputs")
    def build():
        torch.manual_seed(0)
        return module.Model(*init)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_on_meta(build)
    if isinstance(model, torch.nn.Module):
        model = _compiled_submodules_eager(model)
    with tensors_on("meta"):
        torch.manual_seed(0)
        inputs = argument_list(module.get_inputs(**input_kwargs), "get_inputs")
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
    except SpecError as exc:
        raise TraceError(f"spec {path}: {exc}") from exc
    except Exception as exc:
        raise TraceError(f"spec {path}: building the model or its inputs failed: {_where(exc, path)}"
                         f"{type(exc).__name__}: {exc}") from exc
    state, kinds = _state(model)
    # Fake tensors that report the CPU (their data stays on the meta device): a tensor the forward makes
    # from Python values on its input's device (torch.tensor(0.5, device=x.device)) is then a real constant
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    state = {k: _fake(mode, v) for k, v in state.items()}
    # nested arguments (a list of feature maps) are flattened: positions count their leaves
    leaves, in_spec = tree_flatten(list(inputs))
    nested_inputs = len(leaves) != len(inputs) or any(isinstance(x, (list, tuple, dict)) for x in inputs)
    inputs = [_fake(mode, x) if isinstance(x, torch.Tensor) else x for x in leaves]
    positions = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    scalars = {i: x for i, x in enumerate(inputs) if not isinstance(x, torch.Tensor)}

    returned = {}

    def forward(state_values: dict, *tensors):
        args = list(inputs)
        for i, t in zip(positions, tensors):
            args[i] = t
        args = tree_unflatten(args, in_spec)
        with tensors_on("cpu"):  # where the fake tensors say they live, whatever device the spec names
            out = torch.func.functional_call(model, state_values, tuple(args), tie_weights=False)
        returned["tuple"] = isinstance(out, (tuple, list))
        flat, out_spec = tree_flatten(out)
        if not isinstance(out, torch.Tensor) and not (returned["tuple"] and len(flat) == len(out)):
            # a dict or nested results: the graph returns the leaves, the candidate rebuilds the structure
            returned["tuple"], returned["spec"] = True, treespec_dumps(out_spec)
            return tuple(flat)
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
    graph.output_spec = returned.get("spec")
    graph.input_spec = treespec_dumps(in_spec) if nested_inputs else None
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
