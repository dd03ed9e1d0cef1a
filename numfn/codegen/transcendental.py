"""Vectorizable transcendental functions: rules that rewrite EXP, EXP2, LOG, LOG2, SIN, COS, TAN and TANH on
float32 and float64 into arithmetic, comparisons, selects and integer bit manipulation, so that a loop calling
them is vectorized by LLVM (or clang) instead of calling libm once per element.

Only ops every backend renders are produced: + - * / on floats, comparisons, WHERE, AND/OR/XOR, SHL/SHR on
unsigned (and arithmetic SHR on signed) 64-bit integers, casts between ints and floats, BITCAST, ABS. There are
no loops, no libm calls and no tables in memory: per-element table lookups are WHERE selects between constants.

Methods (x is the argument; "double-double" is an unevaluated sum hi + lo of two doubles):

  exp     k = round(x / ln2) by the 1.5*2**52 rounding constant, r = x - k*ln2 with ln2 in two parts (the first
          with 42 bits, so k*LN2_HI is exact), |r| <= ln2/2. float64: e**r = 1 + r + r*r*P(r), P of degree 9,
          the sum 1 + hi kept as a double-double (Fast2Sum) so the only large rounding is the last one; 2**k is
          applied as two exact power-of-two factors, so overflow gives inf and results below 2**-1022 round once
          into the denormals (gradual underflow). float32: the same in float32 arithmetic with P of degree 5 and
          ln 2 in 16 + 24 bits (so 16 lanes per AVX-512 vector; exp dominates softmax), 2**k as two exact factors.
  exp2    k = round(x), f = x - k exact; float64: f*ln2 as a double-double (f split into 26 + 27 bits), then the
          exp kernel. Integers give exact powers of two (f = 0 makes the kernel return exactly 1).
  log     x = 2**k * m with m in [sqrt(1/2), sqrt(2)) by integer arithmetic on the bits (denormals scaled by
          2**54 first), f = m - 1, s = f / (2 + f), log(1 + f) = 2*atanh(s) = f - f*f/2 + s*(f*f/2 + R(s*s)),
          R = z*T(z) with T of degree 6 (float64) or 3 (float32, computed in float64).
  log2    the same reduction; float64 computes log(1 + f) / ln2 as a double-double (high part truncated to 21
          bits so its product with a 32-bit 1/ln2 is exact) and adds k with Fast2Sum, so powers of two are exact.
  sin/cos/tan
          reduction by pi/2 for every |x| >= pi/4 by Payne-Hanek in 64-bit integers: x = m * 2**e, and x * 2/pi
          mod 4 is the top of (m * W) mod 2**N for a window W of the bits of 2/pi chosen by e. float64: N = 192
          bits out of a 1280-bit constant, its 64-bit words picked by a 5-level barrel shifter of WHEREs and then
          shifted by e % 64; the 126-bit fraction becomes a double-double and is multiplied by pi/2 with pieces
          of 26 bits (exact products). float32: N = 96 bits from two overlapping 64-bit words (5-way WHERE), the
          fraction kept to 2**-62 in one double. There is no cheaper path for moderate |x|: every element pays
          for the exact reduction (a branch-free loop computes every path anyway). Then sin(r) = r + r**3*S(r*r)
          and cos(r) = 1 - r*r/2 + r**4*C(r*r) (6 terms each; the rounding errors of r*r and 1 - r*r/2 are kept,
          the low part of r is folded in to first order), the quadrant picks sin or cos and the sign; tan is
          sin/cos or -cos/sin, with one Newton correction of the quotient. float32 runs in float64 after the
          integer reduction, sin and cos sharing one 4-term polynomial whose coefficients are selected by the
          quadrant, and rounds once.
  tanh    tanh(-x) = -tanh(x). float64: |x| < ln(3)/2 a polynomial x + x**3*R(x*x) with R of degree 10 (no
          cancellation); above, 1 - 2/(e**(2|x|) + 1) with e**(2|x|) a double-double from the exp kernel, the
          quotient corrected to first order and 1 - q by Fast2Sum. float32 (in float64): E = expm1(2|x|) from the
          exp kernel without the leading 1, tanh = E / (E + 2); it has no cancellation near 0 and gives x for tiny x.

Coefficients: weighted minimax polynomials computed for this module with a Remez exchange in mpmath at 60 digits
(weight = the factor that carries the polynomial's error into the function's relative error, e.g. r**2/e**r for
the exp kernel), then rounded to float64. The 2/pi, pi/2 and ln 2 constants are computed at import with integer
series (Machin's formula for pi, 2*atanh(1/3) for ln 2).

Accuracy, measured on 6.3M arguments per function (dense grids, all exponents, denormals, specials) against long
double: float64 at most 0.77 (exp, exp2, log), 0.81 (log2), 0.79 (sin, cos, tanh) and 0.90 (tan) ulp from the
exact result; float32 at most 0.501 ulp (0.504 tanh), except exp at 0.99 (computed in float32 for speed). The
distance to NumPy (AVX-512 build, NumPy 2.4) is at most 1 ulp for every float64 function and for float32 sin, cos
and tanh, 2 for float32 log2, and - the documented corners, all where NumPy's own float32 result is further from
the exact one - 3 ulp for float32 exp (NumPy's own error up to 2.4 ulp), 3 for float32 exp2 (NumPy up to 2.7 ulp,
e.g. near overflow), 4 for float32 log (NumPy 3.5 ulp) and 4 for float32 tan (NumPy 3.6 ulp). NumPy's float64
cos is itself 8 ulp off at the hardest argument 6381956970095103 * 2**797, where numfn is exact to 0.02 ulp.

Rounding to an integer uses (v + 1.5*2**52) - 1.5*2**52, which needs IEEE semantics without reassociation: the
arithmetic these rules add is never reassociated, even under jit(fastmath=True), which marks only the user's
operations (codegen/program.py). Every operation rounds on its own by default, the same on both backends (which
agree bit for bit); the polynomials' multiply-adds are explicit FMA ops where the CPU has FMA instructions (one
rounding each, on both backends; softmax is 13% faster than with two roundings). The contraction fastmath allows
elsewhere (a*b + c as one FMA) is harmless: every product whose rounding matters is exact by construction, and
splits of doubles are made by masking bits, not by Veltkamp's method.
NOOPT=1 skips these rules and keeps the libm calls.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction

from numfn.dtype import dtypes
from numfn.runtime.target import has_fma
from numfn.ir.primitives import PRIMITIVES, ops_where, register
from numfn.ir.uop import Ops, PatternMatcher, UOp, UPat

F32, F64, I32, I64, U64, U32 = dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint64, dtypes.uint32


# ---------------------------------------------------------------------------------------------------------------
# constants, computed exactly with integer series (no tables copied from anywhere)

def _atan_inv(n: int, bits: int) -> int:
    """atan(1/n) * 2**bits, short by at most a unit per term (the guard bits absorb it)."""
    total, power, k, n2 = 0, (1 << bits) // n, 0, n * n
    while power:
        total += -(power // (2 * k + 1)) if k & 1 else power // (2 * k + 1)
        power //= n2
        k += 1
    return total


def _atanh_inv(n: int, bits: int) -> int:
    """atanh(1/n) * 2**bits."""
    total, power, k, n2 = 0, (1 << bits) // n, 0, n * n
    while power:
        total += power // (2 * k + 1)
        power //= n2
        k += 1
    return total


_BITS = 1400                     # fixed-point precision of the constants (the 2/pi window needs 1215 bits)
_G = 64                          # guard bits against the series' truncation
_PI = Fraction((16 * _atan_inv(5, _BITS + _G) - 4 * _atan_inv(239, _BITS + _G)) >> _G, 1 << _BITS)
_LN2 = Fraction((2 * _atanh_inv(3, _BITS + _G)) >> _G, 1 << _BITS)
_LN10 = 3 * _LN2 + Fraction((2 * _atanh_inv(9, _BITS + _G)) >> _G, 1 << _BITS)       # ln 10 = 3 ln 2 + ln(5/4)
_ATAN_HALF = Fraction(_atan_inv(2, _BITS + _G) >> _G, 1 << _BITS)                     # atan(1/2)
_ATAN_3_2 = _PI / 4 + Fraction(_atan_inv(5, _BITS + _G) >> _G, 1 << _BITS)          # atan(3/2) = pi/4 + atan(1/5)


def _dbl(v: Fraction) -> float:
    return float(v)   # Fraction -> float is correctly rounded


def _round_bits(v: Fraction, bits: int) -> float:
    """v rounded to `bits` significant bits (a double whose products with small integers are exact)."""
    e = math.floor(math.log2(abs(v)))
    return float(Fraction(round(v * 2 ** (bits - 1 - e)), 2 ** (bits - 1 - e)))


MAGIC = 6755399441055744.0       # 1.5 * 2**52: v + MAGIC rounds v (|v| < 2**51) to an integer, held in the low bits
MAGIC_BITS = 0x4338000000000000
MAGIC32 = 12582912.0            # 1.5 * 2**23: the same rounding in float32, for |v| < 2**22
MAGIC32_BITS = 0x4B400000
LN2_HI32 = 0.693145751953125    # ln 2 to 16 bits (0x3f317200): k * LN2_HI32 is exact in float32 for |k| < 2**8
INV_LN2 = _dbl(1 / _LN2)
LN2 = _dbl(_LN2)
LN2_HI = _round_bits(_LN2, 42)   # k * LN2_HI is exact for |k| < 2**11
LN2_LO = _dbl(_LN2 - Fraction(LN2_HI))
LN2_LO32 = float(_dbl(_LN2 - Fraction(LN2_HI32)))
L2A = _round_bits(_LN2, 27)      # f_hi * L2A is exact for f_hi with 26 significant bits
L2B = _dbl(_LN2 - Fraction(L2A))
IVLN2_HI = _round_bits(1 / _LN2, 32)   # exact times a 21-bit number
IVLN2_LO = _dbl(1 / _LN2 - Fraction(IVLN2_HI))
PIO2_HI = _dbl(_PI / 2)
PIO2_A = _round_bits(_PI / 2, 26)                  # pi/2 = A + B + C, products of A and B with
PIO2_B = _round_bits(_PI / 2 - Fraction(PIO2_A), 26)   # numbers of up to 27 bits are exact
PIO2_C = _dbl(_PI / 2 - Fraction(PIO2_A) - Fraction(PIO2_B))
PIO4 = _dbl(_PI / 4)
PI_HI = _dbl(_PI)
PI_LO = _dbl(_PI - Fraction(PI_HI))
LOG10_2HI = _round_bits(_LN2 / _LN10, 42)     # k * LOG10_2HI is exact for |k| < 2**11
LOG10_2LO = _dbl(_LN2 / _LN10 - Fraction(LOG10_2HI))
IVLN10_HI = _round_bits(1 / _LN10, 32)         # exact times a 21-bit number
IVLN10_LO = _dbl(1 / _LN10 - Fraction(IVLN10_HI))
# atan's reduction points c = 0, 1/2, 1, 3/2, inf and atan(c) as hi + lo
_ATAN_C = [Fraction(0), _ATAN_HALF, _PI / 4, _ATAN_3_2, _PI / 2]
ATAN_HI = tuple(_dbl(v) for v in _ATAN_C)
ATAN_LO = tuple(_dbl(v - Fraction(_dbl(v))) for v in _ATAN_C)
_MAX_FINITE = {F64: 1.7976931348623157e308, F32: 3.4028234663852886e38}
SQRT_HALF_BITS = struct.unpack("<q", struct.pack("<d", math.sqrt(0.5)))[0]   # log reduces x to [sqrt(1/2), sqrt(2))


def _two_over_pi_words(n: int, step: int) -> tuple[int, ...]:
    """64-bit words of the bit string S = 64 zero bits followed by the bits of 2/pi after the binary point, word
    w starting at bit step*w of S: floor(2/pi * 2**(step*w - 1)) mod 2**64."""
    two_over_pi = (2 << (2 * _BITS)) * _PI.denominator // (_PI.numerator << _BITS)   # 2/pi * 2**_BITS
    return tuple(((two_over_pi >> (_BITS - k)) & (2**64 - 1)) if (k := step * w - 1) >= 0 else 0 for w in range(n))


_TWO_OVER_PI_64 = _two_over_pi_words(20, 64)   # float64: window offsets up to 1034, plus 192 + 64 bits
_TWO_OVER_PI_32 = _two_over_pi_words(8, 32)    # float32: overlapping words every 32 bits, offsets up to 168 + 96

# ---------------------------------------------------------------------------------------------------------------
# polynomial coefficients (lowest degree first): weighted minimax fits, Remez exchange in mpmath (60 digits),
# then rounded to float64. The comment gives the interval and the max weighted error of the fit.

# (e**r - 1 - r) / r**2 on |r| <= ln2/2 * (1 + 2**-20), weight r**2/e**r: 2**-57.9 (degree 9), 2**-34.2 (degree 5)
EXP64 = (0.5000000000000011, 0.16666666666666413, 0.041666666666530267, 0.008333333333494336,
         0.0013888888943598104, 0.00019841269506773378, 2.4801493135721496e-05, 2.7557586271858825e-06,
         2.7630234097737795e-07, 2.5000070639062143e-08)
EXP32 = (0.5000000067643002, 0.166666658694085, 0.04166629509185561, 0.008333497009989881, 0.0013944648724273443,
         0.0001979035169402563)
# (sin r - r) / r**3 as a polynomial in z = r*r, z <= (pi/4 * (1 + 2**-16))**2, weight r**3/sin r:
# 2**-57.9 (6 terms), 2**-37.5 (4 terms)
SIN64 = (-0.1666666666666663, 0.008333333333322116, -0.0001984126982958811, 2.755731362087253e-06,
         -2.5050747679844094e-08, 1.5896225198949297e-10)
SIN32 = (-0.16666666640793867, 0.008333329304472049, -0.0001983931214969548, 2.7181204805339328e-06)
# (cos r - 1 + z/2) / z**2 in z, same interval, weight z**2/cos r: 2**-64.0
COS64 = (0.041666666666666595, -0.0013888888888873054, 2.4801587288850132e-05, -2.755731417882985e-07,
         2.087570077692187e-09, -1.1358533073800587e-11)
# (cos r - 1) / z, weight z/cos r: 2**-33.9
COS32 = (-0.4999999969443755, 0.041666620352789466, -0.001388668151073919, 2.438355438724523e-05)
# T(z) = 2*(atanh(s)/s - 1)/z, z = s*s <= ((sqrt2-1)/(sqrt2+1) * (1 + 2**-20))**2, weight s*z/(2*atanh s):
# 2**-59.5 (7 terms), 2**-37.6 (4 terms)
LOG64 = (0.6666666666666734, 0.3999999999941637, 0.2857142874201673, 0.2222219861065022, 0.1818356241256796,
         0.15314098631299455, 0.14795477347278896)
LOG32 = (0.666666656486376, 0.4000033453657527, 0.28537346828306615, 0.2358147499050093)
# (tanh x - x) / x**3 in z = x*x, z <= (ln(3)/2 * (1 + 2**-20))**2, weight x**3/tanh x: 2**-60.6
TANH64 = (-0.333333333333333, 0.13333333333326777, -0.05396825396385402, 0.02186948838861152,
          -0.00886323264794817, 0.0035920925139862276, -0.0014555460484172345, 0.0005884580301474298,
          -0.00023341696124965696, 8.336851883739712e-05, -1.9527657906339818e-05)
# (atan(t) - t) / t**3 in z = t*t, |t| <= 7/16 * (1 + 2**-20), weight t**3/atan(t): 2**-57.7
# (benchmarks/design_polys.py)
ATAN64 = (-0.3333333333333292, 0.19999999999873674, -0.142857142722616, 0.11111110395067934, -0.09090886875686131,
          0.07691872242619252, -0.06661034143129331, 0.05833324124709539, -0.049759155957827116,
          0.036510317098051144, -0.016265562142035138)
TANH_SPLIT = 0.5493061443340548   # ln(3)/2: above it 2/(e**2x + 1) <= 1/2, so 1 - q loses at most one bit

# ---------------------------------------------------------------------------------------------------------------
# small builders


def _d(v: float) -> UOp: return UOp.const(F64, v)
def _u(v: int) -> UOp: return UOp.const(U64, v)
def _i(v: int) -> UOp: return UOp.const(I64, v)
# machine shifts (arg=True): the counts here are always in range, so NumPy's out-of-range rule need not guard them
def _shl(a: UOp, n) -> UOp: return UOp(Ops.SHL, a.dtype, (a, n if isinstance(n, UOp) else UOp.const(a.dtype, n)), True)
def _shr(a: UOp, n) -> UOp: return UOp(Ops.SHR, a.dtype, (a, n if isinstance(n, UOp) else UOp.const(a.dtype, n)), True)
def _div(a: UOp, b: UOp) -> UOp: return a.alu(Ops.FDIV, b)


def _poly(x: UOp, coeffs: tuple, horner: int = 0) -> UOp:
    """sum(c_i * x**i): the first `horner` terms by Horner's scheme, the rest by Estrin's (pairs c_2i +
    c_2i+1 * x, then the same in x*x). Estrin's dependency chain is log2(n) multiply-adds long instead of n, which
    matters in a loop whose iterations overlap only as far as the out-of-order window reaches; Horner's last
    steps round less (one rounding of c0 + x*(...) instead of two), which float64 results need. Coefficients may
    be floats or UOps (per-element coefficients). Where the CPU has FMA instructions, each multiply-add is one
    (an explicit FMA op: the same on both backends, and rounding once)."""
    fused = has_fma()

    def madd(a: UOp, b: UOp, c: UOp) -> UOp: return UOp(Ops.FMA, a.dtype, (a, b, c)) if fused else a * b + c
    cs = [c if isinstance(c, UOp) else _d(c) for c in coeffs]
    head, cs, y = cs[:horner], cs[horner:], x
    while len(cs) > 1:
        cs = [madd(cs[i + 1], y, cs[i]) if i + 1 < len(cs) else cs[i] for i in range(0, len(cs), 2)]
        if len(cs) > 1: y = y * y
    acc = cs[0]
    for c in reversed(head): acc = madd(acc, x, c)
    return acc


def _clamp(x: UOp, lo: float, hi: float) -> UOp:
    """x limited to [lo, hi]; NaN passes through (both comparisons are false)."""
    return (x < lo).where(_d(lo), (x > hi).where(_d(hi), x))


def _round(v: UOp) -> tuple[UOp, UOp]:
    """(round(v) as a double, as an int64) for |v| < 2**51."""
    t = v + MAGIC
    return t - MAGIC, t.bitcast(I64) - MAGIC_BITS


def _pow2(k: UOp) -> UOp:
    """2.0**k for an int64 -1022 <= k <= 1023, built from its exponent bits."""
    return _shl((k + 1023).bitcast(U64), 52).bitcast(F64)


def _ldexp(y: UOp, k: UOp) -> UOp:
    """y * 2**k for |k| <= 1100 as two exact power-of-two factors: the second multiplication is the only one that
    can round (into the denormals, or to inf)."""
    k1 = _shr(k, 1)
    return y * _pow2(k1) * _pow2(k - k1)


def _xor_sign(v: UOp, sign_bits: UOp) -> UOp:
    ut = U64 if v.dtype is F64 else U32
    return (v.bitcast(ut) ^ sign_bits).bitcast(v.dtype)


def _sign_of(x: UOp) -> UOp:
    ut, bit = (U64, 1 << 63) if x.dtype is F64 else (U32, 1 << 31)
    return x.bitcast(ut) & UOp.const(ut, bit)


# ---------------------------------------------------------------------------------------------------------------
# exp, exp2


def _exp_kernel64(hi: UOp, lo: UOp) -> tuple[UOp, UOp]:
    """e**(hi + lo) for |hi + lo| <= ln2/2 as an unevaluated sum (s, t), s = fl(1 + hi), |t| < 0.07: the error of
    the pair is about 2**-56 relative, so the final rounding of s + t dominates."""
    r = hi + lo
    p = r * r * _poly(r, EXP64, 2)
    s = _d(1.0) + hi
    return s, (hi - (s - 1.0)) + (lo + p)   # Fast2Sum: hi - (s - 1) is the rounding error of 1 + hi, exactly


def _exp64(x: UOp) -> UOp:
    # beyond [-746, 710] the result is 0 or inf anyway, and k stays within what _ldexp handles
    xc = _clamp(x, -746.0, 710.0)
    kf, k = _round(xc * INV_LN2)
    s, t = _exp_kernel64(xc - kf * LN2_HI, kf * -LN2_LO)
    return _ldexp(s + t, k)


def _exp2_64(x: UOp) -> UOp:
    xc = _clamp(x, -1080.0, 1030.0)
    kf, k = _round(xc)
    f = xc - kf                                                       # exact, |f| <= 1/2
    fh = (f.bitcast(U64) & _u(~(2**27 - 1) & (2**64 - 1))).bitcast(F64)   # top 26 significant bits of f
    fl = f - fh
    s, t = _exp_kernel64(fh * L2A, fl * L2A + f * L2B)                # f*ln2 as a double-double
    return _ldexp(s + t, k)


def _expm1_kernel32(r: UOp) -> UOp:
    """e**r - 1 for |r| <= ln2/2, relative error about 2**-34 (for results rounded to float32)."""
    return r + r * r * _poly(r, EXP32)


def _f(v: float) -> UOp: return UOp.const(F32, v)


def _pow2_32(k: UOp) -> UOp:
    """2.0**k as a float32 for an int32 -126 <= k <= 127, built from its exponent bits."""
    return _shl((k + 127).bitcast(U32), 23).bitcast(F32)


def _exp32(x: UOp) -> UOp:
    """float32 exp in float32 arithmetic (16 lanes per AVX-512 vector, where float64 would give 8): at most 0.99 ulp
    from the exact result (0.5 for the float64 route, at twice the cost; exp dominates softmax)."""
    xc = (x < -104.0).where(_f(-104.0), (x > 89.0).where(_f(89.0), x))   # 0 below -103.98, inf above 88.73
    t = xc * _f(INV_LN2) + _f(MAGIC32)
    kf = t - _f(MAGIC32)                                                  # round(x / ln2), |k| <= 150
    k = t.bitcast(I32) - UOp.const(I32, MAGIC32_BITS)
    r = (xc - kf * _f(LN2_HI32)) - kf * _f(LN2_LO32)                     # k * LN2_HI32 exact: 16-bit constant
    y = _f(1.0) + (r + r * r * _poly(r, tuple(_f(c) for c in EXP32)))
    k1 = _shr(k, 1)
    return y * _pow2_32(k1) * _pow2_32(k - k1)   # two exact factors: overflow gives inf, tiny results denormals


def _exp2_32(x: UOp) -> UOp:
    xc = _clamp(x.cast(F64), -151.0, 129.0)
    kf, k = _round(xc)
    y = _d(1.0) + _expm1_kernel32((xc - kf) * LN2)
    return (y * _pow2(k)).cast(F32)


# ---------------------------------------------------------------------------------------------------------------
# log, log2


def _log_reduce(x: UOp, denormals: bool) -> tuple[UOp, UOp, UOp]:
    """(k as a double, f, s): x = 2**k * (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), s = f / (2 + f)."""
    if denormals:   # scale denormals into the normal range first
        tiny = x < 2.0**-1022
        x = tiny.where(x * 2.0**54, x)
    bits = x.bitcast(I64)
    tmp = bits - SQRT_HALF_BITS
    k = _shr(tmp, 52)
    if denormals: k = k + tiny.where(_i(-54), _i(0))
    m = ((tmp & _i(2**52 - 1)) + SQRT_HALF_BITS).bitcast(F64)
    f = m - 1.0                                                       # exact (Sterbenz)
    return k.cast(F64), f, _div(f, f + 2.0)


def _log_special(x: UOp, y: UOp) -> UOp:
    """log of 0 is -inf, of negatives NaN, of inf inf, of NaN NaN; y elsewhere."""
    dt = x.dtype
    inf, nan = UOp.const(dt, math.inf), UOp.const(dt, math.nan)
    ok = (x > 0.0) & (x < math.inf)
    return ok.where(y, x.eq(0.0).where(-inf, x.eq(math.inf).where(inf, nan)))


def _log64(x: UOp) -> UOp:
    kf, f, s = _log_reduce(x, True)
    hfsq = 0.5 * f * f
    z = s * s
    r = z * _poly(z, LOG64, 2)
    # log(1+f) = 2s + s*R = f - hfsq + s*(hfsq + R); k*LN2_HI is exact, the small terms are added first
    y = kf * LN2_HI - ((hfsq - (s * (hfsq + r) + kf * LN2_LO)) - f)
    return _log_special(x, y)


def _log2_64(x: UOp) -> UOp:
    kf, f, s = _log_reduce(x, True)
    hfsq = 0.5 * f * f
    z = s * s
    r = z * _poly(z, LOG64, 2)
    hi = f - hfsq
    hi = (hi.bitcast(U64) & _u(0xFFFFFFFF00000000)).bitcast(F64)     # 21 significant bits
    lo = ((f - hi) - hfsq) + s * (hfsq + r)                           # hi + lo = log(1+f), f - hi exact
    vhi = hi * IVLN2_HI                                               # exact
    vlo = (lo + hi) * IVLN2_LO + lo * IVLN2_HI
    w = kf + vhi
    vlo = vlo + ((kf - w) + vhi)                                      # Fast2Sum: |k| >= 1 > |vhi| or k == 0
    return _log_special(x, vlo + w)


def _log1p_32(x: UOp) -> tuple[UOp, UOp]:
    """(k, log(1 + f)) in float64 for a float32 x > 0 (float32 denormals are normal doubles)."""
    kf, f, s = _log_reduce(x.cast(F64), False)
    z = s * s
    return kf, s * 2.0 + s * z * _poly(z, LOG32)


def _log32(x: UOp) -> UOp:
    kf, l1p = _log1p_32(x)
    return _log_special(x, (kf * LN2 + l1p).cast(F32))


def _log2_32(x: UOp) -> UOp:
    kf, l1p = _log1p_32(x)
    return _log_special(x, (kf + l1p * INV_LN2).cast(F32))   # f = 0 at powers of two: exactly k


# ---------------------------------------------------------------------------------------------------------------
# argument reduction for sin, cos, tan: Payne-Hanek in 64-bit integers

M32 = 0xFFFFFFFF


def _select_words(words: tuple[int, ...], idx: UOp, nout: int) -> list[UOp]:
    """words[idx : idx + nout] for a per-element index idx <= len(words) - nout: a barrel shifter of WHERE selects
    between constants (shift by 2**b words if bit b of idx is set, highest bit first)."""
    cur: list[UOp] = [_u(w) for w in words]
    for b in reversed(range(max(1, (len(words) - nout).bit_length()))):
        step, bit = 1 << b, (idx & _u(1 << b)).ne(0)
        cur = [bit.where(cur[i + step], cur[i]) if i + step < len(cur) else cur[i] for i in range(nout + step - 1)]
    return cur[:nout]


def _window(words: list[UOp], sh: UOp) -> list[UOp]:
    """The 64-bit words of (words as one big-endian number) << sh, 0 <= sh < 64, dropping the last word."""
    inv = sh ^ _u(63)     # 63 - sh (a subtraction would be canonicalized to sh * -1 + 63)
    return [_shl(words[i], sh) | _shr(_shr(words[i + 1], 1), inv) for i in range(len(words) - 1)]


def _mul_53x64(m: UOp, w: UOp) -> tuple[UOp, UOp]:
    """(high, low) 64-bit halves of m * w for m < 2**53, by 32-bit limbs (each partial product fits in 64 bits)."""
    m0, m1 = m & _u(M32), _shr(m, 32)
    w0, w1 = w & _u(M32), _shr(w, 32)
    ll = m0 * w0
    t = m0 * w1 + _shr(ll, 32)            # < 2**64
    u = (t & _u(M32)) + m1 * w0           # < 2**54
    return m1 * w1 + _shr(t, 32) + _shr(u, 32), _shl(u, 32) | (ll & _u(M32))


def _split(v: UOp) -> tuple[UOp, UOp]:
    """v = hi + lo exactly, hi with 26 significant bits and lo with at most 27 (masking the bits, unlike Veltkamp's
    split, cannot be upset by a fused multiply-add)."""
    hi = (v.bitcast(U64) & _u(~(2**27 - 1) & (2**64 - 1))).bitcast(F64)
    return hi, v - hi


def _reduce64(ax: UOp) -> tuple[UOp, UOp, UOp]:
    """ax >= pi/4 (finite) as q*pi/2 + (rh + rl), |rh + rl| <= pi/4 (double-double), q in 0..3 (uint64).

    ax = m * 2**(e - 1075). Bits of 2/pi of weight 2**-j with j < e - 1076 give multiples of 4 (dropped), so the
    192-bit window W of 2/pi starting at j0 = e - 1076 gives ax * 2/pi = (m * W mod 2**192) * 2**-190 (mod 4),
    up to the window's tail, < 2**-137. The fraction keeps 126 bits: enough for the closest double to a multiple
    of pi/2 (about 2**-61 away) to keep full precision."""
    bits = ax.bitcast(U64)
    e = _shr(bits, 52)
    m = (bits & _u(2**52 - 1)) | _u(1 << 52)
    o = e - 1012                                    # bit offset j0 + 64 of the window in _TWO_OVER_PI_64
    a = _select_words(_TWO_OVER_PI_64, _shr(o, 6), 4)
    w0, w1, w2 = _window(a, o & _u(63))
    h1, l1 = _mul_53x64(m, w1)
    h2, _ = _mul_53x64(m, w2)
    p1 = l1 + h2
    p2 = m * w0 + h1 + (p1 < l1).cast(U64)         # carry out of p1
    # top 2 bits of p2:p1 are the quadrant, the other 126 the fraction: as a signed number, [-1/2, 1/2)
    fh = _shl(p2, 2) | _shr(p1, 62)
    fl = _shl(p1, 2)
    q = (_shr(p2, 62) + _shr(fh, 63)) & _u(3)
    # fraction fh*2**-64 + fl*2**-128 as a double-double: three exact conversions (52, 52 and 24 bits)
    d1 = _shr(fh.bitcast(I64), 12).cast(F64) * 2.0**-52
    d2 = (_shl(fh & _u(0xFFF), 40) | _shr(fl, 24)).bitcast(I64).cast(F64) * 2.0**-104
    d3 = (fl & _u(0xFFFFFF)).bitcast(I64).cast(F64) * 2.0**-128
    hi = d1 + d2
    lo = ((d1 - hi) + d2) + d3                      # Fast2Sum: |d1| >= d2 unless d1 == 0
    # times pi/2 in double-double: every product that matters is exact (26-bit pieces), so the result does not
    # depend on whether a backend fuses multiply-adds
    hh, hl = _split(hi)
    a = hh * PIO2_A
    b = hh * PIO2_B + hl * PIO2_A
    rh = a + b
    return rh, ((a - rh) + b) + (hl * PIO2_B + (hi * PIO2_C + lo * PIO2_HI)), q


def _reduce32(ax: UOp) -> tuple[UOp, UOp]:
    """float32 ax >= pi/4 (finite) as q*pi/2 + r, r a double, q in 0..3 (uint64). As _reduce64 with a 96-bit
    window: ax = m * 2**(e - 150), window from j0 = e - 151, so ax * 2/pi = (m * W mod 2**96) * 2**-94 (mod 4)
    and the top 64 bits of that product keep the fraction to 2**-62. The float32 closest to a multiple of pi/2,
    16367173 * 2**72, is 2**-29.9 away in these units (found by trying every float32), so r keeps 32 bits."""
    bits = ax.bitcast(U32).cast(U64)
    e = _shr(bits, 23)
    m = (bits & _u(2**23 - 1)) | _u(1 << 23)
    o = e - 87                                      # bit offset j0 + 64 of the window in S, 39..168
    q32, sh = _shr(o, 5), o & _u(31)
    # whi = S[o, o+64) and wlo = S[o+64, o+96) from the overlapping words H[q32] and H[q32 + 2], q32 in 1..5
    words = _TWO_OVER_PI_32
    h0, h2 = _u(words[5]), _u(words[7])
    for t in reversed(range(1, 5)):
        pick = q32.eq(t)
        h0, h2 = pick.where(_u(words[t]), h0), pick.where(_u(words[t + 2]), h2)
    whi = _shl(h0, sh) | _shr(_shr(h2, 1), sh ^ _u(63))
    wlo = _shr(_shl(h2, sh), 32)
    # top 64 bits of m * (whi * 2**32 + wlo) mod 2**96, m < 2**24: three 24x32-bit products
    p = m * (whi & _u(M32)) + _shl(m * _shr(whi, 32), 32) + _shr(m * wlo, 32)
    q = (_shr(p, 62) + (_shr(p, 61) & _u(1))) & _u(3)   # the quadrant, rounded to the nearest
    fh = _shl(p, 2).bitcast(I64)                    # the fraction in [-1/2, 1/2) times 2**64
    return fh.cast(F64) * (PIO2_HI * 2.0**-64), q


# ---------------------------------------------------------------------------------------------------------------
# sin, cos, tan


def _sincos64(rh: UOp, rl: UOp) -> tuple[tuple[UOp, UOp], tuple[UOp, UOp]]:
    """sin and cos of rh + rl, |rh + rl| <= pi/4, rl tiny (first order in rl), each as an unevaluated sum of a
    leading term and a small tail."""
    z = rh * rh
    s_tail = rl * (1.0 - 0.5 * z) + z * rh * _poly(z, SIN64, 2)
    # cos = 1 - z/2 + ...: the rounding errors of z = rh*rh and of 1 - z/2 are both kept (z/2 is up to 0.31)
    a, b = _split(rh)
    zl = ((a * a - z) + 2.0 * a * b) + b * b    # a*a - z is exact (Sterbenz), the rest is tiny
    hz = 0.5 * z
    w = _d(1.0) - hz
    c_tail = ((1.0 - w) - hz) + (z * z * _poly(z, COS64, 2) - (rh * rl + 0.5 * zl))
    return (rh, s_tail), (w, c_tail)


def _div_dd(nh: UOp, nl: UOp, dh: UOp, dl: UOp) -> UOp:
    """(nh + nl) / (dh + dl) correctly to about 2**-100 before the final rounding: q = n * (1/d), then one
    Newton correction with the exact residual n - q*d (products of 26-bit pieces, exact)."""
    n = nh + nl
    nl = (nh - n) + nl
    d = dh + dl
    dl = (dh - d) + dl
    inv = _div(_d(1.0), d)
    q = n * inv
    qh, ql = _split(q)
    d1, d2 = _split(d)
    res = ((((n - qh * d1) - qh * d2) - ql * d1) - ql * d2) + (nl - q * dl)
    return q + res * inv


def _sincos32(r: UOp) -> tuple[UOp, UOp]:
    z = r * r
    return r + r * z * _poly(z, SIN32), _d(1.0) + z * _poly(z, COS32)


def _sin_or_cos32(r: UOp, use_cos: UOp) -> UOp:
    """sin(r), or cos(r) where use_cos: both have the form a + a*z*P(z) (a = r or 1), so one polynomial with
    coefficients selected per element does for both."""
    z = r * r
    a = use_cos.where(_d(1.0), r)
    return a + a * z * _poly(z, tuple(use_cos.where(_d(cc), _d(cs)) for cs, cc in zip(SIN32, COS32)))


def _trig(x: UOp, fn: Ops) -> UOp:
    """SIN/COS/TAN of float32 or float64 x: reduce |x| to r + q*pi/2, pick sin or cos of r by the quadrant,
    then the sign from the quadrant (and from x for the odd functions)."""
    is64 = x.dtype is F64
    ax = x.alu(Ops.ABS)
    axd = ax if is64 else ax.cast(F64)
    small = axd < PIO4                          # no reduction below pi/4
    if is64: rh, rl, q = _reduce64(ax)
    else: rh, q = _reduce32(ax)
    rh, q = small.where(axd, rh), small.where(_u(0), q)
    odd = (q & _u(1)).ne(0)
    if is64:
        (sh, st), (ch, ct) = _sincos64(rh, small.where(_d(0.0), rl))
        if fn is Ops.SIN: v = odd.where(ch + ct, sh + st)
        elif fn is Ops.COS: v = odd.where(sh + st, ch + ct)
        else: v = _div_dd(odd.where(ch, sh), odd.where(ct, st), odd.where(sh, ch), odd.where(st, ct))  # -c/s odd
    elif fn is Ops.TAN:
        s, c = _sincos32(rh)
        v = _div(odd.where(c, s), odd.where(s, c))
    else: v = _sin_or_cos32(rh, odd if fn is Ops.SIN else (q & _u(1)).eq(0))
    # sin(r + q*pi/2) is negative for q = 2, 3; cos(r + q*pi/2) for q = 1, 2; tan for odd q
    neg = {Ops.SIN: q & _u(2), Ops.COS: (q + 1) & _u(2), Ops.TAN: _shl(q & _u(1), 1)}[fn]
    if is64: v = _xor_sign(v, _shl(neg, 62))
    else: v = _xor_sign(v.cast(F32), _shl(neg.cast(U32), 30))
    if fn is not Ops.COS: v = _xor_sign(v, _sign_of(x))                 # sin and tan are odd
    # inf and NaN give NaN (the reduction's result is meaningless there)
    return (ax <= _MAX_FINITE[x.dtype]).where(v, UOp.const(x.dtype, math.nan))


# ---------------------------------------------------------------------------------------------------------------
# tanh


def _tanh64(x: UOp) -> UOp:
    ax = x.alu(Ops.ABS)
    z = ax * ax
    near0 = ax + ax * z * _poly(z, TANH64, 2)
    # 1 - 2/(E + 1), E = e**(2|x|) as a double-double (2|x| <= 40 is where tanh rounds to 1 anyway)
    y = _clamp(ax * 2.0, 0.0, 40.0)
    kf, k = _round(y * INV_LN2)
    s, t = _exp_kernel64(y - kf * LN2_HI, kf * -LN2_LO)
    scale = _pow2(k)
    e = s + t
    eh, el = e * scale, ((s - e) + t) * scale  # exact scaling by 2**k, k <= 58
    dh = eh + 1.0
    dl = (_d(1.0) - (dh - eh)) + el             # Fast2Sum, eh >= 1
    q = _div(_d(2.0), dh)
    ql = q * q * -0.5 * dl                      # 2/(dh + dl) = q - q*q/2*dl to first order
    w = _d(1.0) - q
    far = w + (((1.0 - w) - q) - ql)
    return _xor_sign((ax < TANH_SPLIT).where(near0, far), _sign_of(x))


def _tanh32(x: UOp) -> UOp:
    ax = x.alu(Ops.ABS)
    y = _clamp(ax.cast(F64) * 2.0, 0.0, 40.0)
    kf, k = _round(y * INV_LN2)
    scale = _pow2(k)
    em1 = (scale - 1.0) + scale * _expm1_kernel32(y - kf * LN2)   # e**y - 1, no cancellation for k >= 0
    return _xor_sign(_div(em1, em1 + 2.0).cast(F32), _sign_of(x))


# ---------------------------------------------------------------------------------------------------------------
# expm1, log1p, log10: the exp and log kernels with their extra precision kept


def _expm1_64(x: UOp) -> UOp:
    """e**x - 1 = 2**k * (s + t) - 1 from the exp kernel: 2**k * s is exact, so the only cancellation (k = 0, -1)
    is an exact subtraction. Beyond k = 1000 the 1 does not matter and 2**k is applied as two factors."""
    xc = _clamp(x, -60.0, 710.0)            # below -60 the result rounds to -1, above 709.8 it is inf
    kf, k = _round(xc * INV_LN2)
    s, t = _exp_kernel64(xc - kf * LN2_HI, kf * -LN2_LO)
    big = k > 1000
    u = _pow2(big.where(_i(0), k))
    y = big.where(_ldexp(s + t, k), (u * s - 1.0) + u * t)
    return x.eq(0.0).where(x, y)             # -0.0 stays -0.0


def _log1p64(x: UOp) -> UOp:
    """log(1 + x) = log(u) + c/u with u = fl(1 + x) and c = (1 + x) - u exactly (TwoSum)."""
    u = x + 1.0
    b = u - 1.0
    c = (_d(1.0) - (u - b)) + (x - b)
    y = _log64(u)
    fine = (u > 0.0) & (u < math.inf)
    return x.eq(0.0).where(x, fine.where(y + _div(c, u), y))


def _log10_64(x: UOp) -> UOp:
    """As log2: log(1 + f) as hi + lo with hi of 21 bits, times 1/ln 10 in two parts, plus k * log10(2)."""
    kf, f, s = _log_reduce(x, True)
    hfsq = 0.5 * f * f
    z = s * s
    r = z * _poly(z, LOG64, 2)
    hi = f - hfsq
    hi = (hi.bitcast(U64) & _u(0xFFFFFFFF00000000)).bitcast(F64)
    lo = ((f - hi) - hfsq) + s * (hfsq + r)
    vhi = hi * IVLN10_HI                                              # exact
    y2 = kf * LOG10_2HI                                               # exact
    vlo = kf * LOG10_2LO + (lo + hi) * IVLN10_LO + lo * IVLN10_HI
    w = y2 + vhi
    vlo = vlo + ((y2 - w) + vhi)                                      # Fast2Sum: |y2| >= |vhi| or y2 == 0
    return _log_special(x, vlo + w)


# ---------------------------------------------------------------------------------------------------------------
# hyperbolic functions and their inverses, from exp, expm1, log and log1p (float64)


def _half_exp64(ax: UOp) -> UOp:
    """e**ax / 2 for ax >= 0 without overflow before the result itself overflows (2**(k-1) as two factors)."""
    axc = _clamp(ax, 0.0, 711.0)
    kf, k = _round(axc * INV_LN2)
    s, t = _exp_kernel64(axc - kf * LN2_HI, kf * -LN2_LO)
    return _ldexp(s + t, k - 1)


def _sinh64(x: UOp) -> UOp:
    ax = x.alu(Ops.ABS)
    e = _expm1_64(_clamp(ax, 0.0, 22.0))
    near = 0.5 * (e + _div(e, e + 1.0))           # (e**x - e**-x)/2 without cancellation
    return _xor_sign((ax < 22.0).where(near, _half_exp64(ax)), _sign_of(x))


def _cosh64(x: UOp) -> UOp:
    ax = x.alu(Ops.ABS)
    e = _expm1_64(_clamp(ax, 0.0, 1.0))
    near = 1.0 + _div(e * e, (e + 1.0) * 2.0)     # 1 + (e**x - 1)**2 / (2 e**x)
    h = _half_exp64(ax)
    mid = h + _div(_d(0.25), h)
    return (ax < 0.3465735902799727).where(near, (ax < 22.0).where(mid, h))   # ln(2)/2


def _asinh64(x: UOp) -> UOp:
    ax = x.alu(Ops.ABS)
    z = ax * ax
    big = _log64(ax) + LN2
    mid = _log64(ax * 2.0 + _div(_d(1.0), (z + 1.0).alu(Ops.SQRT) + ax))
    near = _log1p64(ax + _div(z, (z + 1.0).alu(Ops.SQRT) + 1.0))
    return _xor_sign((ax > 2.0**28).where(big, (ax > 2.0).where(mid, near)), _sign_of(x))


def _acosh64(x: UOp) -> UOp:
    big = _log64(x) + LN2
    mid = _log64(x * 2.0 - _div(_d(1.0), x + (x * x - 1.0).alu(Ops.SQRT)))
    t = x - 1.0
    near = _log1p64(t + (t * 2.0 + t * t).alu(Ops.SQRT))
    return (x < 1.0).where(_d(math.nan), (x > 2.0**28).where(big, (x > 2.0).where(mid, near)))


def _atanh64(x: UOp) -> UOp:
    ax = x.alu(Ops.ABS)
    a2 = ax * 2.0
    near = _log1p64(a2 + _div(a2 * ax, _d(1.0) - ax))
    far = _log1p64(_div(a2, _d(1.0) - ax))
    return _xor_sign(0.5 * (ax < 0.5).where(near, far), _sign_of(x))


# ---------------------------------------------------------------------------------------------------------------
# atan, atan2, asin, acos (float64)


def _atan_ratio(num: UOp, den: UOp) -> UOp:
    """atan(num / den) for num, den >= 0 (the quotient may be inf; NaN gives NaN). The quotient a is reduced by
    atan(a) = atan(c) + atan((a - c) / (1 + a c)) with c in (0, 1/2, 1, 3/2, inf) to |t| <= 7/16, where an odd
    polynomial of degree 23 gives atan(t); atan(c) is added as hi + lo."""
    a = _div(num, den)
    ids = [a < 0.4375, a < 0.6875, a < 1.1875, a < 2.4375]   # 7/16, 11/16, 19/16, 39/16
    tops = [a, a * 2.0 - 1.0, a - 1.0, a - 1.5, _d(-1.0)]
    bottoms = [_d(1.0), a + 2.0, a + 1.0, a * 1.5 + 1.0, a]
    num_t, den_t, chi, clo = tops[4], bottoms[4], _d(ATAN_HI[4]), _d(ATAN_LO[4])
    for i in reversed(range(4)):
        num_t, den_t = ids[i].where(tops[i], num_t), ids[i].where(bottoms[i], den_t)
        chi, clo = ids[i].where(_d(ATAN_HI[i]), chi), ids[i].where(_d(ATAN_LO[i]), clo)
    t = _div(num_t, den_t)
    z = t * t
    p = t * z * _poly(z, ATAN64, 2)
    return chi + ((p + clo) + t)


def _atan64(x: UOp) -> UOp:
    return _xor_sign(_atan_ratio(x.alu(Ops.ABS), _d(1.0)), _sign_of(x))


def _atan2_64(y: UOp, x: UOp) -> UOp:
    """The angle of (x, y): atan(|y| / |x|) in [0, pi/2], reflected to pi - a for x < 0 (or -0), with y's sign.
    Two infinities count as equal, two zeros give 0 (then pi for a negative x), as C99 and NumPy have them."""
    ay, ax = y.alu(Ops.ABS), x.alu(Ops.ABS)
    both_inf = ay.eq(math.inf) & ax.eq(math.inf)
    both_zero = ay.eq(0.0) & ax.eq(0.0)
    num = both_inf.where(_d(1.0), ay)
    den = (both_inf | both_zero).where(_d(1.0), ax)
    a = _atan_ratio(num, den)
    a = _sign_of(x).ne(0).where(_d(PI_HI) - (a - PI_LO), a)
    a = (ax.eq(0.0) & (ay > 0.0)).where(_d(math.pi / 2), a)   # x = -0: pi/2 itself, not pi - pi/2 (an ulp high)
    return _xor_sign(a, _sign_of(y))


def _asin64(x: UOp) -> UOp:
    return _atan2_64(x, ((_d(1.0) - x) * (x + 1.0)).alu(Ops.SQRT))    # (1 - x)(1 + x): no cancellation near 1


def _acos64(x: UOp) -> UOp:
    # acos x = 2 atan(sqrt((1 - x) / (1 + x))): small results near x = 1 keep their relative accuracy
    return _atan_ratio(_div(_d(1.0) - x, x + 1.0).alu(Ops.SQRT), _d(1.0)) * 2.0


# ---------------------------------------------------------------------------------------------------------------
# cbrt, hypot (float64)

CBRT_BITS = round((1023 - 1023 / 3 - 0.0330) * 2**52)   # bits / 3 + this: 2**(e/3) within 3.3%


def _cbrt64(x: UOp) -> UOp:
    """An estimate from the bits (the exponent divided by 3), two Halley steps (3.3% -> 2**-15 -> 2**-44), the
    estimate cut to 21 bits so that t*t is exact, and a last Halley step in a form that rounds little."""
    ax = x.alu(Ops.ABS)
    tiny = ax < 2.0**-1022
    a = tiny.where(ax * 2.0**54, ax)                              # denormals scaled: the root by 2**18
    t = (UOp(Ops.IDIV, U64, (a.bitcast(U64), _u(3))) + CBRT_BITS).bitcast(F64)
    for _ in range(2):
        q = _div(t, a) * t * t                                    # t**3 / a, without overflow
        t = t * _div(q + 2.0, q * 2.0 + 1.0)
    t = (t.bitcast(U64) & _u(~(2**32 - 1) & (2**64 - 1))).bitcast(F64)
    r = _div(a, t * t)                                            # t * t exact
    r = _div(r - t, t * 2.0 + r)
    t = t + t * r
    t = tiny.where(t * 2.0**-18, t)
    special = ax.eq(0.0) | (ax < math.inf).ne(True)               # 0, inf, NaN
    return special.where(x, _xor_sign(t, _sign_of(x)))


def _hypot64(x: UOp, y: UOp) -> UOp:
    """sqrt(a*a + b*b) with both scaled by a power of two when the larger is huge or tiny (no overflow, no
    underflow that matters); an infinity wins over NaN, as in C99."""
    ax, ay = x.alu(Ops.ABS), y.alu(Ops.ABS)
    a, b = ax.maximum(ay), ax.minimum(ay)
    scale = (a > 2.0**500).where(_d(2.0**-600), (a < 2.0**-500).where(_d(2.0**600), _d(1.0)))
    a, b = a * scale, b * scale
    h = _div((a * a + b * b).alu(Ops.SQRT), scale)
    return (ax.eq(math.inf) | ay.eq(math.inf)).where(_d(math.inf), h)


def _via64(fn):
    """A float32 function computed by its float64 kernel and rounded once."""
    return lambda *xs: fn(*(v.cast(F64) for v in xs)).cast(F32)


def _hypot32(x: UOp, y: UOp) -> UOp:
    xd, yd = x.cast(F64), y.cast(F64)                             # squares of float32 values cannot overflow here
    h = (xd * xd + yd * yd).alu(Ops.SQRT)
    inf = xd.alu(Ops.ABS).eq(math.inf) | yd.alu(Ops.ABS).eq(math.inf)
    return inf.where(_d(math.inf), h).cast(F32)


# ---------------------------------------------------------------------------------------------------------------
# the rules

_IMPL: dict[Ops, tuple[Callable[..., UOp], Callable[..., UOp]]] = {
    Ops.EXP: (_exp64, _exp32), Ops.EXP2: (_exp2_64, _exp2_32), Ops.LOG: (_log64, _log32),
    Ops.LOG2: (_log2_64, _log2_32), Ops.TANH: (_tanh64, _tanh32),
    Ops.SIN: (lambda x: _trig(x, Ops.SIN),) * 2, Ops.COS: (lambda x: _trig(x, Ops.COS),) * 2,
    Ops.TAN: (lambda x: _trig(x, Ops.TAN),) * 2,
    Ops.EXPM1: (_expm1_64, _via64(_expm1_64)), Ops.LOG1P: (_log1p64, _via64(_log1p64)),
    Ops.LOG10: (_log10_64, _via64(_log10_64)), Ops.SINH: (_sinh64, _via64(_sinh64)),
    Ops.COSH: (_cosh64, _via64(_cosh64)), Ops.ASINH: (_asinh64, _via64(_asinh64)),
    Ops.ACOSH: (_acosh64, _via64(_acosh64)), Ops.ATANH: (_atanh64, _via64(_atanh64)),
    Ops.ATAN: (_atan64, _via64(_atan64)), Ops.ASIN: (_asin64, _via64(_asin64)), Ops.ACOS: (_acos64, _via64(_acos64)),
    Ops.CBRT: (_cbrt64, _via64(_cbrt64)), Ops.ATAN2: (_atan2_64, _via64(_atan2_64)), Ops.HYPOT: (_hypot64, _hypot32),
}


def _approximation(impl64: Callable[..., UOp], impl32: Callable[..., UOp]) -> Callable[[UOp], UOp | None]:
    def rule(x: UOp) -> UOp | None:
        """The polynomial form of one transcendental op on float32 or float64 (constants are left to constant
        folding, which uses NumPy)."""
        if all(a.op is Ops.CONST for a in x.src) or any(a.dtype is not x.dtype for a in x.src): return None
        return impl64(*x.src) if x.dtype is F64 else impl32(*x.src)
    return rule


def _register_approximations() -> None:
    """Each op's polynomial form, in the table of primitives (numfn.ir.primitives, slot `approximate`)."""
    for op, (impl64, impl32) in _IMPL.items(): register(op, "approximate", _approximation(impl64, impl32))


_register_approximations()


def _rewrite(x: UOp) -> UOp | None:
    rule = PRIMITIVES[x.op].approximate
    return None if rule is None else rule(x)


# the ops with a polynomial form, as the table has them
transcendental = PatternMatcher([(UPat(ops_where(lambda p: p.approximate is not None), (F32, F64), name="x"),
                                  _rewrite)])
