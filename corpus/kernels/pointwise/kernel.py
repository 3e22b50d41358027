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
(16 ex2/lg2/rcp/tanh per clock per SM), not by memory, so TUNABLES["FAST"] picks the formulas:
- 0: the original forms (mish as x * tanh(softplus(x)): two exps, a log and a division; log by libdevice).
- 1: fewer transcendentals, portable: mish = x * n / (n + 2), n = e^x (e^x + 2) (one exp, one division:
  tanh(log(1 + u)) = ((1+u)^2 - 1) / ((1+u)^2 + 1)); gelu_tanh = x * sigmoid(2z); exps as exp2.
- 2: 1 plus the hardware's tanh.approx.f32 (one SFU op, relative error <= 2^-10.7) for silu, sigmoid,
  gelu_tanh and tanh, and lg2.approx.f32 for softplus; only for 16-bit inputs on a GPU, whose tolerance
  is bf16's (fp32 inputs and the CPU interpreter use 1).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK": 1024, "num_warps": 4, "FAST": 2}
CHAIN = None  # None: take the chain from ModelNew's init inputs; else a list like [("relu",), ("mul", 2.0)]
BIAS_SHAPE = None  # with CHAIN set: the shape of the bias parameter, or None

MAX_OPS = 8
_OP_CODES = {
    "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4, "mish": 5, "softplus": 6, "hardswish": 7,
    "leaky_relu": 8, "clamp": 9, "mul": 10, "add": 11, "bias": 12, "sigmoid": 13, "tanh": 14,
}
_N_ARGS = {"leaky_relu": 1, "clamp": 2, "mul": 1, "add": 1}


@triton.jit
def _tanh(z):
    # tanh from exp, stable at both ends: exp overflows to inf -> 1, underflows to 0 -> -1
    return 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)


@triton.jit
def _softplus(z):
    # torch's softplus (beta=1, threshold=20): linear above the threshold
    return tl.where(z > 20.0, z, tl.log(1.0 + tl.exp(tl.minimum(z, 20.0))))


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
def _sigmoid_fast(z, HW: tl.constexpr):
    if HW:
        return 0.5 * _tanh_hw(0.5 * z) + 0.5
    else:
        return 1.0 / (1.0 + tl.exp2(-1.4426950408889634 * z))  # exp2 -> inf for z << 0: 1/inf = 0


@triton.jit
def _apply_fast(x, bias, a, b, OP: tl.constexpr, HW: tl.constexpr):
    """The ops with fewer transcendentals (FAST >= 1); HW: hardware tanh/lg2 approximations."""
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
def _apply_any(x, bias, a, b, OP: tl.constexpr, FAST: tl.constexpr):
    if FAST == 0:
        x = _apply(x, bias, a, b, OP)
    else:
        x = _apply_fast(x, bias, a, b, OP, FAST == 2)
    return x


@triton.jit
def _apply(x, bias, a, b, OP: tl.constexpr):
    if OP == 1:
        x = tl.maximum(x, 0.0)
    elif OP == 2:
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif OP == 3:
        x = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif OP == 4:
        x = x / (1.0 + tl.exp(-x))
    elif OP == 5:
        x = x * _tanh(_softplus(x))
    elif OP == 6:
        x = _softplus(x)
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
    elif OP == 13:
        x = 1.0 / (1.0 + tl.exp(-x))
    elif OP == 14:
        x = _tanh(x)
    return x


@triton.jit
def _pointwise_kernel(
    x_ptr, y_ptr, bias_ptr, params_ptr,
    n_elements,
    OP0: tl.constexpr, OP1: tl.constexpr, OP2: tl.constexpr, OP3: tl.constexpr,
    OP4: tl.constexpr, OP5: tl.constexpr, OP6: tl.constexpr, OP7: tl.constexpr,
    HAS_BIAS: tl.constexpr, BIAS_INNER: tl.constexpr, BIAS_NUMEL: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr,
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
    x = _apply_any(x, bias, tl.load(params_ptr + 0), tl.load(params_ptr + 1), OP0, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 2), tl.load(params_ptr + 3), OP1, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 4), tl.load(params_ptr + 5), OP2, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 6), tl.load(params_ptr + 7), OP3, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 8), tl.load(params_ptr + 9), OP4, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 10), tl.load(params_ptr + 11), OP5, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 12), tl.load(params_ptr + 13), OP6, FAST)
    x = _apply_any(x, bias, tl.load(params_ptr + 14), tl.load(params_ptr + 15), OP7, FAST)
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


def _launch(x: torch.Tensor, codes: list[int], params: torch.Tensor, bias: torch.Tensor | None,
            bias_inner: int) -> torch.Tensor:
    has_bias = _OP_CODES["bias"] in codes
    if has_bias and bias is None:
        raise ValueError("pointwise chain has a 'bias' op but no bias tensor was given")
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    b = bias.contiguous() if has_bias else params  # any pointer will do when HAS_BIAS is False
    block = TUNABLES["BLOCK"]
    fast = TUNABLES["FAST"]
    if fast == 2 and not (x.is_cuda and x.dtype in (torch.bfloat16, torch.float16)):
        fast = 1  # hardware approximations: GPU only (no inline asm in the interpreter), 16-bit tolerance
    _pointwise_kernel[(triton.cdiv(n, block),)](
        x, y, b, params, n, *codes,
        HAS_BIAS=has_bias, BIAS_INNER=bias_inner, BIAS_NUMEL=b.numel() if has_bias else 1,
        BLOCK=block, FAST=fast, num_warps=TUNABLES["num_warps"],
    )
    return y


def pointwise_chain(x: torch.Tensor, chain, bias: torch.Tensor | None = None, bias_inner: int = 1):
    """Apply `chain` (e.g. [("gelu",), ("mul", 2.0)]) to x in one pass."""
    codes, values = _encode(chain)
    return _launch(x, codes, torch.tensor(values, dtype=torch.float32, device=x.device), bias, bias_inner)


class ModelNew(nn.Module):
    def __init__(self, ops=None, bias_shape=None, *_ignored, **_ignored_kw):
        # with the CHAIN literal set, the spec's own init inputs (whatever they are) are not needed
        super().__init__()
        self.ops = [tuple(op) for op in (CHAIN if CHAIN is not None else ops)]
        shape = BIAS_SHAPE if CHAIN is not None else bias_shape
        self.bias = nn.Parameter(torch.randn(shape)) if shape is not None else None
        self._codes, self._values = _encode(self.ops)  # fails early on an unknown op
        self._params = {}  # device -> fp32 op arguments (not a buffer: model.to(bf16) must not round them)

    def forward(self, x):
        inner = 1
        if self.bias is not None:  # a (C, 1, ..., 1) bias broadcasts over the trailing dims of x
            for dim in x.shape[x.dim() - (self.bias.dim() - 1):]:
                inner *= dim
        params = self._params.get(x.device)
        if params is None:  # once per device: no host-to-device copy per call
            params = self._params[x.device] = torch.tensor(self._values, dtype=torch.float32, device=x.device)
        return _launch(x, self._codes, params, self.bias, inner)
