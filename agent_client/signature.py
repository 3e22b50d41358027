"""Trace a spec's reference program into a normalised op signature.

Usage: sig = trace_signature(Path("examples/specs/rmsnorm.py")); print(sig.family, sig.text)

The reference `Model` is built and run on PyTorch's meta device, so tracing costs no memory and
no time whatever the spec's shapes: only shapes and dtypes flow. A TorchFunctionMode records the
top-level calls (F.softmax, torch.relu, Tensor.__mul__, F.linear inside nn.Linear ...) with their
arguments described as spec inputs, parameters, earlier results or constants. The op family is then
read off that list by a few ordered rules. The spec is reference code the user gave us (trusted),
never a candidate.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from harness.redirect import model_on_meta, tensors_on
from harness.spec import argument_list

# Calls that only read metadata or change layout: kept out of the signature.
_IGNORED = {
    "size", "dim", "shape", "__get__", "numel", "stride", "is_contiguous", "contiguous", "view", "reshape",
    "flatten", "unsqueeze", "squeeze", "expand", "expand_as", "__getitem__", "type_as", "to", "float",
    "detach", "__len__", "element_size", "data_ptr", "device", "dtype", "__format__", "__repr__",
    "ndim", "requires_grad", "is_cuda", "_has_compatible_shallow_copy_type", "__setstate__",
}
_NOISE_KWARGS = {"inplace", "out"}  # do not change what is computed
UNARY = {
    "relu", "gelu", "silu", "sigmoid", "tanh", "mish", "softplus", "hardswish", "hardsigmoid",
    "leaky_relu", "elu", "selu", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "clamp", "clip",
    "hardtanh", "relu6", "erf", "square", "reciprocal", "sin", "cos", "log1p", "expm1",
}
BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "rsub", "where"}
POINTWISE = UNARY | BINARY
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod"}
_ALIASES = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add", "__sub__": "sub", "__rsub__": "rsub",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul", "__truediv__": "div", "__rtruediv__": "div",
    "__pow__": "pow", "__neg__": "neg", "clip": "clamp", "multiply": "mul", "divide": "div",
    "subtract": "sub", "true_divide": "div", "matmul": "matmul",
    "mm": "matmul", "bmm": "matmul", "__matmul__": "matmul", "addmm": "linear", "max_pool2d_with_indices":
    "max_pool2d", "_softmax": "softmax", "special_log_softmax": "log_softmax",
}


@dataclass(frozen=True)
class Arg:
    """One argument of a traced call: a spec input, a parameter/buffer, an earlier result, or a constant."""

    kind: str  # "input" | "param" | "tmp" | "const"
    ref: Any  # input index, parameter name, op index, or the constant's value
    shape: tuple[int, ...] | None = None
    dtype: str | None = None

    def render(self) -> str:
        if self.kind == "input":
            return f"in{self.ref}"
        if self.kind == "param":
            return f"p:{self.ref}"
        if self.kind == "tmp":
            return f"t{self.ref}"
        return repr(self.ref)


@dataclass(frozen=True)
class OpCall:
    name: str  # normalised op name ("softmax", "linear", "mul" ...)
    args: tuple[Arg, ...]
    kwargs: dict[str, Arg] = field(default_factory=dict)
    out_shape: tuple[int, ...] | None = None

    def render(self) -> str:
        parts = [a.render() for a in self.args] + [f"{k}={v.render()}" for k, v in sorted(self.kwargs.items())]
        return f"{self.name}({', '.join(parts)})"


@dataclass(frozen=True)
class OpSignature:
    """The normalised signature of a spec: its calls in order and the op family they form."""

    ops: tuple[OpCall, ...]
    family: str | None  # a library op family, or None when no rule fits
    inputs: tuple[tuple[tuple[int, ...], str], ...]  # (shape, dtype) of each forward input
    params: dict[str, tuple[int, ...]]  # parameter and buffer names -> shapes
    training: bool = True

    @property
    def text(self) -> str:
        return " ; ".join(op.render() for op in self.ops)

    def query(self) -> str:
        """Words for retrieving library kernels and passages about this signature."""
        names = " ".join(dict.fromkeys(op.name for op in self.ops))
        return f"{self.family or 'kernel'} {names}"


class _Recorder(TorchFunctionMode):
    def __init__(self, inputs: list[torch.Tensor], named: dict[int, str]):
        super().__init__()
        self.ids: dict[int, Arg] = {id(t): _arg("input", i, t) for i, t in enumerate(inputs)}
        self.named = named
        self.ops: list[OpCall] = []

    def _describe(self, value: Any) -> Arg:
        if isinstance(value, torch.Tensor):
            if id(value) in self.ids:
                return self.ids[id(value)]
            if id(value) in self.named:
                return _arg("param", self.named[id(value)], value)
            return _arg("const", f"tensor{tuple(value.shape)}", value)
        if isinstance(value, (list, tuple)):
            return Arg("const", tuple(self._describe(v).ref if not isinstance(v, torch.Tensor)
                                      else self._describe(v).render() for v in value))
        if isinstance(value, (torch.dtype, torch.device, torch.Size)):
            return Arg("const", str(value))
        return Arg("const", value)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = _normalise(func)
        if name in _IGNORED:
            src = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if not isinstance(out, torch.Tensor) or src is None or id(src) not in self.ids:
                return out
            if out.shape == src.shape and out.dtype == src.dtype:
                # a no-op on the values (contiguous, detach, same-shape view): same value, same name
                self.ids[id(out)] = self.ids[id(src)]
                return out
            # a reshape or a cast changes what later calls see: it stays in the signature, so that
            # no adapter silently drops it
        self._record(name, args, kwargs, out)
        return out

    def _record(self, name: str, args: tuple, kwargs: dict, out: Any) -> None:
        first = self._describe(args[0]) if args else None
        if first is not None and first.kind == "param" and str(first.ref).endswith("num_batches_tracked"):
            return  # BatchNorm's step counter: bookkeeping, not part of the computation
        call = OpCall(name, tuple(self._describe(a) for a in args),
                      {k: self._describe(v) for k, v in kwargs.items() if k not in _NOISE_KWARGS},
                      tuple(out.shape) if isinstance(out, torch.Tensor) else None)
        index = len(self.ops)
        self.ops.append(call)
        results = out if isinstance(out, (tuple, list)) else (out,)
        for r in results:
            if isinstance(r, torch.Tensor):
                self.ids[id(r)] = _arg("tmp", index, r)


_CASTS = {"to", "float", "type_as"}
_SIXTEEN_BITS = {"bfloat16", "float16"}


def _cast_to(op: OpCall) -> str | None:
    """The dtype a recorded cast converts to ("float32"), else None."""
    if op.name not in _CASTS or not op.args:
        return None
    if op.name == "float":
        return "float32"
    target = op.kwargs.get("dtype") or (op.args[1] if len(op.args) > 1 else None)
    if target is None:
        return None
    if target.kind in ("tmp", "input", "param"):  # type_as(other)
        return target.dtype
    return str(target.ref).removeprefix("torch.")


def _without_fp32_round_trip(ops: tuple[OpCall, ...]) -> tuple[OpCall, ...]:
    """A 16-bit input cast up to fp32 first and the result cast back to its dtype before it is returned (how
    model code writes a norm or a softmax: Llama's RMSNorm, `softmax(x.float()).to(x.dtype)`) is the library
    kernels' own precision, which loads 16 bits and sums in fp32: the two casts leave the signature, so the
    ops match their family. Kept where anything after the cast back is of another dtype (an fp32 weight makes
    an fp32 output, which a 16-bit kernel does not return)."""
    if len(ops) < 3:
        return ops
    up, x = ops[0], ops[0].args[0] if ops[0].args else None
    if x is None or x.kind != "input" or x.dtype not in _SIXTEEN_BITS or _cast_to(up) != "float32":
        return ops
    downs = [i for i, op in enumerate(ops) if i and _cast_to(op) == x.dtype]
    if len(downs) != 1:
        return ops
    down = downs[0]
    after = [a for op in ops[down + 1:] for a in [*op.args, *op.kwargs.values()] if a.kind in ("param", "input")]
    if any(a.dtype != x.dtype for a in after):
        return ops
    renamed: dict[int, Arg | int] = {0: x}  # an old result's index -> what stands for it, or its new index
    out: list[OpCall] = []

    def fix(a: Arg) -> Arg:
        if a.kind != "tmp":
            return a
        now = renamed[a.ref]
        return now if isinstance(now, Arg) else Arg("tmp", now, a.shape, a.dtype)

    for i, op in enumerate(ops):
        if i == 0:
            continue
        if i == down:
            renamed[i] = fix(op.args[0])
            continue
        out.append(OpCall(op.name, tuple(fix(a) for a in op.args), {k: fix(v) for k, v in op.kwargs.items()},
                          op.out_shape))
        renamed[i] = len(out) - 1
    return tuple(out)


def _arg(kind: str, ref: Any, t: torch.Tensor) -> Arg:
    return Arg(kind, ref, tuple(t.shape), str(t.dtype).removeprefix("torch."))


def _normalise(func: Any) -> str:
    name = getattr(func, "__name__", None) or str(func)
    if name == "__get__":  # a property such as Tensor.shape
        name = getattr(getattr(func, "__self__", None), "__name__", "__get__")
    name = _ALIASES.get(name, name)
    return name.rstrip("_") if name.endswith("_") and not name.startswith("__") else name


def load_spec_module(path: Path):
    """Import a spec file as a fresh module (the spec is trusted reference code)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"spec {path} does not exist")
    name = f"_kkb_spec_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise ValueError(f"spec {path} defines no {attr}: a KernelBench-format spec needs Model, "
                             "get_inputs() and get_init_inputs()")
    return module


