"""Pointwise chain: one fused Triton kernel for a chain of activations and arithmetic.

The chain is data: a list of ops, each `(name, *float_args)`, applied left to right to every element.
Names: relu, gelu (exact, erf), gelu_tanh, silu, mish, softplus, sigmoid, tanh, hardswish,
leaky_relu(slope), clamp(lo, hi), mul(s), add(s), bias (adds the `bias` parameter, broadcast like
torch would: one value per channel, channel = (flat_index // BIAS_INNER) % bias.numel()).

How the chain reaches the kernel: `ModelNew(ops, bias_shape=None)` takes the same init inputs as the
family's specs (`get_init_inputs()` returns the chain). To serve a new spec whose chain is written as
plain torch code, set the module-level literal `CHAIN = [("gelu",), ("mul", 2.0)]` (and `BIAS_SHAPE`
if the chain adds a parameter): ModelNew then ignores its init inputs. The chain is compiled into the
kernel as constexpr op codes (up to MAX_OPS), so each distinct chain is its own specialisation.

Bytes moved: one read of x and one write of y (plus the bias, which stays in L2); every op in between
runs in registers in fp32, so a chain of k ops costs what one op costs -- while the chain is cheap.
A chain of transcendental ops (silu, mish, softplus, gelu_tanh, sigmoid, tanh) is bound by the SFU
(16 ex2/lg2/rcp/tanh per clock per SM) and the issue slots, not by memory, so TUNABLES["FAST"] picks the
formulas (NOTES.md has what each costs):
- 1: fewer transcendentals, portable: mish = x * n / (n + 2), n = e^x (e^x + 2) (one exp, one division:
  tanh(log(1 + u)) = ((1+u)^2 - 1) / ((1+u)^2 + 1)); gelu_tanh = x * sigmoid(2z); exps as exp2. What fp32
  inputs always use.
- 3: one SFU op per transcendental op at most, the rest on the FMA pipe (8x the SFU's rate), for 16-bit
  inputs (on a GPU with the hardware's tanh.approx.f32, relative error <= 2^-10.7; the CPU interpreter runs
  the same forms with an exp-based tanh): silu and gelu_tanh as h + h tanh(z), sigmoid as 0.5 + 0.5 tanh(x/2);
  mish = y (1 + t) S(t), t = tanh(y/2), S(t) = (3 - t) / (t^2 - 2t + 5) as a degree-5 polynomial (relative
  error 1.3e-4); softplus = max(x, 0) + w q(w), w = 2^(-|x| log2 e), q(w) = log1p(w) / w of degree 4
  (5.7e-5). An interval analysis of the chain (`_input_ranges`) then drops the SFU where the input is
  bounded: tanh of an input in [-1, 1] (after sigmoid or tanh) is x P(x^2) of degree 3 (8.2e-5), sigmoid of
  an input in [-2, 2] likewise, and relu of an input >= 0 is dropped. Where 1 + t is tiny (silu, mish of
  x << 0) the result's error is about |x| 2^-12 absolute.
- 4 (the default): 3 plus a fitted tail (16-bit inputs): the longest suffix of the chain that is a smooth,
  saturating function G of its input y is one polynomial, fitted at init in fp64 (`_suffix_fit`). Its
  variable is z = c tanh(s y) + d (s = 1/2 or 1/4: an approach to G(+-inf) like e^-y is then analytic in
  t = tanh(s y)), or z = a y + b where the interval analysis bounds y; the least degree (<= 10) whose fp32
  Horner form is within 2^-FIT_BITS of max |G| wins. Taken only where it drops SFU ops: the spec's tail
  mish .. relu (5 ops, 4 SFU ops) becomes one tanh and a degree-6 polynomial, so the chain costs 2 SFU ops
  and 18 instructions an element (sm_90 SASS). The tanh.approx error adds |G'(t)| t 2^-10.7 on the GPU.
Loads and stores are 16-byte vectors (8 bf16 per thread per access).
"""

