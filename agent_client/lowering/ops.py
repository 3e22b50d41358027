"""What each ATen op is to the lowering, and the Triton expression of every pointwise op.

Usage: kind_of(node) -> "view" | "pointwise" | "reduction" | "scan" | "template" | "window" | "indirect" | ...
       POINTWISE[packet](ctx, node, args) -> (code, ctype)

Values inside a kernel are computed in fp32 for every floating dtype (fp16/bf16 are upcast on load and
rounded once on store), int64/int32 for integers and int1 for booleans: the "ctype" of a value.
"""

from __future__ import annotations

import math
import operator

import torch

from agent_client.lowering.errors import LoweringError

aten, prims = torch.ops.aten, torch.ops.prims

CTYPE = {"float16": "f32", "bfloat16": "f32", "float32": "f32", "float64": "f64", "int64": "i64",
         "int32": "i32", "int16": "i32", "int8": "i32", "uint8": "i32", "bool": "i1"}
TL_TYPE = {"f32": "tl.float32", "f64": "tl.float64", "i64": "tl.int64", "i32": "tl.int32", "i1": "tl.int1"}


def ctype_of(dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in CTYPE:
        raise KeyError(name)
    return CTYPE[name]


def packet(node) -> object:
    return getattr(node.target, "overloadpacket", node.target)


MULTI_VIEWS = {aten.split_with_sizes, aten.split, aten.unbind}  # tuples of views, read through getitem
VIEWS = {aten.view, aten._unsafe_view, aten.reshape, prims.reshape, aten.permute, aten.expand,
         prims.broadcast_in_dim, aten.unsqueeze, aten.squeeze, prims.squeeze, aten.slice, aten.select,
         aten.alias, aten.clone, aten.lift_fresh_copy, aten.detach, prims.rev, aten.flip, aten.t,
         aten.transpose, aten.cat, aten.constant_pad_nd, aten.slice_scatter, aten.select_scatter, aten.unfold, aten.as_strided, prims.collapse_view, prims.split_dim, prims.view_of,
         aten.expand_copy, aten.view_copy, aten.permute_copy, aten.squeeze_copy, aten.unsqueeze_copy}
REDUCTIONS = {aten.sum, prims.sum, aten.amax, aten.amin, prims.amax, prims.amin, aten.argmax, aten.argmin,
              aten.any, aten.all, aten.prod, prims.prod}
SCANS = {aten.cumsum, aten.cumprod}
TEMPLATES = {aten.mm, aten.bmm, aten.addmm, aten.convolution}
WINDOWS = {aten.max_pool2d_with_indices, aten.max_pool3d_with_indices, aten.avg_pool2d, aten.avg_pool3d,
           aten._adaptive_avg_pool2d, aten._adaptive_avg_pool3d, aten.adaptive_max_pool2d,
           aten.max_pool1d_with_indices}
INDIRECT = {aten.gather, aten.index, aten.index_select, aten.embedding}
SELECTS = {aten.topk, aten.sort}  # values and indices of the k largest (or smallest) along a dim
SCATTERS = {aten.index_put, aten.scatter_add, aten.scatter, aten.scatter_reduce}  # a copy of a tensor with elements written
RANDOM = {aten.bernoulli, aten.rand, aten.randn, aten.rand_like, aten.randn_like, aten.randint,
          aten.native_dropout, aten.normal, aten.uniform, aten.multinomial, aten.randperm, aten.exponential}


def kind_of(node) -> str:
    if node.op == "placeholder":
        return "input"
    if node.op == "get_attr":
        return "constant"  # a tensor made in forward from Python values (torch.tensor(0.5))
    if node.op != "call_function":
        return node.op
    if node.target is operator.getitem:
        return "getitem"
    p = packet(node)
    if p in VIEWS:
        return "view"
    if p in MULTI_VIEWS:
        return "multiview"
    if p in REDUCTIONS:
        return "reduction"
    if p in SCANS:
        return "scan"
    if p in TEMPLATES:
        return "template"
    if p in WINDOWS:
        return "window"
    if p in INDIRECT:
        return "indirect"
    if p in SELECTS:
        return "select"
    if p in SCATTERS:
        return "scatter"
    if p in RANDOM:
        return "random"
    if p in POINTWISE:
        return "pointwise"
    return "unsupported"


# ---- pointwise ops -----------------------------------------------------------------------------------
# An emitter gets the context (for casts and helpers), the node, and its argument values: (code, ctype)
# pairs for tensors, Python values for the rest. It returns (code, ctype).

def _lit(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        if math.isinf(v):
            return 'float("inf")' if v > 0 else 'float("-inf")'
        if math.isnan(v):
            return 'float("nan")'
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (torch.dtype,)) or v is None:
        raise TypeError(v)
    return repr(v)


def is_val(a) -> bool:
    return isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) and a[1] in TL_TYPE


