"""Per op family: how a traced signature becomes a forward that calls the library's launcher.

Usage: lines = render_forward(signature)   # raises AdaptError when the family's launcher cannot serve it

Each renderer reads the traced calls (agent_client.signature.OpCall) and writes the body of
`ModelNew.forward(self, *inputs)`. Only the launcher functions that the family's kernel.py defines
are called; a spec shape the launcher does not cover is refused with the reason, not approximated.
"""

from __future__ import annotations

import math
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


def _literal(value) -> str:
    """Python source for a constant; infinities need a call, their repr is not valid source."""
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(value)


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
    chain_src = "[" + ", ".join("(" + ", ".join(_literal(v) for v in op) + ",)" for op in chain) + "]"
    if bias is None:
        lines.append(f"return pointwise_chain(x, {chain_src})")
    else:
        lines += [f"b = {bias}",
                  "inner = 1",
                  "for d in x.shape[x.dim() - (b.dim() - 1):] if b.dim() > 1 else ():",
                  "    inner *= d",
                  f"return pointwise_chain(x, {chain_src}, b, inner)"]
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
# the spec's ops after its matmul, as the library kernel's epilogue chain (corpus/kernels/gemm_epilogue/chain.py)
_GEMM_UNARY = {"relu", "silu", "sigmoid", "tanh", "mish", "hardswish"}
_GEMM_MAX_CHAIN = 6