import functools
import math

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK": 1024, "num_warps": 4, "FAST": 4, "FIT_BITS": 12}  # FIT_BITS: FAST 4's fit tolerance
CHAIN = None  # None: take the chain from ModelNew's init inputs; else a list like [("relu",), ("mul", 2.0)]
BIAS_SHAPE = None  # with CHAIN set: the shape of the bias parameter, or None

MAX_OPS = 8
_OP_CODES = {
    "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4, "mish": 5, "softplus": 6, "hardswish": 7,
    "leaky_relu": 8, "clamp": 9, "mul": 10, "add": 11, "bias": 12, "sigmoid": 13, "tanh": 14,
}
# FAST 3 only, chosen by `_bounded_codes`: the same ops on an input known to lie in a small interval
_TANH_UNIT, _SIGMOID_SMALL, _NOP = 15, 16, 0  # tanh on [-1, 1], sigmoid on [-2, 2], relu on [0, inf)
_N_ARGS = {"leaky_relu": 1, "clamp": 2, "mul": 1, "add": 1}
_NAMES = {code: name for name, code in _OP_CODES.items()}


@triton.jit
def _tanh(z):
    # tanh from exp, stable at both ends: exp overflows to inf -> 1, underflows to 0 -> -1
    return 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)


@triton.jit
def _tanh_hw(z):
    # one SFU op (sm_75+); max relative error 2**-10.7
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [z], dtype=tl.float32, is_pure=True,
                                     pack=1)


@triton.jit
def _log2_hw(z):
    return tl.inline_asm_elementwise("lg2.approx.f32 $0, $1;", "=f,f", [z], dtype=tl.float32, is_pure=True,
                                     pack=1)


@triton.jit
def _exp2_hw(z):
    # one SFU op, subnormal results flushed to 0: no range fix-up around it, whatever Triton's tl.exp2 emits
    return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [z], dtype=tl.float32,
                                     is_pure=True, pack=1)


@triton.jit
def _sigmoid_fast(z, HW: tl.constexpr):
    if HW:
        return 0.5 * _tanh_hw(0.5 * z) + 0.5
    else:
        return 1.0 / (1.0 + tl.exp2(-1.4426950408889634 * z))  # exp2 -> inf for z << 0: 1/inf = 0


@triton.jit
def _apply_fast(x, bias, a, b, OP: tl.constexpr, HW: tl.constexpr):
    """The ops with fewer transcendentals (FAST 1, and FAST 3's ops without a bounded form); HW: hardware tanh/lg2
    approximations."""
    if OP == 3:  # 0.5 x (1 + tanh z) == x * sigmoid(2z)
        z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        if HW:
            x = 0.5 * x * (1.0 + _tanh_hw(z))
        else:
            x = x / (1.0 + tl.exp2(-2.8853900817779268 * z))
    elif OP == 4:
        x = x * _sigmoid_fast(x, HW)
    elif OP == 5:
        # tanh(softplus(x)) = n / (n + 2), n = u (u + 2), u = e^x; above 20 the ratio is 1.0 in fp32
        u = tl.exp2(1.4426950408889634 * tl.minimum(x, 20.0))
        n = u * (u + 2.0)
        x = x * (n / (n + 2.0))
    elif OP == 6:
        u = 1.0 + tl.exp2(1.4426950408889634 * tl.minimum(x, 20.0))
        if HW:
            sp = _log2_hw(u) * 0.6931471805599453
        else:
            sp = tl.log(u)
        x = tl.where(x > 20.0, x, sp)
    elif OP == 13:
        x = _sigmoid_fast(x, HW)
    elif OP == 14:
        if HW:
            x = _tanh_hw(x)
        else:
            x = 1.0 - 2.0 / (tl.exp2(2.8853900817779268 * x) + 1.0)
    else:
        x = _apply(x, bias, a, b, OP)
    return x


@triton.jit
def _tanh_any(z, HW: tl.constexpr):
    if HW:
        return _tanh_hw(z)
    else:
        return _tanh(z)


@triton.jit
def _half_plus_half_tanh(h, z, HW: tl.constexpr):
    # h (1 + tanh z): silu and gelu_tanh in one multiply-add after the SFU op
    return h + h * _tanh_any(z, HW)