def code(ctx, a, ctype: str) -> str:
    """`a` (a value or a Python scalar) as Triton source of compute type `ctype`."""
    if is_val(a):
        return ctx.cast(a[0], a[1], ctype)
    if ctype == "i1" and isinstance(a, (bool, int)):
        return "True" if a else "False"
    if ctype in ("f32", "f64") and isinstance(a, (int, float)) and not isinstance(a, bool):
        return _lit(float(a))
    return _lit(a)


def _out(node) -> str:
    return ctype_of(node.meta["val"].dtype)


def _promoted(args) -> str:
    kinds = [a[1] for a in args if is_val(a)]
    if "f64" in kinds:
        return "f64"
    if "f32" in kinds or any(isinstance(a, float) for a in args if not is_val(a)):
        return "f32"
    if "i64" in kinds:
        return "i64"
    if "i32" in kinds:
        return "i32"
    return "i1" if kinds else "f32"


_INTS = ("i32", "i64")  # the compute types of integer tensors


def _binary(fmt):
    def emit(ctx, node, args):
        t = _out(node)
        a, b = code(ctx, args[0], t), code(ctx, args[1], t)
        return fmt.format(a=a, b=b), t
    return emit


def _by_kind(float_fmt, int_fmt):
    """A binary op with one form for floats and an exact one for integers."""
    def emit(ctx, node, args):
        t = _out(node)
        a, b = code(ctx, args[0], t), code(ctx, args[1], t)
        return (int_fmt if t in _INTS else float_fmt).format(a=a, b=b), t
    return emit


def _unary(fmt, float_only=True):
    def emit(ctx, node, args):
        t = _out(node)
        return fmt.format(x=code(ctx, args[0], t)), t
    return emit


def _compare(op):
    def emit(ctx, node, args):
        t = _promoted(args[:2])
        return f"({code(ctx, args[0], t)} {op} {code(ctx, args[1], t)})", "i1"
    return emit


def _add(ctx, node, args):
    t = _out(node)
    alpha = node.kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    b = code(ctx, args[1], t)
    if alpha != 1:
        b = f"{_lit(alpha)} * {b}"
    return f"({code(ctx, args[0], t)} + {b})", t


def _sub(ctx, node, args):
    t = _out(node)
    alpha = node.kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    b = code(ctx, args[1], t)
    if alpha != 1:
        b = f"{_lit(alpha)} * {b}"
    return f"({code(ctx, args[0], t)} - {b})", t


def _div(ctx, node, args):
    t = _out(node)
    mode = node.kwargs.get("rounding_mode")
    if mode is None and t in ("i64", "i32"):  # prims.div on integers truncates
        mode = "trunc"
    if mode is None:
        return f"({code(ctx, args[0], t)} / {code(ctx, args[1], t)})", t
    if t in _INTS:  # exact on integers of any size
        helper = "_kkb_idiv_floor" if mode == "floor" else "_kkb_idiv_trunc"
        return f"{helper}({code(ctx, args[0], t)}, {code(ctx, args[1], t)})", t
    q = f"({code(ctx, args[0], 'f32')} / {code(ctx, args[1], 'f32')})"
    q = f"tl.floor({q})" if mode == "floor" else f"_kkb_trunc({q})"
    return ctx.cast(q, "f32", t), t


def _where(ctx, node, args):
    t = _out(node)
    c = code(ctx, args[0], "i1")
    return f"tl.where({c}, {code(ctx, args[1], t)}, {code(ctx, args[2], t)})", t


def _clamp(ctx, node, args):
    t = _out(node)
    x = code(ctx, args[0], t)
    lo = args[1] if len(args) > 1 else node.kwargs.get("min")
    hi = args[2] if len(args) > 2 else node.kwargs.get("max")
    if lo is not None:
        x = f"tl.maximum({x}, {code(ctx, lo, t)})"
    if hi is not None:
        x = f"tl.minimum({x}, {code(ctx, hi, t)})"
    return x, t


