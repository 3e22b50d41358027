"""An elementwise chain in the gemm_epilogue family's epilogue: up to six ops on x W^T + b, in fp32 registers.

A spec's ops after its linear map (a scale, a shift, leaky ReLU, a clamp, GELU after a divide ...) reach the
kernel as data: `encode_chain([("mul", 2.0), ("leaky_relu", 0.1)])` gives six constexpr op codes (one
specialisation per distinct chain) and a tensor of their twelve float arguments, which the epilogue loads once.
Applied after the bias and before the activation, scale, residual and row sum of kernel.py.
"""

import torch
import triton
import triton.language as tl

CHAIN_OPS = {"relu": 1, "leaky_relu": 2, "gelu": 3, "gelu_tanh": 4, "silu": 5, "sigmoid": 6, "tanh": 7,
             "clamp": 8, "mul": 9, "add": 10, "mish": 11, "softplus": 12, "hardswish": 13}
CHAIN_ARGS = {"leaky_relu": 1, "clamp": 2, "mul": 1, "add": 1}  # float arguments of each op (others take none)
MAX_CHAIN = 6


def encode_chain(chain, device) -> tuple[tuple[int, ...], torch.Tensor]:
    """((op codes, MAX_CHAIN of them, 0 = none), float32 tensor of 2 arguments an op on `device`)."""
    chain = list(chain or [])
    if len(chain) > MAX_CHAIN:
        raise ValueError(f"gemm_epilogue: a chain of {len(chain)} ops is longer than {MAX_CHAIN}")
    codes, args = [], []
    for op in chain:
        name, values = op[0], [float(v) for v in op[1:]]
        if name not in CHAIN_OPS:
            raise ValueError(f"gemm_epilogue: chain op {name!r} is not one of {sorted(CHAIN_OPS)}")
        if len(values) != CHAIN_ARGS.get(name, 0):
            raise ValueError(f"gemm_epilogue: chain op {name!r} takes {CHAIN_ARGS.get(name, 0)} arguments, "
                             f"got {len(values)}")
        codes.append(CHAIN_OPS[name])
        args += (values + [0.0, 0.0])[:2]
    codes += [0] * (MAX_CHAIN - len(codes))
    args += [0.0] * (2 * MAX_CHAIN - len(args))
    key = (str(device), tuple(args))
    tensor = _ARGS.get(key)
    if tensor is None:
        if len(_ARGS) >= 256:
            _ARGS.clear()
        tensor = _ARGS[key] = torch.tensor(args, dtype=torch.float32, device=device)
    return tuple(codes), tensor


# The arguments' tensors, made once per device and values: kernels only read them, and a new one a call is a
# host-to-device copy that waits for the GPU work queued ahead, so the GPU then idles through the launch's host
# work (linear_gelu_bf16_4096 at 0.357 ms against torch.compile's 0.210 on an H100, its host launch 0.38 ms,
# benchmarks/results/library-h100-all-20261207T164611Z.json).
_ARGS: dict = {}


@triton.jit
def _tanh_f32(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _softplus_f32(x):
    return tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(tl.minimum(x, 20.0))))


@triton.jit
def _chain_op(x, p_ptr, I: tl.constexpr, OP: tl.constexpr):
    """Op I of the chain (code OP) on fp32 x; its arguments are p_ptr[2 I], p_ptr[2 I + 1]."""
    if OP == 1:
        x = tl.maximum(x, 0.0)
    elif OP == 2:
        x = tl.where(x >= 0, x, x * tl.load(p_ptr + 2 * I))
    elif OP == 3:
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif OP == 4:
        x = 0.5 * x * (1.0 + _tanh_f32(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif OP == 5:
        x = x * tl.sigmoid(x)
    elif OP == 6:
        x = tl.sigmoid(x)
    elif OP == 7:
        x = _tanh_f32(x)
    elif OP == 8:
        x = tl.minimum(tl.maximum(x, tl.load(p_ptr + 2 * I)), tl.load(p_ptr + 2 * I + 1))
    elif OP == 9:
        x = x * tl.load(p_ptr + 2 * I)
    elif OP == 10:
        x = x + tl.load(p_ptr + 2 * I)
    elif OP == 11:
        x = x * _tanh_f32(_softplus_f32(x))
    elif OP == 12:
        x = _softplus_f32(x)
    elif OP == 13:
        x = x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0
    return x


@triton.jit
def _chain(x, p_ptr, OP0: tl.constexpr, OP1: tl.constexpr, OP2: tl.constexpr, OP3: tl.constexpr,
           OP4: tl.constexpr, OP5: tl.constexpr):
    if OP0 != 0:
        x = _chain_op(x, p_ptr, 0, OP0)
    if OP1 != 0:
        x = _chain_op(x, p_ptr, 1, OP1)
    if OP2 != 0:
        x = _chain_op(x, p_ptr, 2, OP2)
    if OP3 != 0:
        x = _chain_op(x, p_ptr, 3, OP3)
    if OP4 != 0:
        x = _chain_op(x, p_ptr, 4, OP4)
    if OP5 != 0:
        x = _chain_op(x, p_ptr, 5, OP5)
    return x
