"""Convolution (1-D, 2-D, 3-D; strided, padded, dilated, grouped; transposed) as an implicit GEMM on the
tensor cores, with the bias fused: y = conv(x, W) + b, NCHW in and out.

The mainloop is `conv_tile` (implicit_gemm.py, shared with the offline lowering's generated kernels): one
(output pixels x output channels) tile accumulated in fp32 registers over taps x input channels, fp32
inputs as 3xTF32 (fp32-level error on the tensor cores; cuDNN's fp32 path runs on the CUDA cores), 16-bit
inputs natively. A transposed convolution of stride s runs as s^dims phase convolutions over the taps
each output phase receives, in one launch. The weight is packed once as [groups, taps, Cin_g, Cout_g]
and kept while the weight's storage and version are unchanged.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn

from corpus.kernels.conv.implicit_gemm import conv_packed_strides, conv_packed_weight, conv_tile, gcd_inverse

TUNABLES = {
    "BLOCK_M": 128,  # output pixels a tile
    "BLOCK_N": 128,  # output channels a tile (capped at Cout per group, at least 16)
    "BLOCK_K": 32,  # input channels (taps) or taps x channels (flat) a step (capped, at least 16)
    "GROUP_M": 8,  # row tiles that share weight column tiles in L2
    "num_warps": 8,
    "num_stages": 3,
    "MAINLOOP": "auto",  # "taps" (taps outer, channel blocks inner), "flat" (taps x channels), "auto": taps
    # from 16 input channels per group
    "PACK": "nk",  # packed weight order: "kn" output channels contiguous, "nk" input channels contiguous
    "SPLIT_W": True,  # fp32: the weight split into TF32 high parts and remainders when packed, so 3xTF32
    # splits only x in the loop and the weight tiles go from memory to the MMA as they are (compiled for sm_90:
    # about a quarter fewer instructions and a third fewer registers; NOTES.md)
    "X_LAYOUT": "as_given",  # "channels_last": a channels-last copy of x first (its cost counted)
    "PRECISION": "tf32x3",  # fp32 inputs: "tf32x3" (3xTF32, fp32-level error) or "ieee" (fp32 FMA)
}


@triton.jit
def _conv_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    NB: tl.constexpr, CIN_G: tl.constexpr, COUT_G: tl.constexpr,
    ID: tl.constexpr, IH: tl.constexpr, IW: tl.constexpr,
    OD: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
    SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
    PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
    DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
    GD: tl.constexpr, GH: tl.constexpr, GW: tl.constexpr,
    VD: tl.constexpr, VH: tl.constexpr, VW: tl.constexpr,
    SXN: tl.constexpr, SXC: tl.constexpr, SXD: tl.constexpr, SXH: tl.constexpr, SXW: tl.constexpr,
    SWG: tl.constexpr, SWT: tl.constexpr, SWC: tl.constexpr, SWN: tl.constexpr,
    SPLIT: tl.constexpr, SWL: tl.constexpr,
    SYN: tl.constexpr, SYC: tl.constexpr, SYD: tl.constexpr, SYH: tl.constexpr, SYW: tl.constexpr,
    M_TILES: tl.constexpr, HAS_BIAS: tl.constexpr,
    TRANSPOSED: tl.constexpr, FLAT: tl.constexpr, INT64: tl.constexpr, PREC: tl.constexpr,
    UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # a transposed convolution's phases are the fastest-varying index: the programs writing the interleaved
    # outputs of one region run together, so each output sector is whole in L2 before it is written back
    if TRANSPOSED:
        pid = tl.program_id(0) // (SD * SH * SW)
        g = tl.program_id(1)
        gp = g * (SD * SH * SW) + tl.program_id(0) % (SD * SH * SW)
    else:
        pid = tl.program_id(0)
        g = tl.program_id(1)
        gp = g
    n_tiles = (COUT_G + BLOCK_N - 1) // BLOCK_N
    per_group = GROUP_M * n_tiles
    first_m = (pid // per_group) * GROUP_M
    rows = tl.minimum(M_TILES - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    acc, nb, od, oh, ow, mp = conv_tile(
        x_ptr, w_ptr, pid_m, pid_n, gp, NB, CIN_G, COUT_G, ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW,
        PD, PH, PW, DD, DH, DW, GD, GH, GW, VD, VH, VW, SXN, SXC, SXD, SXH, SXW, SWG, SWT, SWC, SWN, SPLIT, SWL,
        TRANSPOSED, FLAT, INT64, PREC, UPCAST, BLOCK_M, BLOCK_N, BLOCK_K)
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ch = g * COUT_G + co
    if HAS_BIAS:
        acc += tl.load(b_ptr + ch, mask=co < COUT_G, other=0.0).to(tl.float32)[None, :]
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mask = (m < mp)[:, None] & (co < COUT_G)[None, :]
    yrow = nb * SYN + od * SYD + oh * SYH + ow * SYW
    tl.store(y_ptr + yrow[:, None] + (ch * SYC)[None, :], acc.to(y_ptr.dtype.element_ty), mask=mask)


def _triple(v, nd: int, fill: int) -> list[int]:
    """A per-dim argument (int or tuple of nd) as 3 values, leading dims filled with `fill`."""
    vals = [int(v)] * nd if isinstance(v, int) else [int(a) for a in v]
    if len(vals) != nd:
        raise ValueError(f"conv: {v!r} does not give one value per each of the {nd} spatial dims")
    return [fill] * (3 - nd) + vals


def _pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def output_size(size: int, k: int, s: int, p: int, d: int, transposed: bool, op: int) -> int:
    if transposed:
        return (size - 1) * s - 2 * p + d * (k - 1) + op + 1
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride=1, padding=0,
         dilation=1, groups: int = 1, transposed: bool = False, output_padding=0) -> torch.Tensor:
    """conv{1,2,3}d(x, weight, bias, stride, padding, dilation, groups), or conv_transpose{1,2,3}d(x, weight,
    bias, stride, padding, output_padding, groups, dilation) with transposed=True; x (N, C, *spatial)."""
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or weight.dim() != x.dim():
        raise ValueError(f"conv: x {tuple(x.shape)} and weight {tuple(weight.shape)} are not a 1-3 D convolution")
    if isinstance(padding, str):
        raise TypeError(f"conv: padding={padding!r} is not served (numbers only)")
    if x.dtype != weight.dtype:
        raise ValueError(f"conv: x is {x.dtype} but weight is {weight.dtype}")
    cfg = TUNABLES
    if cfg["PRECISION"] not in ("tf32x3", "ieee"):
        raise ValueError(f"conv: TUNABLES PRECISION={cfg['PRECISION']!r} is not 'tf32x3' or 'ieee' (plain tf32 "
                         "would fail the fp32 tolerance)")
    ks = [1] * (3 - nd) + list(weight.shape[2:])
    st = _triple(stride, nd, 1)
    pd = _triple(padding, nd, 0)
    dl = _triple(dilation, nd, 1)
    op = _triple(output_padding, nd, 0)
    size_in = [1] * (3 - nd) + list(x.shape[2:])
    nb, cin = x.shape[0], x.shape[1]
    if transposed:
        cin_g, cout_g = cin // groups, weight.shape[1]
    else:
        cin_g, cout_g = weight.shape[1], weight.shape[0] // groups
    if cin_g * groups != cin or (weight.shape[0] if transposed else weight.shape[1] * groups) != cin:
        raise ValueError(f"conv: x has {cin} channels, weight {tuple(weight.shape)} with groups={groups}")
    size_out = [output_size(size_in[j], ks[j], st[j], pd[j], dl[j], transposed, op[j]) for j in range(3)]
    y = torch.empty((nb, cout_g * groups, *size_out[3 - nd:]), device=x.device, dtype=x.dtype)
    if y.numel() == 0:
        return y
    if cfg["X_LAYOUT"] == "channels_last":
        perm = [0, *range(2, x.dim()), 1]
        x = x.permute(perm).contiguous().permute([0, x.dim() - 1, *range(1, x.dim() - 1)])
    order = cfg["PACK"]
    split = bool(cfg["SPLIT_W"]) and x.dtype == torch.float32
    wp = conv_packed_weight(weight, transposed, groups, order, split)
    swg, swt, swc, swn = conv_packed_strides(wp, order)
    sx = [x.stride(0), x.stride(1)] + [0] * (3 - nd) + list(x.stride()[2:])
    sy = [y.stride(0), y.stride(1)] + [0] * (3 - nd) + list(y.stride()[2:])
    inv = [gcd_inverse(dl[j], st[j]) if transposed else (1, 0) for j in range(3)]
    flat = cfg["MAINLOOP"] == "flat" or (cfg["MAINLOOP"] == "auto" and cin_g < 16)
    taps = math.prod(ks)
    block_n = max(16, min(cfg["BLOCK_N"], _pow2(cout_g)))
    block_k = max(16, min(cfg["BLOCK_K"], _pow2(cin_g * taps if flat else cin_g)))
    block_m = cfg["BLOCK_M"]
    q = [-(-size_out[j] // st[j]) if transposed else size_out[j] for j in range(3)]
    m_tiles = triton.cdiv(nb * math.prod(q), block_m)
    phases = math.prod(st) if transposed else 1
    grid = (m_tiles * triton.cdiv(cout_g, block_n) * phases, groups)
    big = max(x.numel(), y.numel()) >= 2**31
    # as many pipeline stages as shared memory holds (a split weight tile counts twice)
    stages = max(1, min(cfg["num_stages"], 200000 // (x.element_size() * (block_m * block_k
                                                                           + (1 + split) * block_k * block_n))))
    _conv_kernel[grid](
        x, wp, bias if bias is not None else y, y,
        nb, cin_g, cout_g, *size_in, *size_out, *ks, *st, *pd, *dl,
        *[g for g, _ in inv], *[v for _, v in inv], *sx, swg, swt, swc, swn, split, wp.numel(), *sy,
        m_tiles, bias is not None, transposed, flat, big, cfg["PRECISION"], x.device.type == "cpu",
        block_m, block_n, block_k, cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=stages,
    )
    return y


class ModelNew(nn.Module):
    """Same parameters as the specs' Model (one nn.Conv*/ConvTranspose* as self.conv), one kernel a call."""

    def __init__(self, dims: int, transposed: bool, in_channels: int, out_channels: int, kernel_size,
                 stride=1, padding=0, dilation=1, groups: int = 1, output_padding=0, bias: bool = True):
        super().__init__()
        if transposed:
            cls = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)[dims - 1]
            self.conv = cls(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            output_padding=output_padding, groups=groups, bias=bias, dilation=dilation)
        else:
            cls = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[dims - 1]
            self.conv = cls(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            dilation=dilation, groups=groups, bias=bias)
        self.transposed = transposed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.conv
        return conv(x, c.weight, c.bias, c.stride, c.padding, c.dilation, c.groups, self.transposed,
                    c.output_padding if self.transposed else 0)
