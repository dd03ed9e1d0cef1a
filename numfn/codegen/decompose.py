"""NumPy semantics in machine terms: rules that rewrite the ops whose NumPy meaning differs from the machine's
into ops every backend renders the same way.

After these rules a backend only needs: + - * / (float), IDIV / IMOD (C truncation, divisor never 0 or -1),
FMOD, comparisons (float ones false on NaN except !=), WHERE, AND / OR / XOR / SHL / SHR, NEG, MAX / MIN (on
floats NaN-propagating like np.maximum: backends have fast instructions for that, which a select chain would
hide from their vectorizers), CAST between types where the value is representable (plus bool and int->float),
BITCAST, and the float functions SQRT, ABS, FLOOR, CEIL, TRUNC, RINT, EXP, EXP2, LOG, LOG2, SIN, COS, TAN, TANH, POW
and the other math functions of the unary and binary op sets (ASIN ... HYPOT: libm calls, or polynomials).
"""
from __future__ import annotations

from numfn.dtype import DType, dtypes
from numfn.ir.primitives import register
from numfn.ir.uop import ALU, Ops, PatternMatcher, UOp, UPat


def c(dtype: DType, value) -> UOp:
    return UOp.const(dtype, value)


def _bool_arith(x: UOp) -> UOp | None:
    # NumPy: bool + bool is logical or, bool * bool logical and (and max/min the same)
    if not x.dtype.is_bool or not x.src[0].dtype.is_bool: return None
    op = {Ops.ADD: Ops.OR, Ops.MAX: Ops.OR, Ops.MUL: Ops.AND, Ops.MIN: Ops.AND}[x.op]
    return x.src[0].alu(op, x.src[1])


def _int_abs(x: UOp) -> UOp | None:
    a = x.src[0]
    if not a.dtype.is_int: return None
    return a if a.dtype.is_unsigned else (a < c(a.dtype, 0)).where(-a, a)


def _not(x: UOp) -> UOp:
    a = x.src[0]
    return a ^ c(a.dtype, True if a.dtype.is_bool else -1)