@triton.jit
def _tanh_unit(x):
    # tanh on [-1, 1] = x P(x^2), P of degree 3 (relative error 8.2e-5): no SFU op
    v = x * x
    p = ((-0.026629677 * v + 0.118897557) * v - 0.330654323) * v + 0.99991858
    return x * p


@triton.jit
def _mish_fma(y, HW: tl.constexpr):
    # tanh(softplus(y)) = (1 + t) S(t), t = tanh(y/2), S(t) = (3 - t) / (t^2 - 2t + 5) on [-1, 1] as a
    # degree-5 polynomial (relative error 1.3e-4): one SFU op, no division
    t = _tanh_any(0.5 * y, HW)
    s = ((((0.00877022464 * t + 0.00529803988) * t - 0.0486100651) * t - 0.105438471) * t
         + 0.0398398414) * t + 0.60007447
    return (y + y * t) * s


@triton.jit
def _softplus_fma(x, HW: tl.constexpr):
    # max(x, 0) + log1p(w), w = e^-|x| in (0, 1]; log1p(w) = w q(w), q of degree 4 (relative error 5.7e-5)
    if HW:
        w = _exp2_hw(-1.4426950408889634 * tl.abs(x))
    else:
        w = tl.exp2(-1.4426950408889634 * tl.abs(x))
    q = (((0.0413472988 * w - 0.157427222) * w + 0.306300968) * w - 0.496977836) * w + 0.999943256
    return tl.maximum(x, 0.0) + w * q


@triton.jit
def _apply_bounded(x, bias, a, b, OP: tl.constexpr, HW: tl.constexpr):
    """FAST 3: at most one SFU op per transcendental op, none where the input is bounded."""
    if OP == 3:
        x = _half_plus_half_tanh(0.5 * x, x * (0.7978845608028654 + 0.0356774081363001 * x * x), HW)
    elif OP == 4:
        x = _half_plus_half_tanh(0.5 * x, 0.5 * x, HW)
    elif OP == 5:
        x = _mish_fma(x, HW)
    elif OP == 6:
        x = _softplus_fma(x, HW)
    elif OP == 13:
        x = 0.5 + 0.5 * _tanh_any(0.5 * x, HW)
    elif OP == 15:  # _TANH_UNIT
        x = _tanh_unit(x)
    elif OP == 16:  # _SIGMOID_SMALL
        x = 0.5 + 0.5 * _tanh_unit(0.5 * x)
    else:
        x = _apply_fast(x, bias, a, b, OP, HW)
    return x


@triton.jit
def _fit_eval(y, a, b, c, d, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10,
              DEG: tl.constexpr, TANH: tl.constexpr, HW: tl.constexpr):
    """FAST 4's fitted tail: p(z), z = a y + b, or c tanh(a y + b) + d; k0 the highest coefficient."""
    z = y * a + b
    if TANH:
        z = _tanh_any(z, HW) * c + d
    p = z * k0 + k1
    if DEG >= 2:
        p = p * z + k2
    if DEG >= 3:
        p = p * z + k3
    if DEG >= 4:
        p = p * z + k4
    if DEG >= 5:
        p = p * z + k5
    if DEG >= 6:
        p = p * z + k6
    if DEG >= 7:
        p = p * z + k7
    if DEG >= 8:
        p = p * z + k8
    if DEG >= 9:
        p = p * z + k9
    if DEG >= 10:
        p = p * z + k10
    return p


@triton.jit
def _apply_any(x, bias, a, b, OP: tl.constexpr, FAST: tl.constexpr, HW: tl.constexpr):
    if FAST >= 3:
        x = _apply_bounded(x, bias, a, b, OP, HW)
    else:
        x = _apply_fast(x, bias, a, b, OP, HW)
    return x