def _pow_constant(ctx, x: str, e: float, t) -> str:
    """x ** e for a constant e: its sign rules decided here (an odd integer keeps x's sign, a fraction of a
    negative is nan), so the kernel holds no tests on the exponent."""
    v = ctx.bind(x, t)
    r = ctx.bind(f"tl.exp2({_lit(e)} * tl.log2(tl.abs({v})))", t)
    if e.is_integer() and int(e) % 2:
        return f"tl.where({v} < 0, -{r}, {r})"
    if not e.is_integer():
        return f"tl.where({v} < 0, float('nan'), {r})"
    return r


def _pow(ctx, node, args):
    t = _out(node)
    base, exp = args[0], args[1]
    if not is_val(exp):
        x = code(ctx, base, t)
        simple = {2: "{x} * {x}", 3: "{x} * {x} * {x}", 4: "({x} * {x}) * ({x} * {x})", 1: "{x}",
                  0.5: "tl.sqrt({x})", -1: "1.0 / {x}", -0.5: "tl.rsqrt({x})", -2: "1.0 / ({x} * {x})"}
        if exp in simple:
            v = ctx.bind(x, t)
            return "(" + simple[exp].format(x=v) + ")", t
        if exp == 0:
            return code(ctx, 1.0, t), t
        return _pow_constant(ctx, x, float(exp), t), t
    return f"_kkb_pow({code(ctx, base, t)}, {code(ctx, exp, t)})", t


def _round(ctx, node, args):
    # round(x, decimals=d) as ATen computes it in x's type: rint(x * 10^d) / 10^d, or rint(x / 10^-d) * 10^-d
    t = _out(node)
    decimals = node.kwargs.get("decimals", args[1] if len(args) > 1 else 0)
    x = code(ctx, args[0], t)
    if not decimals:
        return f"_kkb_round({x})", t
    scale = _lit(float(10.0 ** abs(decimals)))
    if decimals > 0:
        return f"(_kkb_round({x} * {scale}) / {scale})", t
    return f"(_kkb_round({x} / {scale}) * {scale})", t


def _convert(ctx, node, args):
    target = str(node.meta["val"].dtype).removeprefix("torch.")
    src = args[0]
    t = ctype_of(target)
    if not is_val(src):
        return code(ctx, src, t), t
    x, s = src
    if target in ("bfloat16", "float16") and s in ("f32", "f64"):
        return ctx.round_to(x, target), t  # round as the reference does, compute on in fp32
    if t == "i1":
        return f"({x} != 0)", t
    return ctx.cast(x, s, t), t


def _full(ctx, node, args):
    value = args[0] if node.target in (aten.scalar_tensor.default, prims.scalar_tensor.default) else args[1]
    if packet(node) in (aten.zeros, aten.zeros_like, aten.new_zeros):
        value = 0
    if packet(node) in (aten.ones, aten.ones_like, aten.new_ones):
        value = 1
    t = _out(node)
    return code(ctx, value, t), t


def _uninitialised(c, n, a):
    # uninitialised memory may hold anything: zeros are as good a value as any
    dtype = ctype_of(n.meta["val"].dtype)
    return ("0.0" if dtype in ("f32", "f64") else "0"), dtype


def _identity(ctx, node, args):
    t = _out(node)
    return code(ctx, args[0], t), t


def _gelu(ctx, node, args):
    x = ctx.bind(code(ctx, args[0], "f32"), "f32")
    if node.kwargs.get("approximate", args[1] if len(args) > 1 else "none") == "tanh":
        return f"(0.5 * {x} * (1.0 + _kkb_tanh(0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x}))))", "f32"
    return f"(0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476)))", "f32"


def _lift(fmt):
    def emit(ctx, node, args):
        t = _out(node)
        x = ctx.bind(code(ctx, args[0], t), t)
        return fmt.format(x=x), t
    return emit


def _logical(op):
    def emit(ctx, node, args):
        return f"({code(ctx, args[0], 'i1')} {op} {code(ctx, args[1], 'i1')})", "i1"
    return emit


def _bitwise(op):
    """&, |, ^ and shifts: on bools the logical op, on integers the op on their bits."""
    def emit(ctx, node, args):
        t = _out(node)
        if t == "i1":
            return _logical(op)(ctx, node, args)
        if t not in _INTS:
            raise LoweringError(f"{node.name}: a bitwise {op} on {t} values")
        return f"({code(ctx, args[0], t)} {op} {code(ctx, args[1], t)})", t
    return emit


def _bitwise_not(ctx, node, args):
    t = _out(node)
    if t == "i1":
        return f"({code(ctx, args[0], 'i1')} == 0)", "i1"
    return f"(~{code(ctx, args[0], t)})", t


