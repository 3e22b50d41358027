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
def _kkb_to_nearest_int(x):
    # x minus its nearest integer, exactly (both steps are exact in floating point): near a pole of gamma
    # or digamma this is small, and sin(pi d) or tan(pi d) keeps its digits where sin(pi x) would not
    r = x - _kkb_trunc(x)
    return tl.where(r > 0.5, r - 1.0, tl.where(r < -0.5, r + 1.0, r))


@triton.jit
def _kkb_lgamma_pos(x):
    # x > 0: shifted past 8 by lgamma(x) = lgamma(x + 8) - log(x (x + 1) ... (x + 7)), then Stirling's series
    # to the z^-7 term (Bernoulli numbers: 1/12, 1/360, 1/1260, 1/1680); fp32 error about 1e-6 absolute
    small = x < 8.0
    prod = x * (x + 1.0) * (x + 2.0) * (x + 3.0) * (x + 4.0) * (x + 5.0) * (x + 6.0) * (x + 7.0)
    z = tl.where(small, x + 8.0, x)
    r = 1.0 / z
    r2 = r * r
    series = r * (0.08333333333333333 - r2 * (0.002777777777777778 - r2 * (0.0007936507936507937
                                                                          - r2 * 0.0005952380952380953)))
    lz = (z - 0.5) * tl.log(z) - z + 0.9189385332046727 + series
    return tl.where(small, lz - tl.log(tl.where(small, prod, 1.0)), lz)


@triton.jit
def _kkb_lgamma(x):
    # negative x by reflection: log(pi / |sin(pi x)|) - lgamma(1 - x); a pole (0, -1, ...) is +inf
    pos = _kkb_lgamma_pos(tl.where(x > 0, x, 1.0 - x))
    s = tl.abs(tl.sin(3.141592653589793 * _kkb_to_nearest_int(x)))
    refl = tl.log(3.141592653589793 / s) - pos
    pole = (x <= 0) & (x == tl.floor(x))
    return tl.where(pole, float("inf"), tl.where(x > 0, pos, refl))


@triton.jit
def _kkb_digamma_pos(x):
    # x > 0: digamma(x) = digamma(x + 8) - sum 1/(x + k), k < 8, then the asymptotic series to z^-6
    small = x < 8.0
    acc = 1.0 / x + 1.0 / (x + 1.0) + 1.0 / (x + 2.0) + 1.0 / (x + 3.0) + 1.0 / (x + 4.0) + 1.0 / (x + 5.0) \
        + 1.0 / (x + 6.0) + 1.0 / (x + 7.0)
    z = tl.where(small, x + 8.0, x)
    r2 = 1.0 / (z * z)
    psi = tl.log(z) - 0.5 / z - r2 * (0.08333333333333333 - r2 * (0.008333333333333333 - r2 * 0.003968253968253968))
    return tl.where(small, psi - acc, psi)


@triton.jit
def _kkb_digamma(x):
    # negative x by reflection: digamma(1 - x) - pi / tan(pi x); 0 is -inf and a negative integer nan, as
    # PyTorch gives them
    pos = _kkb_digamma_pos(tl.where(x > 0, x, 1.0 - x))
    d = _kkb_to_nearest_int(x)
    refl = pos - 3.141592653589793 * tl.cos(3.141592653589793 * d) / tl.sin(3.141592653589793 * d)
    integer = x == tl.floor(x)
    return tl.where(x > 0, pos, tl.where(x == 0, float("-inf"), tl.where(integer, float("nan"), refl)))


@triton.jit
def _kkb_erfinv(x):
    # Giles' single-precision approximation ("Approximating the erfinv function", GPU Computing Gems, 2011):
    # two polynomials in w = -log(1 - x^2), split at w = 5; +-1 give +-inf, |x| > 1 nan
    w = -tl.log((1.0 - x) * (1.0 + x))
    a = w - 2.5
    p1 = 2.81022636e-08
    p1 = 3.43273939e-07 + p1 * a
    p1 = -3.5233877e-06 + p1 * a
    p1 = -4.39150654e-06 + p1 * a
    p1 = 0.00021858087 + p1 * a
    p1 = -0.00125372503 + p1 * a
    p1 = -0.00417768164 + p1 * a
    p1 = 0.246640727 + p1 * a
    p1 = 1.50140941 + p1 * a
    b = tl.sqrt(tl.where(w < 5.0, 5.0, w)) - 3.0
    p2 = -0.000200214257
    p2 = 0.000100950558 + p2 * b
    p2 = 0.00134934322 + p2 * b
    p2 = -0.00367342844 + p2 * b
    p2 = 0.00573950773 + p2 * b
    p2 = -0.0076224613 + p2 * b
    p2 = 0.00943887047 + p2 * b
    p2 = 1.00167406 + p2 * b
    p2 = 2.83297682 + p2 * b
    y = tl.where(w < 5.0, p1, p2) * x
    y = tl.where(tl.abs(x) == 1.0, x * float("inf"), y)
    return tl.where(tl.abs(x) > 1.0, float("nan"), y)

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