@renderer("gemm_epilogue")
def _gemm(sig: OpSignature) -> list[str]:
    ops = list(sig.ops)
    views: dict[int, str] = {}  # a transpose of a 2D input or parameter, as the expression of its view
    views_src: dict[int, str] = {}  # and of what it transposes
    i = 0
    while i < len(ops) and ops[i].name in ("T", "t", "transpose"):
        op = ops[i]
        src = op.args[0] if op.args else None
        if src is None or src.kind not in ("input", "param") or len(src.shape or ()) != 2:
            raise AdaptError(f"gemm_epilogue: {op.render()} is not a transpose of a 2D input or parameter")
        if op.name == "transpose" and sorted(_const(op, j, n) % 2 for j, n in ((1, "dim0"), (2, "dim1"))) != [0, 1]:
            raise AdaptError(f"gemm_epilogue: {op.render()} does not swap the two dims")
        views[i], views_src[i] = f"{expr(src)}.t()", expr(src)
        i += 1
    if i >= len(ops):
        raise AdaptError("gemm_epilogue: no matmul")

    def operand(arg: Arg) -> str:
        if arg.kind == "tmp" and arg.ref in views:
            return views[arg.ref]
        if arg.kind in ("input", "param"):
            return expr(arg)
        raise AdaptError(f"gemm_epilogue: the matmul reads {arg.render()}, not a spec input, parameter or their "
                         "transpose")

    head = ops[i]
    if head.name == "linear":
        x, w = head.args[0], head.args[1]
        b = _get(head, 2, "bias")
        weight, bias = operand(w), (expr(b) if b is not None and b.kind != "const" else None)
    elif head.name == "matmul" and len(head.args) == 2:
        x, w = head.args
        if len(w.shape or ()) != 2 or len(x.shape or ()) < 2:
            raise AdaptError(f"gemm_epilogue: {head.render()} is batched or a vector product; the library kernel "
                             "multiplies rows by one 2D matrix")
        # weight = B^T: a transposed view's source as it is, anything else transposed
        weight = views_src[w.ref] if w.kind == "tmp" and w.ref in views_src else f"{operand(w)}.t()"
        bias = None
    else:
        raise AdaptError(f"gemm_epilogue: {head.render()} is not a linear or matmul")
    x_expr = operand(x)
    chain: list[tuple] = []
    residual, reduce, keepdim, current = "None", "none", False, Arg("tmp", i)
    rest = ops[i + 1:]
    j = 0
    while j < len(rest):
        op, index = rest[j], i + 1 + j
        others = [a for a in op.args if not _same(a, current)]
        nxt = rest[j + 1] if j + 1 < len(rest) else None
        if reduce == "sum" and op.name not in ("mul", "div"):
            raise AdaptError(f"gemm_epilogue: {op.render()} after the row sum is not in the library kernel")
        if residual != "None" and op.name != "sum":
            raise AdaptError(f"gemm_epilogue: {op.render()} after the residual add is not in the library kernel")
        if op.name == "sigmoid" and nxt is not None and nxt.name == "mul" and \
                {a.render() for a in nxt.args} == {Arg("tmp", index).render(), current.render()}:
            chain.append(("silu",))  # x * sigmoid(x), written out
            j, current = j + 2, Arg("tmp", index + 1)
            continue
        if op.name in _GEMM_UNARY:
            chain.append((op.name,))
        elif op.name == "gelu":
            chain.append(("gelu_tanh",) if _const(op, 1, "approximate", "none") == "tanh" else ("gelu",))
        elif op.name == "softplus":
            if _const(op, 1, "beta", 1) != 1 or _const(op, 2, "threshold", 20) != 20:
                raise AdaptError("gemm_epilogue: softplus with beta/threshold other than 1/20")
            chain.append(("softplus",))
        elif op.name == "leaky_relu":
            chain.append(("leaky_relu", float(_const(op, 1, "negative_slope", 0.01))))
        elif op.name in {"clamp", "hardtanh", "relu6"}:
            lo_default, hi_default = {"clamp": (None, None), "hardtanh": (-1.0, 1.0), "relu6": (0.0, 6.0)}[op.name]
            lo = _const(op, 1, "min_val" if op.name == "hardtanh" else "min", lo_default)
            hi = _const(op, 2, "max_val" if op.name == "hardtanh" else "max", hi_default)
            chain.append(("clamp", float("-inf") if lo is None else float(lo), float("inf") if hi is None else float(hi)))
        elif op.name in {"mul", "add", "sub", "div"} and len(others) == 1 and others[0].kind == "const" \
                and isinstance(others[0].ref, (int, float)):
            value = float(others[0].ref)
            if op.name in ("sub", "div") and not _same(op.args[0], current):
                raise AdaptError(f"gemm_epilogue: {op.render()} (a constant minus or over x) is not in the chain")
            chain.append({"mul": ("mul", value), "add": ("add", value), "sub": ("add", -value),
                          "div": ("mul", 1.0 / value)}[op.name])
        elif op.name == "add" and len(others) == 1 and others[0].kind == "param" and not chain \
                and tuple(others[0].shape or ()) == (tuple(head.out_shape or ())[-1:]):
            bias = expr(others[0]) if bias is None else f"({bias} + {expr(others[0])})"  # a second bias, added first
        elif op.name == "add" and len(others) == 1 and others[0].kind == "input" \
                and tuple(others[0].shape or ()) == tuple(op.out_shape or ()):
            residual = expr(others[0])
        elif op.name == "sum" and reduce == "none" \
                and _const(op, 1, "dim", None) in (-1, len(op.args[0].shape or ()) - 1, [-1], (-1,)):
            reduce = "sum"  # a row sum of the epilogue's result
            keepdim = bool(_const(op, 2, "keepdim", False))
        elif reduce == "sum" and op.name in ("mul", "div") and len(others) == 1 and others[0].kind == "const" \
                and isinstance(others[0].ref, (int, float)) and _same(op.args[0], current):
            value = float(others[0].ref)  # a scale of the row sum: the sum of the scaled row
            chain.append(("mul", value if op.name == "mul" else 1.0 / value))
        else:
            raise AdaptError(f"gemm_epilogue: {op.render()} is not in the library kernel's epilogue")
        if len(chain) > _GEMM_MAX_CHAIN:
            raise AdaptError(f"gemm_epilogue: more than {_GEMM_MAX_CHAIN} elementwise ops after the matmul")
        current = Arg("tmp", index)
        j += 1
    chain_src = "[" + ", ".join("(" + ", ".join(_literal(v) for v in c) + ",)" for c in chain) + "]"
    call = (f"gemm_epilogue({x_expr}, {weight}, {bias or 'None'}, {residual}, 1.0, 'none', {reduce!r}, "
            f"chain={chain_src})")
    return [f"return {call}.unsqueeze(-1)" if keepdim else f"return {call}"]


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