def trace_signature(spec_path: Path) -> OpSignature:
    """Run the spec's Model on the meta device and return its normalised op signature."""
    module = load_spec_module(spec_path)
    with tensors_on("meta"):
        init = argument_list(module.get_init_inputs(), "get_init_inputs")
    model = model_on_meta(lambda: module.Model(*init))
    with tensors_on("meta"):
        inputs = argument_list(module.get_inputs(), "get_inputs")
    named = {id(p): n for n, p in model.named_parameters()}
    named.update({id(b): n for n, b in model.named_buffers()})
    rec = _Recorder([t for t in inputs if isinstance(t, torch.Tensor)], named)
    with torch.no_grad(), tensors_on("meta"), rec:
        model(*inputs)
    ops = _without_fp32_round_trip(tuple(rec.ops))
    return OpSignature(
        ops=ops,
        family=classify(ops),
        inputs=tuple((tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in inputs
                     if isinstance(t, torch.Tensor)),
        params={n: tuple(p.shape) for n, p in list(model.named_parameters()) + list(model.named_buffers())},
        training=model.training,
    )


def classify(ops: tuple[OpCall, ...]) -> str | None:
    """The library op family a list of calls forms, or None. Rules run in order; first match wins."""
    names = [op.name for op in ops]
    if not names:
        return None
    rest = [n for n in names[1:]]
    if "scaled_dot_product_attention" in names:
        return "attention"
    if names.count("matmul") == 2 and "softmax" in names:
        return "attention"
    head = names[0]
    if _is_gemm(names):
        return "gemm_epilogue"
    if head in {"max_pool2d", "avg_pool2d"} and not rest:
        return "pool2d"
    if _is_single_conv(names):
        return "conv"
    singles = {"softmax": "softmax", "log_softmax": "log_softmax", "layer_norm": "layernorm",
               "rms_norm": "rmsnorm", "group_norm": "groupnorm", "batch_norm": "batchnorm",
               "cross_entropy": "cross_entropy", "cumsum": "cumsum"}
    if len(names) == 1 and head in singles:
        return singles[head]
    if names == ["log_softmax", "nll_loss"]:  # a cross entropy written in two calls
        return "cross_entropy"
    if len(names) == 1 and head in REDUCTIONS:
        return "reduction"
    if _is_manual_rmsnorm(names):
        return "rmsnorm"
    if all(n in POINTWISE for n in names):
        return "pointwise"
    return None


CONVOLUTIONS = {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}


def _is_single_conv(names: list[str]) -> bool:
    # one convolution alone: a convolution with an epilogue is the general lowering's, which runs the conv
    # family's mainloop with the epilogue fused
    return len(names) == 1 and names[0] in CONVOLUTIONS


def _is_manual_rmsnorm(names: list[str]) -> bool:
    # x * rsqrt(mean(x*x or x**2, -1) + eps) [* weight]: the usual hand-written RMSNorm.
    core = [n for n in names if n not in {"mul", "pow", "add", "div", "sqrt", "rsqrt"}]
    return core == ["mean"] and ("rsqrt" in names or "sqrt" in names)


def _is_gemm(names: list[str]) -> bool:
    # a matmul or linear map (its operands possibly transposed first), then elementwise ops and a row reduction;
    # the family's adapter checks each op and refuses what its epilogue does not cover
    lead = 0
    while lead < len(names) and names[lead] in {"T", "t", "transpose"}:
        lead += 1
    return lead < len(names) and names[lead] in {"linear", "matmul"} and \
        all(n in POINTWISE or n in {"sum", "mean", "amax"} for n in names[lead + 1:])
