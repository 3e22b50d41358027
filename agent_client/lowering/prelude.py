"""Triton helpers every generated candidate carries (math the interpreter and the GPU both run).

Usage: source = PRELUDE  (pasted once into a candidate, before its kernels)

Only tl.math primitives are used (exp, log, sqrt, floor...): the CPU interpreter has no libdevice, and
the same candidate source must run there and on a GPU. The forms keep fp32 accuracy: tanh from exp(-2|x|)
(no overflow at either end), log1p and expm1 with the rounding of 1 + x and exp(x) corrected; bf16 rounding
on the bits, ties to even, as a GPU rounds (the interpreter's own conversion truncates).
"""

PRELUDE = '''
@triton.jit
def _kkb_tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _kkb_log1p(x):
    u = 1.0 + x
    d = u - 1.0
    return tl.where(d == 0.0, x, tl.log(u) * (x / tl.where(d == 0.0, 1.0, d)))


@triton.jit
def _kkb_expm1(x):
    u = tl.exp(x)
    lu = tl.log(u)
    small = u * 0.0 + tl.where(tl.abs(x) < 0.5, 1.0, 0.0)
    corrected = (u - 1.0) * (x / tl.where(lu == 0.0, 1.0, lu))
    return tl.where(u == 1.0, x, tl.where(small > 0, corrected, u - 1.0))


@triton.jit
def _kkb_trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@triton.jit
def _kkb_round(x):
    r = tl.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0.0
    return tl.where(tie & odd, r - 1.0, r)


@triton.jit
def _kkb_pow(x, y):
    r = tl.exp2(y * tl.log2(tl.abs(x)))
    yi = tl.floor(y)
    odd = (yi == y) & ((yi - 2.0 * tl.floor(yi * 0.5)) == 1.0)
    r = tl.where((x < 0) & odd, -r, r)
    r = tl.where((x < 0) & (yi != y), float("nan"), r)
    return tl.where(x == 0, tl.where(y > 0, 0.0, tl.where(y == 0, 1.0, float("inf"))), r)



@triton.jit
def _kkb_atan(x):
    # Cephes atanf: reduced to |x| <= tan(pi/8) through pi/2 - atan(1/x) and pi/4 + atan((x-1)/(x+1)),
    # then its degree-9 odd polynomial (coefficients from Cephes, fp32 error about 1e-7)
    a = tl.abs(x)
    big = a > 2.414213562373095
    mid = (a > 0.4142135623730950) & (a <= 2.414213562373095)
    r = tl.where(big, -1.0 / tl.where(big, a, 1.0), tl.where(mid, (a - 1.0) / (a + 1.0), a))
    base = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, 0.0))
    z = r * r
    p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * r + r
    y = base + p
    return tl.where(x < 0, -y, y)


@triton.jit
def _kkb_atan2(y, x):
    a = _kkb_atan(y / tl.where(x == 0, 1.0, x))
    a = tl.where(x < 0, tl.where(y < 0, a - 3.141592653589793, a + 3.141592653589793), a)
    on_axis = tl.where(y > 0, 1.5707963267948966, tl.where(y < 0, -1.5707963267948966, 0.0))
    return tl.where(x == 0, on_axis, a)

@triton.jit
def _kkb_remainder(a, b):
    return a - b * tl.floor(a / b)


@triton.jit
def _kkb_fmod(a, b):
    return a - b * _kkb_trunc(a / b)


@triton.jit
def _kkb_idiv_trunc(a, b):
    # integer quotients on magnitudes only, where C's and Python's rules agree (GPU and interpreter alike)
    q = tl.abs(a) // tl.abs(b)
    return tl.where((a < 0) != (b < 0), -q, q)


@triton.jit
def _kkb_idiv_floor(a, b):
    q = _kkb_idiv_trunc(a, b)
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def _kkb_ifmod(a, b):
    return a - b * _kkb_idiv_trunc(a, b)


@triton.jit
def _kkb_iremainder(a, b):
    r = _kkb_ifmod(a, b)
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _kkb_mul(a, b):
    return a * b


@triton.jit
def _kkb_bf16(x):
    # fp32 -> the nearest bf16 (ties to even), kept in fp32: what eager PyTorch stores after each bf16 op.
    # Done on the bits because the CPU interpreter's bf16 conversion truncates.
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))
'''