# ---- convolution ------------------------------------------------------------------------------
@renderer("conv")
def _conv(sig: OpSignature) -> list[str]:
    op = _single(sig)
    transposed = op.name.startswith("conv_transpose")
    x, weight, bias = _get(op, 0, "input"), _get(op, 1, "weight"), _get(op, 2, "bias")
    if x is None or x.kind != "input" or weight is None or weight.kind != "param":
        raise AdaptError(f"conv: {op.render()} must read a spec input and a parameter weight")
    names = ("stride", "padding", "output_padding", "groups", "dilation") if transposed else \
        ("stride", "padding", "dilation", "groups")
    values = {name: _const(op, 3 + i, name, 0 if name in ("padding", "output_padding") else 1)
              for i, name in enumerate(names)}
    if isinstance(values["padding"], str):
        raise AdaptError(f"conv: padding={values['padding']!r} is not in the library kernel (the general lowering "
                         "serves it)")
    dtype = sig.inputs[0][1] if sig.inputs else "float32"
    if dtype in ("bfloat16", "float16"):
        raise AdaptError(f"conv: {dtype} input: the library kernel's edge is 3xTF32 against cuDNN's fp32; in 16 "
                         "bits cuDNN on the tensor cores was faster (0.65x torch.compile on an H100, "
                         "corpus/kernels/conv/NOTES.md), so the general lowering and torch.compile serve it")
    groups = int(values["groups"])
    cin_g = (weight.shape[0] if transposed else weight.shape[1] * groups) // max(groups, 1)
    cout_g = weight.shape[1] if transposed else weight.shape[0] // max(groups, 1)
    if cout_g < 16 or cin_g * math.prod(weight.shape[2:]) < 16:  # the lowering's own rule for its direct kernel
        raise AdaptError(f"conv: {cout_g} output channels a group, {cin_g} input channels a group: a thin or "
                         "depthwise convolution, which the general lowering's direct kernel serves")
    b = "None" if bias is None or bias.kind == "const" else expr(bias)
    return [(f"return conv({expr(x)}, {expr(weight)}, {b}, {values['stride']!r}, {values['padding']!r}, "
             f"{values['dilation']!r}, {groups}, {transposed}, {values.get('output_padding', 0)!r})")]


# ---- attention --------------------------------------------------------------------------------
@renderer("attention")
def _attention(sig: OpSignature) -> list[str]:
    if len(sig.ops) > 1:
        return _attention_by_hand(sig)
    op = _single(sig)
    if op.name != "scaled_dot_product_attention":
        raise AdaptError("attention: expected F.scaled_dot_product_attention or softmax(q k^T * s) v")
    q, k, v = (op.args[i] for i in range(3))
    if _get(op, 3, "attn_mask") is not None and _const(op, 3, "attn_mask") is not None:
        raise AdaptError("attention: an explicit attn_mask is not in the library kernel")
    if _const(op, 4, "dropout_p", 0.0):
        raise AdaptError("attention: dropout is not in the library kernel")
    causal = bool(_const(op, 5, "is_causal", False))
    scale = _const(op, 6, "scale", None)
    return [f"return attention({expr(q)}, {expr(k)}, {expr(v)}, {causal!r}, {scale!r})"]