@triton.jit
def _apply(x, bias, a, b, OP: tl.constexpr):
    """The ops with no transcendental to save (gelu's erf aside)."""
    if OP == 1:
        x = tl.maximum(x, 0.0)
    elif OP == 2:
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif OP == 7:
        x = x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0
    elif OP == 8:
        x = tl.where(x >= 0.0, x, x * a)
    elif OP == 9:
        x = tl.minimum(tl.maximum(x, a), b)
    elif OP == 10:
        x = x * a
    elif OP == 11:
        x = x + a
    elif OP == 12:
        x = x + bias
    return x


@triton.jit
def _pointwise_kernel(
    x_ptr, y_ptr, bias_ptr, params_ptr,
    n_elements,
    fit_a, fit_b, fit_c, fit_d, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10,
    OP0: tl.constexpr, OP1: tl.constexpr, OP2: tl.constexpr, OP3: tl.constexpr,
    OP4: tl.constexpr, OP5: tl.constexpr, OP6: tl.constexpr, OP7: tl.constexpr,
    HAS_BIAS: tl.constexpr, BIAS_INNER: tl.constexpr, BIAS_NUMEL: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr, HW: tl.constexpr, FIT_DEG: tl.constexpr, FIT_TANH: tl.constexpr,
):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_BIAS:
        # constexpr divisors compile to multiply-shift sequences: no integer division per element
        bias = tl.load(bias_ptr + (offs // BIAS_INNER) % BIAS_NUMEL, mask=mask, other=0.0).to(tl.float32)
    else:
        bias = 0.0
    # each slot's two scalar arguments live in params[2*slot], params[2*slot + 1]
    x = _apply_any(x, bias, tl.load(params_ptr + 0), tl.load(params_ptr + 1), OP0, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 2), tl.load(params_ptr + 3), OP1, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 4), tl.load(params_ptr + 5), OP2, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 6), tl.load(params_ptr + 7), OP3, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 8), tl.load(params_ptr + 9), OP4, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 10), tl.load(params_ptr + 11), OP5, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 12), tl.load(params_ptr + 13), OP6, FAST, HW)
    x = _apply_any(x, bias, tl.load(params_ptr + 14), tl.load(params_ptr + 15), OP7, FAST, HW)
    if FIT_DEG > 0:  # FAST 4: the slots of the fitted tail are no-ops above; its scalars are kernel arguments
        x = _fit_eval(x, fit_a, fit_b, fit_c, fit_d, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10,
                      FIT_DEG, FIT_TANH, HW)
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=mask)


def _encode(chain) -> tuple[list[int], list[float]]:
    """Turn [("clamp", -1.0, 1.0), ...] into MAX_OPS op codes and 2*MAX_OPS float arguments."""
    if len(chain) > MAX_OPS:
        raise ValueError(f"pointwise chain has {len(chain)} ops; this kernel takes at most {MAX_OPS}")
    codes, params = [0] * MAX_OPS, [0.0] * (2 * MAX_OPS)
    for slot, op in enumerate(chain):
        name, args = op[0], [float(v) for v in op[1:]]
        if name not in _OP_CODES:
            raise ValueError(f"pointwise op {name!r} (slot {slot}) is unknown; known: {sorted(_OP_CODES)}")
        if len(args) != _N_ARGS.get(name, 0):
            raise ValueError(f"pointwise op {name!r} takes {_N_ARGS.get(name, 0)} arguments, got {args}")
        codes[slot] = _OP_CODES[name]
        params[2 * slot: 2 * slot + len(args)] = args
    return codes, params


# the least value of each op that dips below 0 (at x = -0.75, -0.75, -1.28, -1.19, -1.5); each is <= max(x, 0)
_DIP = {"gelu": -0.1701, "gelu_tanh": -0.1701, "silu": -0.2785, "mish": -0.3089, "hardswish": -0.375}


