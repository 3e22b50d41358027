"""Per op family: how a traced signature becomes a forward that calls the library's launcher.

Usage: lines = render_forward(signature)   # raises AdaptError when the family's launcher cannot serve it

Each renderer reads the traced calls (agent_client.signature.OpCall) and writes the body of
`ModelNew.forward(self, *inputs)`. Only the launcher functions that the family's kernel.py defines
are called; a spec shape the launcher does not cover is refused with the reason, not approximated.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_client.offline.adapt import AdaptError
from agent_client.signature import Arg, OpCall, OpSignature

Renderer = Callable[[OpSignature], list[str]]
RENDERERS: dict[str, Renderer] = {}


def renderer(family: str):
    def register(fn: Renderer) -> Renderer:
        RENDERERS[family] = fn
        return fn
    return register


def render_forward(sig: OpSignature) -> list[str]:
    if sig.family not in RENDERERS:
        raise AdaptError(f"no adapter for op family {sig.family!r}")
    return RENDERERS[sig.family](sig)


def expr(arg: Arg) -> str:
    """Python source for an argument inside ModelNew.forward."""
    if arg.kind == "input":
        return f"inputs[{arg.ref}]"
    if arg.kind == "param":
        return f"self.{arg.ref}"
    if arg.kind == "tmp":
        return f"t{arg.ref}"
    if isinstance(arg.ref, str) and arg.ref.startswith("tensor("):
        raise AdaptError(f"the spec uses a tensor created inside forward ({arg.ref}); no adapter for that")
    return repr(arg.ref)


def _same(a: Arg, b: Arg | None) -> bool:
    return b is not None and a.kind == b.kind and a.ref == b.ref


def _get(op: OpCall, index: int, name: str, default=None) -> Arg | None:
    if name in op.kwargs:
        return op.kwargs[name]
    if len(op.args) > index:
        return op.args[index]
    return None if default is None else Arg("const", default)


def _const(op: OpCall, index: int, name: str, default=None):
    arg = _get(op, index, name, default)
    if arg is None:
        return default
    if arg.kind != "const":
        raise AdaptError(f"{op.name}: argument {name} must be a constant, the spec passes {arg.render()}")
    return arg.ref


def _last_dim(op: OpCall, dim, ndim: int) -> None:
    if dim is None or dim not in (-1, ndim - 1):
        raise AdaptError(f"{op.name} over dim={dim}: the library kernel reduces the last dimension only")


def _single(sig: OpSignature) -> OpCall:
    if len(sig.ops) != 1:
        raise AdaptError(f"{sig.family}: expected one call, the spec makes {len(sig.ops)}: {sig.text}")
    return sig.ops[0]


# ---- pointwise -------------------------------------------------------------------------------
_UNARY_SIMPLE = {"relu", "silu", "mish", "sigmoid", "tanh", "hardswish"}


@renderer("pointwise")
def _pointwise(sig: OpSignature) -> list[str]:
    chain: list[tuple] = []
    bias: str | None = None
    current = None  # the Arg holding the running value
    for i, op in enumerate(sig.ops):
        tensors = [a for a in op.args if a.kind in {"input", "tmp"}]
        if current is None:
            if not tensors or tensors[0].kind != "input":
                raise AdaptError(f"pointwise: the first call {op.render()} does not read a spec input")
            current = tensors[0]
        elif not any(_same(a, current) for a in tensors):
            raise AdaptError(f"pointwise: {op.render()} does not continue the chain (two live values)")
        others = [a for a in op.args if not _same(a, current)]
        name = op.name
        if name in _UNARY_SIMPLE:
            chain.append((name,))
        elif name == "gelu":
            approx = _const(op, 1, "approximate", "none")
            chain.append(("gelu_tanh",) if approx == "tanh" else ("gelu",))
        elif name == "softplus":
            if _const(op, 1, "beta", 1) != 1 or _const(op, 2, "threshold", 20) != 20:
                raise AdaptError("pointwise: softplus with beta/threshold other than 1/20")
            chain.append(("softplus",))
        elif name == "leaky_relu":
            chain.append(("leaky_relu", float(_const(op, 1, "negative_slope", 0.01))))
        elif name in {"clamp", "hardtanh", "relu6"}:
            lo_default, hi_default = {"clamp": (None, None), "hardtanh": (-1.0, 1.0), "relu6": (0.0, 6.0)}[name]
            lo = _const(op, 1, "min_val" if name == "hardtanh" else "min", lo_default)
            hi = _const(op, 2, "max_val" if name == "hardtanh" else "max", hi_default)
            chain.append(("clamp", float("-inf") if lo is None else float(lo),
                          float("inf") if hi is None else float(hi)))
        elif name in {"mul", "add", "sub", "div"} and len(others) == 1:
            other = others[0]
            if other.kind == "const" and isinstance(other.ref, (int, float)):
                value = float(other.ref)
                if name == "sub" and not _same(op.args[0], current):
                    raise AdaptError("pointwise: constant - x is not in the library chain")
                if name == "div" and not _same(op.args[0], current):
                    raise AdaptError("pointwise: constant / x is not in the library chain")
                chain.append({"mul": ("mul", value), "add": ("add", value), "sub": ("add", -value),
                              "div": ("mul", 1.0 / value)}[name])
            elif other.kind == "param" and name == "add" and bias is None:
                bias = expr(other)
                chain.append(("bias",))
            else:
                raise AdaptError(f"pointwise: {op.render()} combines two tensors; the chain takes one bias")
        else:
            raise AdaptError(f"pointwise: {op.name} is not in the library chain")
        current = Arg("tmp", i)
    lines = ["x = inputs[0]"]
    if bias is None:
        lines.append(f"return pointwise_chain(x, {chain!r})")
    else:
        lines += [f"b = {bias}",
                  "inner = 1",
                  "for d in x.shape[x.dim() - (b.dim() - 1):] if b.dim() > 1 else ():",
                  "    inner *= d",
                  f"return pointwise_chain(x, {chain!r}, b, inner)"]
    return lines


# ---- softmax / log_softmax --------------------------------------------------------------------
def _softmax_like(sig: OpSignature, launcher: str, op_name: str) -> list[str]:
    op = _single(sig)
    if op.name != op_name or op.args[0].kind != "input":
        raise AdaptError(f"{sig.family}: expected {op_name}(input, dim), got {op.render()}")
    _last_dim(op, _const(op, 1, "dim"), len(op.args[0].shape or ()))
    return [f"return {launcher}({expr(op.args[0])})"]


@renderer("softmax")
def _softmax(sig):
    return _softmax_like(sig, "softmax_rows", "softmax")


@renderer("log_softmax")
def _log_softmax(sig):
    return _softmax_like(sig, "log_softmax_rows", "log_softmax")


# ---- gemm with epilogue -----------------------------------------------------------------------
_GEMM_ACTS = {"relu": "relu", "gelu": "gelu", "silu": "silu"}


@renderer("gemm_epilogue")
def _gemm(sig: OpSignature) -> list[str]:
    head, rest = sig.ops[0], list(sig.ops[1:])
    if head.name == "linear":
        x, w = head.args[0], head.args[1]
        b = _get(head, 2, "bias")
        weight, bias = expr(w), (expr(b) if b is not None and b.kind != "const" else "None")
    elif head.name == "matmul" and len(head.args) == 2:
        x, w = head.args
        weight, bias = f"{expr(w)}.t()", "None"
    else:
        raise AdaptError(f"gemm_epilogue: first call {head.render()} is not a linear or matmul")
    if x.kind != "input":
        raise AdaptError("gemm_epilogue: the matmul must read a spec input")
    activation, scale, residual, current = "none", 1.0, "None", Arg("tmp", 0)
    for i, op in enumerate(rest, start=1):
        others = [a for a in op.args if not _same(a, current)]
        if op.name in _GEMM_ACTS and activation == "none" and scale == 1.0 and residual == "None":
            activation = _GEMM_ACTS[op.name]
            if op.name == "gelu" and _const(op, 1, "approximate", "none") == "tanh":
                activation = "gelu_tanh"
        elif op.name in {"mul", "div"} and residual == "None" and len(others) == 1 \
                and others[0].kind == "const" and isinstance(others[0].ref, (int, float)):
            scale *= float(others[0].ref) if op.name == "mul" else 1.0 / float(others[0].ref)
        elif op.name == "add" and residual == "None" and len(others) == 1 and others[0].kind == "input":
            residual = expr(others[0])
        elif op.name == "add" and bias == "None" and len(others) == 1 and others[0].kind == "param" \
                and activation == "none" and scale == 1.0:
            bias = expr(others[0])
        else:
            raise AdaptError(f"gemm_epilogue: {op.render()} is not act(x W^T + b) * scale + residual")
        current = Arg("tmp", i)
    return [f"return gemm_epilogue({expr(x)}, {weight}, {bias}, {residual}, {scale!r}, {activation!r})"]


# ---- pooling ----------------------------------------------------------------------------------
@renderer("pool2d")
def _pool(sig: OpSignature) -> list[str]:
    op = _single(sig)
    kind = {"max_pool2d": "max", "avg_pool2d": "avg"}[op.name]
    k = _const(op, 1, "kernel_size")
    s = _const(op, 2, "stride", None)
    p = _const(op, 3, "padding", 0)
    if op.name == "max_pool2d":
        if _const(op, 4, "dilation", 1) not in (1, (1, 1)) or _const(op, 5, "ceil_mode", False):
            raise AdaptError("pool2d: dilation and ceil_mode are not in the library kernel")
        if _const(op, 6, "return_indices", False):
            raise AdaptError("pool2d: return_indices is not in the library kernel")
    else:
        if _const(op, 4, "ceil_mode", False) or not _const(op, 5, "count_include_pad", True) \
                or _const(op, 6, "divisor_override", None) is not None:
            raise AdaptError("pool2d: avg pooling only with count_include_pad=True, no ceil_mode/divisor")
    stride = "None" if s in (None, ()) else repr(s)
    return [f"return pool2d({expr(op.args[0])}, {kind!r}, {k!r}, {stride}, {p!r})"]


# ---- attention --------------------------------------------------------------------------------
@renderer("attention")
def _attention(sig: OpSignature) -> list[str]:
    op = _single(sig)
    if op.name != "scaled_dot_product_attention":
        raise AdaptError("attention: only F.scaled_dot_product_attention specs are adapted")
    q, k, v = (op.args[i] for i in range(3))
    if _get(op, 3, "attn_mask") is not None and _const(op, 3, "attn_mask") is not None:
        raise AdaptError("attention: an explicit attn_mask is not in the library kernel")
    if _const(op, 4, "dropout_p", 0.0):
        raise AdaptError("attention: dropout is not in the library kernel")
    causal = bool(_const(op, 5, "is_causal", False))
    scale = _const(op, 6, "scale", None)
    return [f"return attention({expr(q)}, {expr(k)}, {expr(v)}, {causal!r}, {scale!r})"]