# ---- normalisations ---------------------------------------------------------------------------
def _param(op: OpCall, index: int, name: str, family: str) -> str:
    arg = _get(op, index, name)
    if arg is None or arg.kind != "param":
        raise AdaptError(f"{family}: {name} must be a parameter of the module, got "
                         f"{arg.render() if arg else 'none'}")
    return expr(arg)


@renderer("layernorm")
def _layernorm(sig: OpSignature) -> list[str]:
    op = _single(sig)
    shape = tuple(_const(op, 1, "normalized_shape"))
    x_shape = tuple(op.args[0].shape or ())
    if not shape or x_shape[len(x_shape) - len(shape):] != shape:
        raise AdaptError(f"layernorm over {shape}: they must be the input's trailing dims, got {x_shape}")
    weight, bias = _param(op, 2, "weight", "layernorm"), _param(op, 3, "bias", "layernorm")
    eps = _const(op, 4, "eps", 1e-5)
    return [f"return layer_norm_rows({expr(op.args[0])}, {weight}, {bias}, {eps!r})"]


@renderer("rmsnorm")
def _rmsnorm(sig: OpSignature) -> list[str]:
    if len(sig.ops) == 1 and sig.ops[0].name == "rms_norm":
        op = sig.ops[0]
        shape = tuple(_const(op, 1, "normalized_shape"))
        x_shape = tuple(op.args[0].shape or ())
        if not shape or x_shape[len(x_shape) - len(shape):] != shape:
            raise AdaptError(f"rmsnorm over {shape}: they must be the input's trailing dims, got {x_shape}")
        weight = _param(op, 2, "weight", "rmsnorm")
        eps = _const(op, 3, "eps", None)
        if eps is None:
            raise AdaptError("rmsnorm: eps=None (dtype-dependent) is not adapted; give eps explicitly")
        return [f"return rms_norm_rows({expr(op.args[0])}, {weight}, {eps!r})"]
    x, dim, eps, weight = _manual_rmsnorm(sig)
    return [f"return rms_norm_dim({expr(x)}, {weight}, {eps!r}, {dim!r})"]


def _manual_rmsnorm(sig: OpSignature) -> tuple[Arg, int, float, str]:
    """(x, dim, eps, weight source or "None") of the hand-written form, checked call by call:
    x^2 (pow or x * x), its mean over one dim (keepdim), + eps, then x / sqrt(.) or x * rsqrt(.), and
    optionally a parameter times the result. Anything else is refused (the general lowering serves it)."""
    ops = list(sig.ops)
    bad = AdaptError(f"rmsnorm: the calls [{sig.text}] are not x / sqrt(mean(x^2, dim, keepdim) + eps) [* w]")
    if len(ops) not in (5, 6):
        raise bad
    sq, mean, add, root, apply = ops[:5]
    x = sq.args[0]
    if x.kind != "input":
        raise bad
    squares = (sq.name == "pow" and len(sq.args) == 2 and sq.args[1].ref == 2) or \
        (sq.name == "mul" and len(sq.args) == 2 and _same(sq.args[1], x))
    dim = _const(mean, 1, "dim")
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not squares or mean.name != "mean" or not _same(mean.args[0], Arg("tmp", 0)) or len(dims) != 1 \
            or dims[0] is None or not _const(mean, 2, "keepdim", False):
        raise bad
    others = [a for a in add.args if not _same(a, Arg("tmp", 1))]
    if add.name != "add" or len(others) != 1 or others[0].kind != "const" \
            or not isinstance(others[0].ref, (int, float)):
        raise bad
    tensors = {(a.kind, a.ref) for a in apply.args}
    if not (root.name == "sqrt" and apply.name == "div" and _same(apply.args[0], x)
            and _same(apply.args[1], Arg("tmp", 3))) and not (
            root.name == "rsqrt" and apply.name == "mul" and tensors == {(x.kind, x.ref), ("tmp", 3)}):
        raise bad
    if not _same(root.args[0], Arg("tmp", 2)):
        raise bad
    weight = "None"
    if len(ops) == 6:
        scale = ops[5]
        params = [a for a in scale.args if a.kind == "param"]
        if scale.name != "mul" or len(params) != 1 or not any(_same(a, Arg("tmp", 4)) for a in scale.args):
            raise bad
        rank, n = len(x.shape or ()), (x.shape or ())[dims[0]]
        w_shape = tuple(sig.params.get(str(params[0].ref), ()))
        along = (n,) + (1,) * (rank - 1 - dims[0] % max(rank, 1))  # broadcast along the normalised dim
        if w_shape[len(w_shape) - len(along):] != along or any(s != 1 for s in w_shape[:len(w_shape) - len(along)]):
            raise AdaptError(f"rmsnorm: weight of shape {w_shape} does not scale dim {dims[0]} of {x.shape}")
        weight = expr(params[0])
    return x, dims[0], float(others[0].ref), weight