def _int_floordiv(x: UOp) -> UOp | None:
    a, b = x.src
    dt = a.dtype
    if not dt.is_int: return None
    if b.op is Ops.CONST and b.arg > 0:
        q = a // b
        if dt.is_unsigned or a.vmin >= 0: return q
        return ((a % b).ne(0) & (a < c(dt, 0))).where(q - 1, q)
    zero = b.eq(0)
    if dt.is_unsigned: return zero.where(c(dt, 0), a // zero.where(c(dt, 1), b))
    bad = zero | b.eq(-1)
    sb = bad.where(c(dt, 1), b)
    q, r = a // sb, a % sb
    q = (r.ne(0) & (r < c(dt, 0)).ne(b < c(dt, 0))).where(q - 1, q)
    return zero.where(c(dt, 0), b.eq(-1).where(-a, q))   # NumPy: x // 0 == 0, MIN // -1 wraps to MIN


def _int_mod(x: UOp) -> UOp | None:
    a, b = x.src
    dt = a.dtype
    if not dt.is_int: return None
    if b.op is Ops.CONST and b.arg > 0:
        r = a % b
        if dt.is_unsigned or a.vmin >= 0: return r
        return (r < c(dt, 0)).where(r + b, r)
    zero = b.eq(0)
    if dt.is_unsigned: return zero.where(c(dt, 0), a % zero.where(c(dt, 1), b))
    bad = zero | b.eq(-1)
    r = a % bad.where(c(dt, 1), b)
    r = (r.ne(0) & (r < c(dt, 0)).ne(b < c(dt, 0))).where(r + b, r)
    return bad.where(c(dt, 0), r)


def _mixed_sign_compare(x: UOp) -> UOp | None:
    """NumPy compares int64 with uint64 exactly (its 'qQ->?' loops): a negative signed operand is below every
    unsigned value; otherwise both compare as unsigned."""
    a, b = x.src
    if a.dtype is b.dtype or not (a.dtype.is_int and b.dtype.is_int): return None
    op = x.op
    if a.dtype.is_unsigned:   # unsigned a, signed b
        b_neg = b < c(b.dtype, 0)
        same = a.alu(op, UOp(Ops.CAST, a.dtype, (b,)))
        return (b_neg | same) if op is Ops.CMPNE else (b_neg.ne(True) & same)
    a_neg = a < c(a.dtype, 0)
    same = UOp(Ops.CAST, b.dtype, (a,)).alu(op, b)
    if op in (Ops.CMPLT, Ops.CMPLE, Ops.CMPNE): return a_neg | same
    return a_neg.ne(True) & same


def _shift(x: UOp) -> UOp | None:
    """NumPy's shifts: a count outside [0, bits) (negative counts included) shifts everything out: 0, or -1 for
    a negative value shifted right. The machine's shift is used with a count clamped into range."""
    a, b = x.src
    if b.op is Ops.CONST and 0 <= b.arg < a.dtype.bits: return x.replace(arg=True)
    ok = UOp(Ops.CAST, dtypes.uint64, (b,)) < c(dtypes.uint64, a.dtype.bits)   # as unsigned: negatives are huge
    shifted = UOp(x.op, a.dtype, (a, ok.where(b, c(b.dtype, 0))), True)   # arg=True: a machine shift
    if x.op is Ops.SHL or a.dtype.is_unsigned: out_of_range = c(a.dtype, 0)
    else: out_of_range = (a < c(a.dtype, 0)).where(c(a.dtype, -1), c(a.dtype, 0))
    return ok.where(shifted, out_of_range)


def _sign_bits(dt: DType) -> tuple[DType, int]:
    return (dtypes.uint32, 1 << 31) if dt.itemsize == 4 else (dtypes.uint64, 1 << 63)


def _copysign_zero(sign_of: UOp) -> UOp:
    """+0.0 or -0.0 with the sign bit of `sign_of`."""
    ut, bit = _sign_bits(sign_of.dtype)
    return (sign_of.bitcast(ut) & c(ut, bit)).bitcast(sign_of.dtype)


def _float_mod(x: UOp) -> UOp | None:
    """np.remainder for floats: the result has the sign of the divisor (NumPy's npy_divmod)."""
    a, b = x.src
    if not a.dtype.is_float: return None
    dt = a.dtype
    m = a.alu(Ops.FMOD, b)
    fixed = (b < c(dt, 0)).ne(m < c(dt, 0)).where(m + b, m)
    return m.ne(c(dt, 0.0)).where(fixed, _copysign_zero(b))


def _float_floordiv(x: UOp) -> UOp | None:
    """np.floor_divide for floats, step by step as NumPy's npy_floor_divide computes it."""
    a, b = x.src
    if not a.dtype.is_float: return None
    dt = a.dtype
    m = a.alu(Ops.FMOD, b)
    div = (a - m).alu(Ops.FDIV, b)
    div = (m.ne(c(dt, 0.0)) & (b < c(dt, 0)).ne(m < c(dt, 0))).where(div - c(dt, 1.0), div)
    fl = div.alu(Ops.FLOOR)
    fl = ((div - fl) > c(dt, 0.5)).where(fl + c(dt, 1.0), fl)
    q = a.alu(Ops.FDIV, b)
    out = div.ne(c(dt, 0.0)).where(fl, _copysign_zero(q))
    return b.eq(c(dt, 0.0)).where(q, out)


def _int_pow(x: UOp) -> UOp | None:
    """Integer power by repeated squaring. NumPy rejects negative exponents; here they give 0 except for bases
    1 and -1 (documented)."""
    a, e = x.src
    if not a.dtype.is_int and not a.dtype.is_bool: return None
    dt = a.dtype
    if dt.is_bool: return a | e.eq(False)
    if e.op is Ops.CONST and e.arg >= 0:
        n, result, base = int(e.arg), c(dt, 1), a
        while n:
            if n & 1: result = result * base
            n >>= 1
            if n: base = base * base
        return result
    result, base = c(dt, 1), a
    for k in range(e.dtype.bits - (0 if e.dtype.is_unsigned else 1)):
        bit = (e & c(e.dtype, 1 << k)).ne(0)
        result = bit.where(result * base, result)
        base = base * base
    if not e.dtype.is_unsigned:
        neg = e < c(e.dtype, 0)
        result = neg.where(a.eq(1).where(c(dt, 1), a.eq(-1).where((e & c(e.dtype, 1)).ne(0).where(c(dt, -1), c(dt, 1)),
                                                                   c(dt, 0))), result)
    return result


def _float_pow(x: UOp) -> UOp | None:
    a, e = x.src
    if not a.dtype.is_float or e.op is not Ops.CONST: return None
    if e.arg == 2.0: return a * a           # pow is correctly rounded here too, so this is exact
    if e.arg == 1.0: return a
    if e.arg == -1.0: return c(a.dtype, 1.0).alu(Ops.FDIV, a)
    if e.arg == 0.5: return a.alu(Ops.SQRT)   # NumPy's power(x, 0.5) is sqrt: -0.0 stays -0.0, -inf gives nan
    return None


def machine_cast(v: UOp, dt: DType) -> UOp:
    """A float to int conversion the backend may render directly: the value is known to be in range
    (arg=True marks it, so the rule for NumPy's casts leaves it alone)."""
    return UOp(Ops.CAST, dt, (v,), True)


def _x86_to_int32(v: UOp) -> UOp:
    ok = (v >= c(v.dtype, -2.0**31)) & (v < c(v.dtype, 2.0**31))
    return ok.where(machine_cast(ok.where(v, c(v.dtype, 0.0)), dtypes.int32), c(dtypes.int32, -2**31))


def _x86_to_int64(v: UOp) -> UOp:
    ok = (v >= c(v.dtype, -2.0**63)) & (v < c(v.dtype, 2.0**63))
    return ok.where(machine_cast(ok.where(v, c(v.dtype, 0.0)), dtypes.int64), c(dtypes.int64, -2**63))


def _cast(x: UOp) -> UOp | None:
    """Conversions NumPy defines differently from C: to bool is != 0; float to int follows what NumPy does on
    x86-64 (out of range and NaN give the minimum of the intermediate type) instead of C's undefined behaviour."""
    a, dt = x.src[0], x.dtype
    if a.dtype is dt: return a
    if dt.is_bool and not a.dtype.is_bool: return a.ne(c(a.dtype, 0))
    if not (a.dtype.is_float and dt.is_int): return None
    if dt.itemsize <= 2 or dt is dtypes.int32: return _wrap(_x86_to_int32(a), dt)
    if dt is dtypes.int64: return _x86_to_int64(a)
    if dt is dtypes.uint32:
        ok = (a >= c(a.dtype, 0.0)) & (a < c(a.dtype, 2.0**32))
        pos = ok.where(machine_cast(ok.where(a, c(a.dtype, 0.0)), dtypes.int64), c(dtypes.int64, 0))
        nonneg = a >= c(a.dtype, 0.0)
        return nonneg.where(_wrap(pos, dt), _wrap(_x86_to_int32(a), dt))
    # uint64: non-negative values convert unsigned (out of range -> 0), the rest through int64
    ok = (a >= c(a.dtype, 0.0)) & (a < c(a.dtype, 2.0**64))
    big = a >= c(a.dtype, 2.0**63)
    low = _x86_to_int64(big.where(a - c(a.dtype, 2.0**63), a)).bitcast(dtypes.uint64)
    unsigned = big.where(low ^ c(dtypes.uint64, 1 << 63), low)
    nonneg = a >= c(a.dtype, 0.0)
    return nonneg.where(ok.where(unsigned, c(dtypes.uint64, 0)), _x86_to_int64(a).bitcast(dtypes.uint64))


# ---- float16: a storage type (its 16 bits), computed in float32 --------------------------------------------------
F16, F32, F64, U16, U32, U64 = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.uint16, dtypes.uint32,
                                dtypes.uint64)


