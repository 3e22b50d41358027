"""The convolution family's mainloop: one output tile of an implicit GEMM, and the packed weight it reads.

`conv_tile` computes a (BLOCK_M output pixels) x (BLOCK_N output channels) tile of a 1-D, 2-D or 3-D
convolution or transposed convolution (1-D and 2-D as 3-D with unit leading dims), any stride, padding,
dilation and groups, and returns the fp32 accumulator with the output coordinates of its rows: the caller
adds its own epilogue and store. The library's kernel.py and the offline lowering's generated kernels both
call it (the lowering pastes this file's source into its candidates), so one mainloop serves every spec.

M is the output pixels (batch, then depth, height, width: rows run along W, so NCHW loads and stores are
coalesced), N the output channels of one group, K the input channels of the group times the kernel taps.
Two K walks:
- "taps": the taps outer, channel blocks inner, flattened into one loop so the pipeliner sees one loop.
  Per step the input coordinates and their validity are computed once per output pixel (a [BLOCK_M]
  vector), and the channel block is a plain stride; for Cin per group >= 16.
- "flat": K = taps x channels flattened (tap-major), each K column's offset and tap coordinates decoded
  once per step on a [BLOCK_K] vector; for few input channels (Cin 3 or 8 with a 3x3 kernel), where a
  channel block per tap would be mostly padding.
A transposed convolution of stride s is split into s^dims output phases (the grid's second axis holds
group x phase): outputs o = q s + c of phase c receive exactly the taps t with t d = c + p (mod s), an
ordinary convolution over q with those taps, so no MMA work falls on the zeros a stride inserts. A phase
whose residue no tap reaches (dilation and stride sharing a factor) loops zero times: bias only.
fp32 runs the tensor cores as 3xTF32 (PREC "tf32x3", fp32-level error); bf16/fp16 natively, fp32 sums.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _conv_axis(c, O: tl.constexpr, K: tl.constexpr, S: tl.constexpr, P: tl.constexpr, D: tl.constexpr,
          G: tl.constexpr, V: tl.constexpr, TRANSPOSED: tl.constexpr):
    """One spatial dimension of phase c: (outputs q of the phase, taps, first tap, tap step, input
    coordinate = q * qa + base + j * jstep for the j-th tap, output coordinate = q * os + c).

    Transposed: tap t reaches output o from input (o + P - t D) / S when that divides; for o = q S + c
    the taps are t = t0 + j S/G (G = gcd(D, S), V = (D/G)^-1 mod S/G) when G divides c + P, else none."""
    if TRANSPOSED:
        cp = c + P
        t0 = ((cp // G) * V) % (S // G)
        taps = tl.where(cp % G == 0, (K - t0 + S // G - 1) // (S // G), 0)
        q = (O - c + S - 1) // S
        return q, taps, t0, S // G, 1, (cp - t0 * D) // S, -(D // G), S
    else:
        return O, K, 0, 1, S, -P, D, 1


@triton.jit
def _conv_in_range(i, n: tl.constexpr):
    return (i >= 0) & (i < n)


@triton.jit
def conv_tile(
    x_ptr, w_ptr, pid_m, pid_n, gp,
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
    TRANSPOSED: tl.constexpr, FLAT: tl.constexpr, INT64: tl.constexpr, PREC: tl.constexpr,
    UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """(acc [BLOCK_M, BLOCK_N] fp32, batch, od, oh, ow [BLOCK_M] of each row, M of this phase). Rows at or
    past M repeat row 0, so a caller may load at their coordinates unmasked (its stores mask m < M).

    gp = group * phases + phase; weights packed as w[g, tap, ci, co] at g SWG + tap SWT + ci SWC + co SWN
    (any order: the strides say which); x at n SXN + c SXC + d SXD + h SXH + w SXW. SPLIT (fp32): the
    packed weight holds its TF32 high parts, then SWL elements on its remainders (`conv_packed_weight`
    with split=True), so 3xTF32 splits only x in the loop."""
    if TRANSPOSED:
        ph = gp % (SD * SH * SW)
        g = gp // (SD * SH * SW)
    else:
        ph = gp * 0
        g = gp
    cd = ph // (SW * SH)
    chh = (ph // SW) % SH
    cw = ph % SW
    qd_n, td_n, td0, td_s, ad, bd0, bd_s, osd = _conv_axis(cd, OD, KD, SD, PD, DD, GD, VD, TRANSPOSED)
    qh_n, th_n, th0, th_s, ah, bh0, bh_s, osh = _conv_axis(chh, OH, KH, SH, PH, DH, GH, VH, TRANSPOSED)
    qw_n, tw_n, tw0, tw_s, aw, bw0, bw_s, osw = _conv_axis(cw, OW, KW, SW, PW, DW, GW, VW, TRANSPOSED)
    mp = NB * qd_n * qh_n * qw_n
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mok = m < mp
    m = tl.where(mok, m, 0)  # rows past the edge repeat row 0: every address a caller forms from them is valid
    qw = m % qw_n
    r = m // qw_n
    qh = r % qh_n
    r = r // qh_n
    qd = r % qd_n
    nb = r // qd_n
    if INT64:
        nb = nb.to(tl.int64)
    bd = qd * ad + bd0  # input coordinates of tap 0
    bh = qh * ah + bh0
    bw = qw * aw + bw0
    xrow = x_ptr + nb * SXN + (g * CIN_G) * SXC
    co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    wcol = w_ptr + g * SWG + co * SWN
    nok = co < COUT_G
    ck = tl.arange(0, BLOCK_K)
    taps = td_n * th_n * tw_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if FLAT:
        kt = CIN_G * taps
        for k0 in range(0, kt, BLOCK_K):
            k = k0 + ck
            ci = k % CIN_G
            tap = k // CIN_G
            jw = tap % tw_n
            jh = (tap // tw_n) % th_n
            jd = tap // (tw_n * th_n)
            kok = k < kt
            idd = bd[:, None] + (jd * bd_s)[None, :]
            ihh = bh[:, None] + (jh * bh_s)[None, :]
            iww = bw[:, None] + (jw * bw_s)[None, :]
            ok = (mok[:, None] & kok[None, :] & _conv_in_range(idd, ID) & _conv_in_range(ihh, IH)
                  & _conv_in_range(iww, IW))
            a = tl.load(xrow[:, None] + (bd * SXD + bh * SXH + bw * SXW)[:, None]
                        + (ci * SXC + jd * (bd_s * SXD) + jh * (bh_s * SXH) + jw * (bw_s * SXW))[None, :],
                        mask=ok, other=0.0)
            wtap = ((td0 + jd * td_s) * KH + (th0 + jh * th_s)) * KW + (tw0 + jw * tw_s)
            b, b_lo = _conv_load_w(wcol[None, :] + (wtap * SWT + ci * SWC)[:, None], kok[:, None] & nok[None, :],
                                   SPLIT, SWL)
            acc = _conv_mma(a, b, b_lo, acc, PREC, UPCAST, SPLIT)
    else:
        NCB = (CIN_G + BLOCK_K - 1) // BLOCK_K
        for kk in range(taps * NCB):
            tap = kk // NCB
            c0 = (kk % NCB) * BLOCK_K
            jw = tap % tw_n
            jh = (tap // tw_n) % th_n
            jd = tap // (tw_n * th_n)
            idd = bd + jd * bd_s
            ihh = bh + jh * bh_s
            iww = bw + jw * bw_s
            ok = mok & _conv_in_range(idd, ID) & _conv_in_range(ihh, IH) & _conv_in_range(iww, IW)
            xoff = idd * SXD + ihh * SXH + iww * SXW
            wtap = ((td0 + jd * td_s) * KH + (th0 + jh * th_s)) * KW + (tw0 + jw * tw_s)
            c = c0 + ck
            if CIN_G % BLOCK_K == 0:
                amask = ok[:, None]
                bmask = nok[None, :]
            else:
                cok = c < CIN_G
                amask = ok[:, None] & cok[None, :]
                bmask = cok[:, None] & nok[None, :]
            a = tl.load(xrow[:, None] + xoff[:, None] + (c * SXC)[None, :], mask=amask, other=0.0)
            b, b_lo = _conv_load_w(wcol[None, :] + (wtap * SWT + c * SWC)[:, None], bmask, SPLIT, SWL)
            acc = _conv_mma(a, b, b_lo, acc, PREC, UPCAST, SPLIT)
    # output coordinates, clamped: a phase without outputs (an output shorter than the stride) names row 0
    od = tl.minimum(qd * osd + _conv_phase(cd, osd), OD - 1)
    oh = tl.minimum(qh * osh + _conv_phase(chh, osh), OH - 1)
    ow = tl.minimum(qw * osw + _conv_phase(cw, osw), OW - 1)
    return acc, nb, od, oh, ow, mp


@triton.jit
def _conv_phase(c, os: tl.constexpr):
    """The output offset of a phase: c for a transposed convolution (os = its stride), 0 for a plain one."""
    if os == 1:
        return 0
    else:
        return c


@triton.jit
def _conv_load_w(ptrs, mask, SPLIT: tl.constexpr, SWL: tl.constexpr):
    """A weight tile, and with SPLIT its TF32 remainders SWL elements on (else the same tile again)."""
    b = tl.load(ptrs, mask=mask, other=0.0)
    if SPLIT:
        return b, tl.load(ptrs + SWL, mask=mask, other=0.0)
    else:
        return b, b


@triton.jit
def _conv_tf32(v):
    """fp32 rounded to the nearest TF32 value (10 explicit mantissa bits, ties away from zero), on the bits."""
    return ((v.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def _conv_mma(a, b, b_lo, acc, PREC: tl.constexpr, UPCAST: tl.constexpr, SPLIT: tl.constexpr):
    if a.dtype == tl.float32:
        if SPLIT:  # 3xTF32 with the weight split ahead: hi*lo + lo*hi + hi*hi, TF32 products exact in fp32
            a_hi = _conv_tf32(a)
            acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
            acc = tl.dot(a - a_hi, b, acc, input_precision="tf32")
            return tl.dot(a_hi, b, acc, input_precision="tf32")
        else:  # "tf32x3": three TF32 products, fp32-level error; "ieee": fp32 FMA
            return tl.dot(a, b, acc, input_precision=PREC)
    elif UPCAST:  # the CPU interpreter's 16-bit dot multiplies raw bits: go through fp32
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        return tl.dot(a, b, acc)


@triton.jit
def _conv_split_tf32(src, dst, n, BLOCK: tl.constexpr):
    """dst[:n] = TF32 high parts of src, dst[n:2n] = the remainders (exact in fp32)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    v = tl.load(src + i, mask=mask)
    hi = _conv_tf32(v)
    tl.store(dst + i, hi, mask=mask)
    tl.store(dst + n + i, v - hi, mask=mask)