POINTWISE = {
    aten.add: _add, prims.add: _add, aten.sub: _sub, prims.sub: _sub,
    aten.rsub: lambda c, n, a: _sub(c, n, [a[1], a[0]] + list(a[2:])),
    aten.mul: _binary("({a} * {b})"), prims.mul: _binary("({a} * {b})"),
    aten.div: _div, prims.div: _div, aten.true_divide: _div,
    aten.maximum: _binary("tl.maximum({a}, {b})"), prims.maximum: _binary("tl.maximum({a}, {b})"),
    aten.minimum: _binary("tl.minimum({a}, {b})"), prims.minimum: _binary("tl.minimum({a}, {b})"),
    aten.fmax: _binary("tl.maximum({a}, {b})"), aten.fmin: _binary("tl.minimum({a}, {b})"),
    aten.remainder: _by_kind("_kkb_remainder({a}, {b})", "_kkb_iremainder({a}, {b})"),
    aten.fmod: _by_kind("_kkb_fmod({a}, {b})", "_kkb_ifmod({a}, {b})"),
    aten.pow: _pow, prims.pow: _pow,
    aten.where: _where, prims.where: _where,
    aten.clamp: _clamp, aten.clamp_min: lambda c, n, a: _clamp(c, n, [a[0], a[1], None]),
    aten.clamp_max: lambda c, n, a: _clamp(c, n, [a[0], None, a[1]]),
    aten.neg: _unary("(-{x})"), prims.neg: _unary("(-{x})"),
    aten.abs: _unary("tl.abs({x})"), prims.abs: _unary("tl.abs({x})"),
    aten.exp: _unary("tl.exp({x})"), prims.exp: _unary("tl.exp({x})"),
    aten.exp2: _unary("tl.exp2({x})"), prims.exp2: _unary("tl.exp2({x})"),
    aten.log: _unary("tl.log({x})"), prims.log: _unary("tl.log({x})"),
    aten.log2: _unary("tl.log2({x})"), prims.log2: _unary("tl.log2({x})"),
    aten.log10: _unary("(tl.log({x}) * 0.4342944819032518)"),
    aten.log1p: _unary("_kkb_log1p({x})"), prims.log1p: _unary("_kkb_log1p({x})"),
    aten.expm1: _unary("_kkb_expm1({x})"), prims.expm1: _unary("_kkb_expm1({x})"),
    aten.sqrt: _unary("tl.sqrt({x})"), prims.sqrt: _unary("tl.sqrt({x})"),
    aten.rsqrt: _unary("tl.rsqrt({x})"), prims.rsqrt: _unary("tl.rsqrt({x})"),
    aten.sin: _unary("tl.sin({x})"), prims.sin: _unary("tl.sin({x})"),
    aten.cos: _unary("tl.cos({x})"), prims.cos: _unary("tl.cos({x})"),
    aten.tan: _lift("(tl.sin({x}) / tl.cos({x}))"),
    aten.atan: _unary("_kkb_atan({x})"), prims.atan: _unary("_kkb_atan({x})"),
    aten.atan2: _binary("_kkb_atan2({a}, {b})"), prims.atan2: _binary("_kkb_atan2({a}, {b})"),
    aten.asin: _lift("_kkb_atan2({x}, tl.sqrt(1.0 - {x} * {x}))"),
    aten.acos: _lift("_kkb_atan2(tl.sqrt(1.0 - {x} * {x}), {x})"),
    aten.sinh: _lift("(0.5 * (_kkb_expm1({x}) - _kkb_expm1(-{x})))"),
    aten.cosh: _lift("(0.5 * (tl.exp({x}) + tl.exp(-{x})))"),
    aten.asinh: _lift("tl.where({x} < 0, -1.0, 1.0) * _kkb_log1p(tl.abs({x}) + {x} * {x} / (1.0 + tl.sqrt({x} * {x} + 1.0)))"),
    aten.acosh: _lift("tl.log({x} + tl.sqrt({x} * {x} - 1.0))"),
    aten.atanh: _lift("(0.5 * (_kkb_log1p({x}) - _kkb_log1p(-{x})))"),
    aten.lgamma: _unary("_kkb_lgamma({x})"), prims.lgamma: _unary("_kkb_lgamma({x})"),
    aten.digamma: _unary("_kkb_digamma({x})"), prims.digamma: _unary("_kkb_digamma({x})"),
    aten.erfinv: _unary("_kkb_erfinv({x})"), prims.erf_inv: _unary("_kkb_erfinv({x})"),
    aten.tanh: _unary("_kkb_tanh({x})"), prims.tanh: _unary("_kkb_tanh({x})"),
    aten.sigmoid: _unary("tl.sigmoid({x})"),
    aten.erf: _unary("tl.erf({x})"), prims.erf: _unary("tl.erf({x})"),
    aten.erfc: _unary("(1.0 - tl.erf({x}))"),
    aten.relu: _lift("tl.where({x} > 0, {x}, 0.0)"),
    aten.gelu: _gelu,
    aten.sign: _lift("tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, 0.0))"),
    aten.sgn: _lift("tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, 0.0))"),
    prims.sign: _lift("tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, 0.0))"),
    aten.floor: _unary("tl.floor({x})"), prims.floor: _unary("tl.floor({x})"),
    aten.ceil: _unary("tl.ceil({x})"), prims.ceil: _unary("tl.ceil({x})"),
    aten.trunc: _unary("_kkb_trunc({x})"), prims.trunc: _unary("_kkb_trunc({x})"),
    aten.round: _round, prims.round: _unary("_kkb_round({x})"),
    aten.reciprocal: _unary("(1.0 / {x})"), prims.reciprocal: _unary("(1.0 / {x})"),
    aten.square: _lift("({x} * {x})"),
    aten.eq: _compare("=="), prims.eq: _compare("=="), aten.ne: _compare("!="), prims.ne: _compare("!="),
    aten.lt: _compare("<"), prims.lt: _compare("<"), aten.le: _compare("<="), prims.le: _compare("<="),
    aten.gt: _compare(">"), prims.gt: _compare(">"), aten.ge: _compare(">="), prims.ge: _compare(">="),
    aten.logical_and: _logical("&"), aten.logical_or: _logical("|"), aten.logical_xor: _logical("^"),
    aten.bitwise_and: _bitwise("&"), aten.bitwise_or: _bitwise("|"), aten.bitwise_xor: _bitwise("^"),
    aten.__and__: _bitwise("&"), aten.__or__: _bitwise("|"), aten.__xor__: _bitwise("^"),
    aten.bitwise_left_shift: _bitwise("<<"), aten.bitwise_right_shift: _bitwise(">>"),
    aten.__lshift__: _bitwise("<<"), aten.__rshift__: _bitwise(">>"),
    aten.logical_not: lambda c, n, a: (f"({code(c, a[0], 'i1')} == 0)", "i1"),
    aten.bitwise_not: _bitwise_not,
    # the sign bit, so -0.0 counts as negative (copysign's decomposition reads it)
    aten.signbit: lambda c, n, a: (f"({code(c, a[0], 'f32')}.to(tl.int32, bitcast=True) < 0)", "i1"),
    prims.signbit: lambda c, n, a: (f"({code(c, a[0], 'f32')}.to(tl.int32, bitcast=True) < 0)", "i1"),
    aten.isnan: lambda c, n, a: (f"({code(c, a[0], 'f32')} != {code(c, a[0], 'f32')})", "i1"),
    aten.isinf: lambda c, n, a: (f"(tl.abs({code(c, a[0], 'f32')}) == float(\"inf\"))", "i1"),
    aten.isfinite: lambda c, n, a: (f"(tl.abs({code(c, a[0], 'f32')}) < float(\"inf\"))", "i1"),
    aten._to_copy: _convert, prims.convert_element_type: _convert,
    aten.full: _full, aten.full_like: _full, aten.scalar_tensor: _full, prims.scalar_tensor: _full, aten.zeros: _full,
    aten.zeros_like: _full, aten.ones: _full, aten.ones_like: _full, aten.new_zeros: _full,
    aten.new_ones: _full, aten.new_full: _full,
    aten.empty: _uninitialised, aten.empty_like: _uninitialised, aten.empty_permuted: _uninitialised,
    aten.empty_strided: _uninitialised, aten.new_empty: _uninitialised, aten.new_empty_strided: _uninitialised,
    aten.copy: lambda c, n, a: _identity(c, n, [a[1]]),
    # an in-place copy left inside a decomposition (label smoothing's masked fill): its value is the source
    aten.copy_: lambda c, n, a: _identity(c, n, [a[1]]),
    prims.copy_to: lambda c, n, a: _identity(c, n, [a[1]]),  # copy_to(dst, src) whose value is read: the source
    aten.arange: None,  # handled by the writer (a function of the index)
    prims.iota: None,
    aten.positive: _identity,
}
