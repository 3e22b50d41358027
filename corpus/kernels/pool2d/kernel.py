"""2-D max and average pooling (NCHW) in Triton: a flat kernel over all outputs, or a per-plane tile kernel.

Usage: a KernelBench-format candidate; the harness loads it next to a spec from ./specs/, e.g.
    python -m harness.cli eval corpus/kernels/pool2d/specs/maxpool_k3s2p1_fp32.py corpus/kernels/pool2d/kernel.py

Memory-bound: the ideal traffic is one read of the input plus one write of the output, N*C*(H*W + OH*OW)
elements. Overlapping windows (kernel > stride) re-read neighbouring input rows, which the tile keeps in
L1/L2, so a program covers a BLOCK_H x BLOCK_W patch of one (n, c) plane. The window loop is unrolled
(kernel sizes are constexpr); padding reads count as -inf (max) or 0 (avg, divisor kernel_size**2 as in
PyTorch's default count_include_pad=True). Accumulation is in fp32.

Two layouts (TUNABLES["LAYOUT"]):
- "flat" (default): the N*C*OH*OW outputs are one 1-D range, XBLOCK per program (thousands of programs
  for any plane size, no partial tiles but the last). Plane sizes are constexprs, so the per-element
  div/mod that recovers (plane, oh, ow) compiles to multiply-shift. With PAIR and stride 2 along W, the
  window's columns are loaded as aligned (even, odd) pairs, a 2-element vector load split in registers,
  instead of one scalar load per column.
  With VEC = V in (2, 4) (stride 2 along W, window columns within 2 of the output's own pair), groups of
  V adjacent outputs of one output row are the unit: per window row one aligned 2V-element vector load
  (columns 2*ow0 .. 2*ow0 + 2V - 1), split into even and odd columns in registers, plus one scalar load
  per column the block lacks (e.g. column 2*ow0 - 1 for k3 p1), shifted in by split/join. XBLOCK still
  counts outputs (XBLOCK / V groups per program).
- "tile": the original layout, one program per BLOCK_H x BLOCK_W tile of one (n, c) plane.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "LAYOUT": "flat",  # "flat": 1-D over all outputs; "tile": BLOCK_H x BLOCK_W tiles of one plane
    "XBLOCK": 1024,  # flat: outputs per program
    "PAIR": 1,  # flat, stride 2 along W: load window columns as aligned (even, odd) pairs
    "VEC": 1,  # flat, stride 2 along W: 2 or 4 = each thread's V adjacent outputs from one aligned 2V-wide load
    "num_warps_flat": 8,
    "BLOCK_H": 8,  # tile: output rows per program
    "BLOCK_W": 64,  # tile: output columns per program
    "num_warps": 4,  # tile
}


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


@triton.jit
def _fold(acc, v, IS_MAX: tl.constexpr):
    if IS_MAX:
        # NaN propagates as in PyTorch: a NaN in the window makes the output NaN.
        acc = tl.where((v > acc) | (v != v), v, acc)  # noqa: PLR0124 - v != v is the NaN test
    else:
        acc += v
    return acc


@triton.jit
def _pool2d_flat_kernel(
    x_ptr, y_ptr, total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, PAIR: tl.constexpr, M_LO: tl.constexpr, M_HI: tl.constexpr,
    XBLOCK: tl.constexpr, INT64: tl.constexpr,
):
    # x is contiguous NCHW; output index = (plane * OH + oh) * OW + ow
    if INT64:
        offs = tl.program_id(0).to(tl.int64) * XBLOCK + tl.arange(0, XBLOCK)
    else:
        offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = offs < total
    ow = offs % OW  # constexpr divisors: multiply-shift, no integer division
    t = offs // OW
    oh = t % OH
    plane = t // OH
    base = x_ptr + plane * (H * W)
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    acc = tl.full((XBLOCK,), fill, dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_ok = mask & (ih >= 0) & (ih < H)
        row = base + ih * W
        if PAIR:
            # SW == 2: window column 2*ow - PW + kw is lane (kw - PW) % 2 of the pair starting at
            # 2*ow + 2*m, m = (kw - PW) // 2; each pair is one aligned 2-element load.
            for m in tl.static_range(M_LO, M_HI + 1):
                cols = (2 * ow + 2 * m)[:, None] + tl.arange(0, 2)[None, :]
                ok = row_ok[:, None] & (cols >= 0) & (cols < W)
                v = tl.load(row[:, None] + cols, mask=ok, other=fill).to(tl.float32)
                even, odd = tl.split(v)
                if 2 * m + PW >= 0 and 2 * m + PW < KW:
                    acc = _fold(acc, even, IS_MAX)
                if 2 * m + 1 + PW >= 0 and 2 * m + 1 + PW < KW:
                    acc = _fold(acc, odd, IS_MAX)
        else:
            for kw in tl.static_range(KW):
                iw = ow * SW - PW + kw
                ok = row_ok & (iw >= 0) & (iw < W)
                v = tl.load(row + iw, mask=ok, other=fill).to(tl.float32)
                acc = _fold(acc, v, IS_MAX)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _shift_in(a, h, RBLOCK: tl.constexpr, V: tl.constexpr, RIGHT: tl.constexpr):
    # a (RBLOCK, V) = [a0 .. a(V-1)] along axis 1, h (RBLOCK,):
    # RIGHT: [h, a0, .., a(V-2)]; else [a1, .., a(V-1), h]. V is 2 or 4; split/join stay in registers.
    if V == 2:
        a0, a1 = tl.split(a)
        if RIGHT:
            out = tl.join(h, a0)
        else:
            out = tl.join(a1, h)
    else:
        p, q = tl.split(tl.reshape(a, (RBLOCK, 2, 2)))  # p = (a0, a2), q = (a1, a3)
        if RIGHT:
            a1, _a3 = tl.split(q)
            out = tl.reshape(tl.join(tl.join(h, a1), p), (RBLOCK, 4))  # (h, a1) x (a0, a2) -> h a0 a1 a2
        else:
            a0, a2 = tl.split(p)
            out = tl.reshape(tl.join(q, tl.join(a2, h)), (RBLOCK, 4))  # (a1, a3) x (a2, h) -> a1 a2 a3 h
    return out


@triton.jit
def _pool2d_vec_kernel(
    x_ptr, y_ptr, total_groups,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr, GW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
    IS_MAX: tl.constexpr, V: tl.constexpr, RBLOCK: tl.constexpr, INT64: tl.constexpr,
):
    # Stride 2 along W. Group index = (plane * OH + oh) * GW + gw; a group is outputs ow0 .. ow0 + V - 1,
    # ow0 = gw * V, of one output row (the last group of a row may be partial: masked).
    if INT64:
        g = tl.program_id(0).to(tl.int64) * RBLOCK + tl.arange(0, RBLOCK)
    else:
        g = tl.program_id(0) * RBLOCK + tl.arange(0, RBLOCK)
    gmask = g < total_groups
    gw = g % GW  # constexpr divisors: multiply-shift
    t = g // GW  # plane * OH + oh
    oh = t % OH
    plane = t // OH
    ow = (gw * V)[:, None] + tl.arange(0, V)[None, :]
    out_mask = gmask[:, None] & (ow < OW)
    c0 = gw * (2 * V)  # first input column of the aligned block: 2 * ow0
    lane = tl.arange(0, 2 * V)
    base = x_ptr + plane * (H * W)
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    acc = tl.full((RBLOCK, V), fill, dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_ok = gmask & (ih >= 0) & (ih < H)
        row = base + ih * W
        cols = c0[:, None] + lane[None, :]
        v = tl.load(row[:, None] + cols, mask=row_ok[:, None] & (cols < W), other=fill).to(tl.float32)
        even, odd = tl.split(tl.reshape(v, (RBLOCK, V, 2)))  # columns 2*ow and 2*ow + 1
        for kw in tl.static_range(KW):
            # window column 2*ow + kw - PW = 2*(ow + m) + r, e = kw - PW + 2 >= 0 (host checks |m| <= 1)
            e: tl.constexpr = kw - PW + 2
            r: tl.constexpr = e % 2
            m: tl.constexpr = e // 2 - 1
            if r == 0:
                src = even
            else:
                src = odd
            if m == 0:
                col = src
            elif m < 0:  # output ow0's column is 2*ow0 - 2 + r, left of the block
                hc = c0 - 2 + r
                h = tl.load(row + hc, mask=row_ok & (hc >= 0), other=fill).to(tl.float32)
                col = _shift_in(src, h, RBLOCK, V, True)
            else:  # the last output's column is 2*ow0 + 2V + r, right of the block
                hc = c0 + 2 * V + r
                h = tl.load(row + hc, mask=row_ok & (hc < W), other=fill).to(tl.float32)
                col = _shift_in(src, h, RBLOCK, V, False)
            acc = _fold(acc, col, IS_MAX)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    tl.store(y_ptr + t[:, None] * OW + ow, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


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
    if y.numel() == 0:
        return y
    t = TUNABLES
    vec = int(t.get("VEC", 1))
    if vec not in (1, 2, 4):
        raise ValueError(f"pool2d: TUNABLES['VEC'] is {vec}, not 1, 2 or 4")
    # VEC path: stride 2 along W and every window column within one pair of the output's own pair
    if t["LAYOUT"] == "flat" and vec > 1 and sw == 2 and pw <= 2 and kw - 1 - pw <= 3:
        x = x.contiguous()
        gw = triton.cdiv(ow, vec)
        groups = n * c * oh * gw
        rblock = max(1, min(t["XBLOCK"] // vec, triton.next_power_of_2(groups)))
        _pool2d_vec_kernel[(triton.cdiv(groups, rblock),)](
            x, y, groups,
            H=h, W=w, OH=oh, OW=ow, GW=gw, KH=kh, KW=kw, SH=sh, PH=ph, PW=pw, IS_MAX=kind == "max",
            V=vec, RBLOCK=rblock, INT64=max(x.numel(), y.numel()) + rblock * 2 * vec >= 2**31,
            num_warps=t["num_warps_flat"],
        )
        return y
    if t["LAYOUT"] == "flat":
        x = x.contiguous()
        pair = bool(t["PAIR"]) and sw == 2
        xblock = min(t["XBLOCK"], triton.next_power_of_2(y.numel()))
        _pool2d_flat_kernel[(triton.cdiv(y.numel(), xblock),)](
            x, y, y.numel(),
            H=h, W=w, OH=oh, OW=ow, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, IS_MAX=kind == "max",
            PAIR=pair, M_LO=(-pw) // 2, M_HI=(kw - 1 - pw) // 2, XBLOCK=xblock,
            INT64=x.numel() + xblock >= 2**31, num_warps=t["num_warps_flat"],
        )
        return y
    if t["LAYOUT"] != "tile":
        raise ValueError(f"pool2d: TUNABLES['LAYOUT'] is {t['LAYOUT']!r}, not 'flat' or 'tile'")
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