def _next_range(code: int, a: float, b: float, lo: float, hi: float) -> tuple[float, float]:
    """Bounds of an op's output given bounds [lo, hi] of its input (op arguments a, b); unknown: +-inf."""
    name = _NAMES[code]
    if name == "relu":
        return max(lo, 0.0), max(hi, 0.0)
    if name in _DIP:
        return (0.0 if lo >= 0.0 else _DIP[name]), max(hi, 0.0)
    if name == "softplus":
        return 0.0, max(hi, 0.0) + math.log(2.0)
    if name == "tanh":  # monotone; math.tanh saturates where math.exp would overflow
        return math.tanh(lo), math.tanh(hi)
    if name == "sigmoid":
        return 0.5 + 0.5 * math.tanh(0.5 * lo), 0.5 + 0.5 * math.tanh(0.5 * hi)
    if name == "clamp":
        return min(max(lo, a), b), min(max(hi, a), b)
    if name == "add":
        return lo + a, hi + a
    if name == "mul" and a != 0.0:
        return min(lo * a, hi * a), max(lo * a, hi * a)
    if name == "mul":
        return 0.0, 0.0
    return -math.inf, math.inf


def _input_ranges(codes: list[int], params: list[float]) -> list[tuple[float, float]]:
    """[lo, hi] of each slot's input, from an unbounded x."""
    ranges, lo, hi = [], -math.inf, math.inf
    for slot, code in enumerate(codes):
        ranges.append((lo, hi))
        if code:
            lo, hi = _next_range(code, params[2 * slot], params[2 * slot + 1], lo, hi)
    return ranges


def _bounded_codes(codes: list[int], params: list[float]) -> list[int]:
    """FAST 3: tanh, sigmoid and relu on a bounded input get their SFU-free forms."""
    out = list(codes)
    for slot, (lo, hi) in enumerate(_input_ranges(codes, params)):
        if codes[slot] == _OP_CODES["tanh"] and -1.0 <= lo and hi <= 1.0:
            out[slot] = _TANH_UNIT
        elif codes[slot] == _OP_CODES["sigmoid"] and -2.0 <= lo and hi <= 2.0:
            out[slot] = _SIGMOID_SMALL
        elif codes[slot] == _OP_CODES["relu"] and lo >= 0.0:
            out[slot] = _NOP
    return out


# fp64 references of the ops a fitted tail may hold (y, a, b: the input and the op's arguments)
_REF = {
    "relu": lambda y, a, b: torch.relu(y), "gelu": lambda y, a, b: nn.functional.gelu(y),
    "gelu_tanh": lambda y, a, b: nn.functional.gelu(y, approximate="tanh"),
    "silu": lambda y, a, b: nn.functional.silu(y), "mish": lambda y, a, b: nn.functional.mish(y),
    "softplus": lambda y, a, b: nn.functional.softplus(y),
    "hardswish": lambda y, a, b: nn.functional.hardswish(y),
    "leaky_relu": lambda y, a, b: nn.functional.leaky_relu(y, a), "clamp": lambda y, a, b: y.clamp(a, b),
    "mul": lambda y, a, b: y * a, "add": lambda y, a, b: y + a,
    "sigmoid": lambda y, a, b: torch.sigmoid(y), "tanh": lambda y, a, b: torch.tanh(y),
}
_SFU_CODES = {2, 3, 4, 5, 6, 13, 14}  # bounded codes that cost an SFU op (or, gelu, an erf) under FAST 3
_FIT_MAX_DEGREE = 10
_TANH_SCALES = (0.5, 0.25)  # t = tanh(s y): a tail that nears G(inf) like e^-y or e^-2y is polynomial in t


def _horner_fp32(coeffs: list[float], z: torch.Tensor) -> torch.Tensor:
    p = torch.zeros_like(z)
    for k in coeffs:  # highest first, in fp32 like the kernel
        p = p * z + k
    return p


def _chebyshev_monomials(degree: int) -> torch.Tensor:
    """Row m: the coefficients of T_m(z) in 1, z, z^2, ... (T_{m+1} = 2 z T_m - T_{m-1})."""
    rows = torch.zeros(degree + 1, degree + 1, dtype=torch.float64)
    rows[0, 0] = 1.0
    if degree:
        rows[1, 1] = 1.0
    for m in range(1, degree):
        rows[m + 1, 1:] = 2.0 * rows[m, :-1]
        rows[m + 1] -= rows[m - 1]
    return rows