def _mshl(a: UOp, n: int) -> UOp: return UOp(Ops.SHL, a.dtype, (a, c(a.dtype, n)), True)
def _mshr(a: UOp, n: int) -> UOp: return UOp(Ops.SHR, a.dtype, (a, c(a.dtype, n)), True)


def _half_arith(x: UOp) -> UOp | None:
    """An operation on float16 values computes in float32 and rounds back to float16, as NumPy's float16 loops do
    (float32 holds every product and sum of two float16 exactly enough that the double rounding is harmless)."""
    if x.dtype is not F16 and not any(s.dtype is F16 for s in x.src): return None
    srcs = tuple(UOp(Ops.CAST, F32, (s,)) if s.dtype is F16 else s for s in x.src)
    out = UOp(x.op, F32 if x.dtype is F16 else x.dtype, srcs, x.arg)
    return UOp(Ops.CAST, F16, (out,)) if x.dtype is F16 else out


def _half_to_float(h: UOp) -> UOp:
    """float16 bits to float32, exactly: the 15 magnitude bits moved into float32's place and scaled by 2**112
    (normal and denormal alike); infinities and NaNs (payload kept) by their bits."""
    b = UOp(Ops.CAST, U32, (h.bitcast(U16),))
    mag = b & c(U32, 0x7FFF)
    moved = _mshl(mag, 13)
    finite = (moved.bitcast(F32) * c(F32, 2.0**112)).bitcast(U32)
    bits = (mag >= c(U32, 0x7C00)).where(moved | c(U32, 0x7F800000), finite)
    return (bits | _mshl(b & c(U32, 0x8000), 16)).bitcast(F32)