@renderer("groupnorm")
def _groupnorm(sig: OpSignature) -> list[str]:
    op = _single(sig)
    groups = _const(op, 1, "num_groups")
    weight, bias = _param(op, 2, "weight", "groupnorm"), _param(op, 3, "bias", "groupnorm")
    eps = _const(op, 4, "eps", 1e-5)
    return [f"return group_norm({expr(op.args[0])}, {groups!r}, {weight}, {bias}, {eps!r})"]


@renderer("batchnorm")
def _batchnorm(sig: OpSignature) -> list[str]:
    op = _single(sig)
    if not _const(op, 5, "training", False):
        raise AdaptError("batchnorm: the library kernel is the training-mode kernel (batch statistics)")
    mean_arg = _get(op, 1, "running_mean")
    if mean_arg is None or mean_arg.kind != "param":
        raise AdaptError("batchnorm without running statistics is not adapted")
    mean, var = expr(mean_arg), _param(op, 2, "running_var", "batchnorm")
    weight, bias = _param(op, 3, "weight", "batchnorm"), _param(op, 4, "bias", "batchnorm")
    prefix = str(mean_arg.ref).rsplit(".", 1)[0] + "." if "." in str(mean_arg.ref) else ""
    momentum = _const(op, 6, "momentum", 0.1)
    eps = _const(op, 7, "eps", 1e-5)
    if momentum is None:
        raise AdaptError("batchnorm: momentum=None (cumulative average) is not in the library kernel")
    # F.batch_norm written out keeps no batch counter: the kernel then counts into a scratch word
    tracked = f"{prefix}num_batches_tracked"
    counter = f"self.{tracked}" if tracked in sig.params else "None"
    return [(f"return batch_norm_train({expr(op.args[0])}, {weight}, {bias}, {mean}, {var}, "
            f"{counter}, {momentum!r}, {eps!r})")]


# ---- reductions, scans, losses ----------------------------------------------------------------
_REDUCE_NAMES = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min", "max": "max", "min": "min",
                 "argmax": "argmax", "argmin": "argmin"}


@renderer("reduction")
def _reduction(sig: OpSignature) -> list[str]:
    op = _single(sig)
    if op.name not in _REDUCE_NAMES:
        raise AdaptError(f"reduction: {op.name} is not in the library kernel")
    dim = _const(op, 1, "dim")
    if isinstance(dim, (tuple, list)):
        if len(dim) != 1:
            raise AdaptError("reduction over several dims at once is not in the library kernel")
        dim = dim[0]
    if dim is None:
        raise AdaptError("reduction over all elements (no dim) is not in the library kernel")
    if _const(op, 2, "keepdim", False):
        return [f"return reduce_dim({expr(op.args[0])}, {_REDUCE_NAMES[op.name]!r}, {dim!r}).unsqueeze({dim!r})"]
    return [f"return reduce_dim({expr(op.args[0])}, {_REDUCE_NAMES[op.name]!r}, {dim!r})"]