def gcd_inverse(d: int, s: int) -> tuple[int, int]:
    """(gcd(d, s), the inverse of d / gcd modulo s / gcd): what `conv_tile` needs per transposed dim."""
    import math

    g = math.gcd(d, s)
    step = s // g
    return g, (pow(d // g, -1, step) if step > 1 else 0)


def conv_packed_weight(w: torch.Tensor, transposed: bool, groups: int, order: str = "kn",
                       split: bool = False) -> torch.Tensor:
    """The weight as [groups, taps, Cin/groups, Cout/groups] ("kn": output channels contiguous) or
    [groups, Cout/groups, taps, Cin/groups] ("nk": input channels contiguous), made once per weight and
    kept on the tensor while its storage and version are unchanged (an in-place update repacks). split
    (fp32): [2, ...], the TF32 high parts then the remainders, for `conv_tile`'s SPLIT."""
    split = split and w.dtype == torch.float32
    key = (transposed, groups, order, split, w.data_ptr(), w._version, tuple(w.shape), w.dtype)
    held = getattr(w, "_kkb_conv_packed", None)
    if held is not None and held[0] == key:
        return held[1]
    taps = 1
    for k in w.shape[2:]:
        taps *= k
    if transposed:  # [Cin, Cout_g, taps] -> [G, Cin_g, Cout_g, taps]
        v = w.detach().reshape(groups, w.shape[0] // groups, w.shape[1], taps)
        v = v.permute(0, 3, 1, 2) if order == "kn" else v.permute(0, 2, 3, 1)
    else:  # [Cout, Cin_g, taps] -> [G, Cout_g, Cin_g, taps]
        v = w.detach().reshape(groups, w.shape[0] // groups, w.shape[1], taps)
        v = v.permute(0, 3, 2, 1) if order == "kn" else v.permute(0, 1, 3, 2)
    packed = v.contiguous()
    if split:
        halves = torch.empty((2, *packed.shape), device=packed.device, dtype=packed.dtype)
        n = packed.numel()
        _conv_split_tf32[(triton.cdiv(n, 1024),)](packed, halves, n, BLOCK=1024)
        packed = halves[0]  # the strides of one half; the remainders follow at SWL = its numel
    w._kkb_conv_packed = (key, packed)
    return packed


def conv_packed_strides(packed: torch.Tensor, order: str) -> tuple[int, int, int, int]:
    """(group, tap, input channel, output channel) strides of `conv_packed_weight`'s result."""
    s = packed.stride()
    return (s[0], s[1], s[2], s[3]) if order == "kn" else (s[0], s[2], s[3], s[1])
