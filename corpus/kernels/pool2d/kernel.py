"""2-D max and average pooling (NCHW) in one Triton kernel: one program per tile of output rows x columns.

Usage: a KernelBench-format candidate; the harness loads it next to a spec from ./specs/, e.g.
    python -m harness.cli eval corpus/kernels/pool2d/specs/maxpool_k3s2p1_fp32.py corpus/kernels/pool2d/kernel.py

Memory-bound: the ideal traffic is one read of the input plus one write of the output, N*C*(H*W + OH*OW)
elements. Overlapping windows (kernel > stride) re-read neighbouring input rows, which the tile keeps in
L1/L2, so a program covers a BLOCK_H x BLOCK_W patch of one (n, c) plane. The window loop is unrolled
(kernel sizes are constexpr); padding reads count as -inf (max) or 0 (avg, divisor kernel_size**2 as in
PyTorch's default count_include_pad=True). Accumulation is in fp32.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_H": 8, "BLOCK_W": 64, "num_warps": 4}


@triton.jit
def _pool2d_kernel(
    x_ptr, y_ptr,
    C, H, W, OH, OW,
    stride_xn, stride_xc, stride_xh, stride_xw,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    plane = tl.program_id(0)  # n * C + c (axis 0: up to 2**31 - 1 programs)
    tiles_w = tl.cdiv(OW, BLOCK_W)
    tile_h = tl.program_id(1) // tiles_w
    tile_w = tl.program_id(1) % tiles_w
    n = plane // C
    c = plane % C
    oh = tile_h * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = tile_w * BLOCK_W + tl.arange(0, BLOCK_W)
    out_mask = (oh[:, None] < OH) & (ow[None, :] < OW)
    base = x_ptr + n.to(tl.int64) * stride_xn + c.to(tl.int64) * stride_xc

    if IS_MAX:
        acc = tl.full((BLOCK_H, BLOCK_W), float("-inf"), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw
            ok = row_ok[:, None] & (iw[None, :] >= 0) & (iw[None, :] < W) & out_mask
            ptrs = base + ih[:, None] * stride_xh + iw[None, :] * stride_xw
            if IS_MAX:
                v = tl.load(ptrs, mask=ok, other=float("-inf")).to(tl.float32)
                # NaN propagates as in PyTorch: a NaN in the window makes the output NaN.
                acc = tl.where((v > acc) | (v != v), v, acc)  # noqa: PLR0124 - v != v is the NaN test
            else:
                acc += tl.load(ptrs, mask=ok, other=0.0).to(tl.float32)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    y_ptrs = y_ptr + plane.to(tl.int64) * OH * OW + oh[:, None] * OW + ow[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def pool2d(x: torch.Tensor, kind: str, kernel_size, stride=None, padding=0) -> torch.Tensor:
    """Max or average pooling of x (N, C, H, W); floor mode, avg counts padding in the divisor."""
    if kind not in ("max", "avg"):
        raise ValueError(f"pool2d: kind {kind!r} is not 'max' or 'avg'")
    if x.dim() != 4:
        raise ValueError(f"pool2d: x must be (N, C, H, W), got shape {tuple(x.shape)}")
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride if stride is not None else kernel_size)
    ph, pw = _pair(padding)
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"pool2d: padding {(ph, pw)} exceeds half the kernel {(kh, kw)}")
    n, c, h, w = x.shape
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (w + 2 * pw - kw) // sw + 1
    y = torch.empty((n, c, oh, ow), device=x.device, dtype=x.dtype)
    bh, bw = TUNABLES["BLOCK_H"], TUNABLES["BLOCK_W"]
    grid = (n * c, triton.cdiv(oh, bh) * triton.cdiv(ow, bw))
    _pool2d_kernel[grid](
        x, y,
        c, h, w, oh, ow,
        x.stride(0), x.stride(1), x.stride(2), x.stride(3),
        KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, IS_MAX=kind == "max",
        BLOCK_H=bh, BLOCK_W=bw, num_warps=TUNABLES["num_warps"],
    )
    return y


class ModelNew(nn.Module):
    """Same constructor as the pool2d specs' Model: (kind, kernel_size, stride, padding)."""

    def __init__(self, kind: str, kernel_size: int, stride: int, padding: int = 0):
        super().__init__()
        self.kind, self.kernel_size, self.stride, self.padding = kind, kernel_size, stride, padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return pool2d(x, self.kind, self.kernel_size, self.stride, self.padding)