@renderer("cumsum")
def _cumsum(sig: OpSignature) -> list[str]:
    op = _single(sig)
    if _get(op, 2, "dtype") is not None and _const(op, 2, "dtype") is not None:
        raise AdaptError("cumsum with a dtype argument is not adapted")
    return [f"return cumsum({expr(op.args[0])}, {_const(op, 1, 'dim')!r})"]


@renderer("cross_entropy")
def _cross_entropy(sig: OpSignature) -> list[str]:
    # F.cross_entropy and F.nll_loss share these positions: (input, target, weight, size_average,
    # ignore_index, reduce, reduction[, label_smoothing])
    if [o.name for o in sig.ops] == ["log_softmax", "nll_loss"]:
        op, logits = sig.ops[1], _log_softmax_of_classes(sig)
    else:
        op = _single(sig)
        logits = op.args[0]
    if _const(op, 6, "reduction", "mean") != "mean" or (op.name == "cross_entropy"
                                                         and _const(op, 7, "label_smoothing", 0.0)):
        raise AdaptError("cross_entropy: only reduction='mean' without label smoothing is in the library")
    weight = _get(op, 2, "weight")
    if weight is not None and not (weight.kind == "const" and weight.ref is None):
        raise AdaptError("cross_entropy: class weights are not in the library kernel")
    ignore = _const(op, 4, "ignore_index", -100)
    return [f"return cross_entropy({expr(logits)}, {expr(op.args[1])}, {ignore!r})"]


def _log_softmax_of_classes(sig: OpSignature) -> Arg:
    """The logits of log_softmax(x, classes dim) then nll_loss of that: a cross entropy written in two calls
    (as model code often does). The classes must be dim 1 of 2-D logits, in their own dtype."""
    lsm, nll = sig.ops
    x = lsm.args[0]
    dim = _const(lsm, 1, "dim")
    if x.kind != "input" or len(x.shape or ()) != 2 or dim not in (1, -1) or _const(lsm, 2, "dtype") is not None \
            or not _same(nll.args[0], Arg("tmp", 0)):
        raise AdaptError(f"cross_entropy: the calls [{sig.text}] are not nll_loss(log_softmax(x, dim=1), y) "
                         "over 2-D logits")
    return x


def _attention_by_hand(sig: OpSignature) -> list[str]:
    """softmax(q @ k^T * scale [masked above the diagonal]) @ v, written out with matmuls."""
    names = [op.name for op in sig.ops]
    plain = ["transpose", "matmul", "mul", "softmax", "matmul"]
    causal = ["transpose", "matmul", "mul", "ones", "triu", "masked_fill", "softmax", "matmul"]
    alt = {"div": "mul"}
    shape = [alt.get(n, n) for n in names]
    if shape not in (plain, causal):
        raise AdaptError(f"attention: the calls {names} are not softmax(q k^T * scale [+ causal mask]) v")
    t, qk, sc = sig.ops[0], sig.ops[1], sig.ops[2]
    if t.args[0].kind != "input" or qk.args[0].kind != "input" or sig.ops[-1].args[1].kind != "input":
        raise AdaptError("attention: q, k and v must be spec inputs")
    if sorted(_const(t, i, n) % 4 for i, n in ((1, "dim0"), (2, "dim1"))) != [2, 3]:
        raise AdaptError("attention: k must be transposed over its last two dims")
    factor = next(a.ref for a in sc.args if a.kind == "const")
    scale = float(factor) if sc.name == "mul" else 1.0 / float(factor)
    is_causal = shape == causal
    if is_causal and _const(sig.ops[4], 1, "diagonal", 0) != 1:
        raise AdaptError("attention: the causal mask must be triu(ones, diagonal=1)")
    q, k, v = expr(qk.args[0]), expr(t.args[0]), expr(sig.ops[-1].args[1])
    return [f"return attention({q}, {k}, {v}, {is_causal!r}, {scale!r})"]