def _fit_tail(g, lo: float, hi: float, scale: float | None, bits: int):
    """Least-degree fit of g on [lo, hi] in z = a y + b (scale None) or z = c tanh(scale y) + d.

    Returns (degree, coefficients highest first, (a, b, c, d)) or None if no degree <= 10 is within
    2^-bits max|g| (checked on a dense grid, evaluated in fp32 as the kernel does). The fit of degree d
    is the Chebyshev series cut at d (within a few times the minimax error)."""
    v_lo, v_hi = (lo, hi) if scale is None else (math.tanh(scale * lo), math.tanh(scale * hi))
    half, mid = 0.5 * (v_hi - v_lo), 0.5 * (v_hi + v_lo)
    if not half > 0.0 or not math.isfinite(half):
        return None

    def y_of(z):  # z in [-1, 1] -> y; the ends of an unbounded range stand for +-inf
        v = mid + half * z
        if scale is None:
            return v
        y = torch.atanh(v.clamp(-1.0 + 2.0 ** -40, 1.0 - 2.0 ** -40)) / scale
        return torch.where(v.abs() >= 1.0, v * 1e6, y)

    n = 1024  # Chebyshev nodes z_j = cos(theta_j): the series' coefficients are a cosine sum
    theta = math.pi * (torch.arange(n, dtype=torch.float64) + 0.5) / n
    y_chk = y_of(torch.linspace(-1.0, 1.0, 8193, dtype=torch.float64))
    g_fit, g_chk = g(y_of(torch.cos(theta))), g(y_chk)
    if not (torch.isfinite(g_fit).all() and torch.isfinite(g_chk).all()):
        return None
    orders = torch.arange(_FIT_MAX_DEGREE + 1, dtype=torch.float64)
    series = (2.0 / n) * torch.cos(orders[:, None] * theta) @ g_fit
    series[0] *= 0.5
    monomials = series[:, None] * _chebyshev_monomials(_FIT_MAX_DEGREE)
    maps = (1.0 / half, -mid / half, 0.0, 0.0) if scale is None else (scale, 0.0, 1.0 / half, -mid / half)
    z32 = y_chk.float() * maps[0] + maps[1]
    if scale is not None:
        z32 = torch.tanh(z32) * maps[2] + maps[3]
    tol = 2.0 ** -bits * g_chk.abs().max().item()
    for deg in range(1, _FIT_MAX_DEGREE + 1):
        coeffs = monomials[:deg + 1, :deg + 1].sum(0).flip(0).tolist()
        if (_horner_fp32(coeffs, z32).double() - g_chk).abs().max().item() <= tol:
            return deg, coeffs, maps
    return None


@functools.lru_cache(maxsize=64)
def _suffix_fit(codes: tuple, params: tuple, bits: int):
    """FAST 4: (slot, degree, tanh?, maps, coefficients) of the longest tail worth one polynomial, or None."""
    bounded = _bounded_codes(list(codes), list(params))
    for slot, (lo, hi) in enumerate(_input_ranges(list(codes), list(params))):
        tail = [(c, params[2 * j], params[2 * j + 1]) for j, c in enumerate(codes) if j >= slot and c]
        if not tail or any(_NAMES[c] not in _REF for c, _, _ in tail):
            continue
        bounded_y = math.isfinite(lo) and math.isfinite(hi)
        if sum(c in _SFU_CODES for c in bounded[slot:]) < (1 if bounded_y else 2):
            continue  # the fit (one SFU op unless y is bounded) would not be cheaper

        def g(y, tail=tail):
            for c, a, b in tail:
                y = _REF[_NAMES[c]](y, a, b)
            return y

        scales = (None,) if bounded_y else _TANH_SCALES
        fits = [f for f in (_fit_tail(g, lo, hi, s, bits) for s in scales) if f]
        if fits:
            deg, coeffs, maps = min(fits, key=lambda f: f[0])
            return slot, deg, not bounded_y, maps, coeffs
    return None