def _float_to_half(v: UOp) -> UOp:
    """float32 or float64 to float16 bits, rounded to nearest even like NumPy's npy_float(double)_to_half:
    normal results by integer rounding of the dropped bits (a carry moves into the exponent), denormal ones by
    rounding |v| * 2**24 to an integer, 65520 and above to inf, NaN keeping the top of its payload."""
    wide = v.dtype is F64
    ut, drop, ebits = (U64, 42, 11) if wide else (U32, 13, 8)
    top = ut.bits - 1
    bits = v.bitcast(ut)
    sign = _mshr(bits, ut.bits - 16) & c(ut, 0x8000)
    a = bits & c(ut, (1 << top) - 1)
    exp_mask = ((1 << ebits) - 1) << (top - ebits)
    bias = ((1 << (ebits - 1)) - 1 - 15) << (top - ebits)               # float16's exponent bias in v's units
    inf_from = int(np_bits(65520.0, v.dtype))
    normal_from = int(np_bits(2.0**-14, v.dtype))
    rounded = a + c(ut, (1 << (drop - 1)) - 1) + (_mshr(a, drop) & c(ut, 1))
    normal = _mshr(rounded - c(ut, bias), drop)
    magic, magic_bits = (6755399441055744.0, 0x4338000000000000) if wide else (12582912.0, 0x4B400000)
    t = a.bitcast(v.dtype) * c(v.dtype, 2.0**24) + c(v.dtype, magic)     # round(|v| * 2**24), |v| < 2**-14
    denormal = t.bitcast(ut) - c(ut, magic_bits)
    payload = _mshr(a & c(ut, (1 << (top - ebits)) - 1), drop)
    nan = c(ut, 0x7C00) + payload.eq(c(ut, 0)).where(c(ut, 1), payload)
    h = (a >= c(ut, inf_from)).where((a > c(ut, exp_mask)).where(nan, c(ut, 0x7C00)),
                                     (a >= c(ut, normal_from)).where(normal, denormal))
    return UOp(Ops.CAST, U16, (h | sign,)).bitcast(F16)


def np_bits(value: float, dt: DType) -> int:
    import numpy as np
    return int(np.array(value, dt.np).view(np.uint64 if dt.itemsize == 8 else np.uint32))


def _half_cast(x: UOp) -> UOp | None:
    """Conversions from and to float16 through float32 (from float64 directly, so it rounds once)."""
    a, dt = x.src[0], x.dtype
    if a.dtype is not F16 and dt is not F16: return None
    if a.dtype is F16 and dt is F16: return a
    if a.dtype is F16:
        f = _half_to_float(a)
        return f if dt is F32 else UOp(Ops.CAST, dt, (f,))
    src = a if a.dtype in (F32, F64) else UOp(Ops.CAST, F64 if a.dtype.itemsize > 2 else F32, (a,))
    return _float_to_half(src)


def _wrap(v: UOp, dt: DType) -> UOp:
    """Integer conversion that keeps the low bits (the renderer's CAST between ints truncates or extends)."""
    return v if v.dtype is dt else UOp(Ops.CAST, dt, (v,))


decompositions = PatternMatcher([
    (UPat(Ops.CAST, name="x"), _half_cast),
    (UPat(tuple(ALU - {Ops.WHERE}), name="x"), _half_arith),
    (UPat((Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN), dtypes.bool, name="x"), _bool_arith),
    (UPat(Ops.ABS, name="x"), _int_abs),
    (UPat(Ops.NOT, name="x"), _not),
    (UPat(Ops.FLOORDIV, name="x"), _int_floordiv),
    (UPat(Ops.FLOORDIV, name="x"), _float_floordiv),
    (UPat(Ops.MOD, name="x"), _int_mod),
    (UPat(Ops.MOD, name="x"), _float_mod),
    (UPat(Ops.POW, name="x"), _int_pow),
    (UPat(Ops.POW, name="x"), _float_pow),
    (UPat(Ops.CAST, arg=None, name="x"), _cast),
    (UPat((Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE), name="x"), _mixed_sign_compare),
    (UPat((Ops.SHL, Ops.SHR), arg=None, name="x"), _shift),
])


def _register_decompositions() -> None:
    """Each rewrite under the ops it rewrites, in the table of primitives (numfn.ir.primitives): NOT, FLOORDIV and
    MOD have no machine op and are always rewritten; the others only for some dtypes."""
    for pat, fn in decompositions.rules:
        for op in pat.ops or (): register(op, "decompose", fn)


_register_decompositions()