def _tail_fit(codes: list[int], values: list[float]):
    """FAST 4's fit for the chain, computed where TUNABLES asks for it (the CPU work takes ~0.1 s)."""
    return _suffix_fit(tuple(codes), tuple(values), TUNABLES["FIT_BITS"]) if TUNABLES["FAST"] == 4 else None


def _launch(x: torch.Tensor, codes: list[int], values: list[float], params: torch.Tensor, fit,
            bias: torch.Tensor | None, bias_inner: int) -> torch.Tensor:
    """Run the chain `codes` (arguments `values`, on the device as `params`; FAST 4: `fit`, its
    `_suffix_fit` or None) on x."""
    has_bias = _OP_CODES["bias"] in codes
    if has_bias and bias is None:
        raise ValueError("pointwise chain has a 'bias' op but no bias tensor was given")
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    b = bias.contiguous() if has_bias else params  # any pointer will do when HAS_BIAS is False
    block = TUNABLES["BLOCK"]
    fast = TUNABLES["FAST"]
    if fast not in (1, 3, 4):
        raise ValueError(f"pointwise: TUNABLES['FAST'] = {fast!r}, expected 1, 3 or 4")
    if x.dtype not in (torch.bfloat16, torch.float16):
        fast = 1  # the approximations are sized for a 16-bit output's tolerance
    hw = fast >= 3 and x.is_cuda  # inline asm: GPU only, not the interpreter
    if fast != 4:
        fit = None
    if fast >= 3:
        codes = _bounded_codes(codes, values)
    fit_deg, fit_tanh, maps, coeffs = 0, False, (0.0,) * 4, []
    if fit is not None:
        slot, fit_deg, fit_tanh, maps, coeffs = fit
        codes = codes[:slot] + [_NOP] * (MAX_OPS - slot)
    _pointwise_kernel[(triton.cdiv(n, block),)](
        x, y, b, params, n, *maps, *(coeffs + [0.0] * (_FIT_MAX_DEGREE + 1 - len(coeffs))), *codes,
        HAS_BIAS=has_bias, BIAS_INNER=bias_inner, BIAS_NUMEL=b.numel() if has_bias else 1,
        BLOCK=block, FAST=fast, HW=hw, FIT_DEG=fit_deg, FIT_TANH=fit_tanh, num_warps=TUNABLES["num_warps"],
    )
    return y


def pointwise_chain(x: torch.Tensor, chain, bias: torch.Tensor | None = None, bias_inner: int = 1):
    """Apply `chain` (e.g. [("gelu",), ("mul", 2.0)]) to x in one pass."""
    codes, values = _encode(chain)
    params = torch.tensor(values, dtype=torch.float32, device=x.device)
    return _launch(x, codes, values, params, _tail_fit(codes, values), bias, bias_inner)


class ModelNew(nn.Module):
    def __init__(self, ops=None, bias_shape=None, *_ignored, **_ignored_kw):
        # with the CHAIN literal set, the spec's own init inputs (whatever they are) are not needed
        super().__init__()
        self.ops = [tuple(op) for op in (CHAIN if CHAIN is not None else ops)]
        shape = BIAS_SHAPE if CHAIN is not None else bias_shape
        self.bias = nn.Parameter(torch.randn(shape)) if shape is not None else None
        self._codes, self._values = _encode(self.ops)  # fails early on an unknown op
        self._fit = _tail_fit(self._codes, self._values)  # torch work: not in forward
        self._params = {}  # device -> fp32 op arguments (not a buffer: model.to(bf16) must not round them)

    def forward(self, x):
        inner = 1
        if self.bias is not None:  # a (C, 1, ..., 1) bias broadcasts over the trailing dims of x
            for dim in x.shape[x.dim() - (self.bias.dim() - 1):]:
                inner *= dim
        params = self._params.get(x.device)
        if params is None:  # once per device: no host-to-device copy per call
            params = self._params[x.device] = torch.tensor(self._values, dtype=torch.float32, device=x.device)
        return _launch(x, self._codes, self._values, params, self._fit, self.bias, inner)
