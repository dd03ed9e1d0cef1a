"""Python's own arithmetic between traced Python scalars.

A Python bool, int, float or complex that a compiled function receives as an argument, and the index of a native
loop, is traced as a weak value (NEP 50: with an array it takes the array's type). Between two such values Python
computes, not NumPy: `True + True` is 2, `7 // 0` raises ZeroDivisionError, `2 ** -1` is 0.5, `5 ** 30` is an int
beyond 64 bits. numfn computes them as Python does, in Python's types: int64 for ints, float64 for floats and
complex128 for complex numbers. An int result that could leave int64 (where its operands' bounds do not prove it
fits) is checked after the call, which raises OverflowError where Python would give a bigger int; Python's errors
(division by zero, a negative shift count) are checked the same way, or raised while tracing when an operand is a
constant that decides them. Python's TypeErrors (a float shifted, complex numbers ordered) are raised while tracing.

`binary(sym, a, b)` and `unary(sym, a)` build the graph on the operands' UOps (weak types: bool, int64, float64,
complex128, any one shape) and return it with the checks that guard it: (failed, payload, error) triples, for
numfn.trace.tensor.add_check. numfn.trace.tensor calls them for operators between two weak values.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable

from numfn.dtype import DType, dtypes
from numfn.ir.uop import Ops, UOp

__all__ = ["OPERATORS", "UNARY", "Check", "binary", "unary", "result_kind", "python_error"]

OPERATORS: dict[str, Callable] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne}
UNARY: dict[str, Callable] = {"-": operator.neg, "+": operator.pos, "~": operator.invert, "abs": abs}

Check = tuple[UOp, UOp, Callable[[int], BaseException]]   # failed (bool), payload (int64), the error

I64, F64, C128, BOOL = dtypes.int64, dtypes.float64, dtypes.complex128, dtypes.bool
INT_MIN, INT_MAX = I64.min, I64.max
_TYPE = {"b": BOOL, "i": I64, "f": F64, "c": C128}
_KIND = {bool: "b", int: "i", float: "f", complex: "c"}
_SAMPLE = {"b": True, "i": 3, "f": 1.5, "c": 1.5 + 0.5j}   # a value of each kind, for Python to type a result
_ZERO = {"b": False, "i": 0, "f": 0.0, "c": 0j}
_COMPARE = {"<": (Ops.CMPLT, False), "<=": (Ops.CMPLE, False), ">": (Ops.CMPLT, True), ">=": (Ops.CMPLE, True),
            "==": (Ops.CMPEQ, False), "!=": (Ops.CMPNE, False)}
_BITWISE = {"&": Ops.AND, "|": Ops.OR, "^": Ops.XOR}
_ARITH = {"+": Ops.ADD, "-": Ops.SUB, "*": Ops.MUL, "/": Ops.FDIV, "//": Ops.FLOORDIV, "%": Ops.MOD}


def kind(u: UOp) -> str:
    """The Python type a weak value stands for: 'b' (bool), 'i' (int), 'f' (float) or 'c' (complex)."""
    dt = u.dtype
    return "b" if dt.is_bool else "i" if dt.is_int else "f" if dt.is_float else "c"


def result_kind(sym: str, ka: str, kb: str | None = None) -> str:
    """The kind of Python's result of `a sym b` (or of the unary `sym a`); Python's own TypeError where it has none
    (`1.5 << 2`, `1j < 2j`, `~1.5`)."""
    value = UNARY[sym](_SAMPLE[ka]) if kb is None else OPERATORS[sym](_SAMPLE[ka], _SAMPLE[kb])
    return _KIND[type(value)]


def python_error(compute: Callable[[], object]) -> BaseException:
    """The exception Python raises computing `compute()` (its own type and wording, for this Python version)."""
    try:
        compute()
    except (ArithmeticError, ValueError) as e:
        return e
    raise AssertionError("Python computed it")


def _raiser(e: BaseException) -> Callable[[int], BaseException]:
    return lambda _: type(e)(*e.args)


def _const(like: UOp, dt: DType, value) -> UOp:
    return UOp.const_like(dt, value, like.shape or ())


def _fits(lo, hi) -> bool:
    return INT_MIN <= lo and hi <= INT_MAX


def _bounds(u: UOp) -> tuple[int, int]:
    lo, hi = u.bounds
    return int(lo), int(hi)


def _overflow(sym: str, where: str) -> Callable[[int], BaseException]:
    return lambda _: OverflowError(
        f"the Python int result of '{sym}' at {where} is beyond 64 bits: Python would give a larger int, but numfn "
        "computes a compiled function's Python ints as 64-bit integers")


def _nonzero(b: UOp, checks: list, error: BaseException) -> None:
    """`error` (Python's ZeroDivisionError) where divisor `b` is zero: raised now for a constant zero, checked after
    the call for a traced divisor whose bounds do not exclude zero."""
    if b.op is Ops.CONST:
        if b.arg == 0: raise type(error)(*error.args)
        return
    if b.dtype.is_int:
        lo, hi = _bounds(b)
        if lo > 0 or hi < 0: return
    checks.append((b.alu(Ops.CMPEQ, _const(b, b.dtype, 0)), _const(b, I64, 0), _raiser(error)))


def binary(sym: str, a: UOp, b: UOp, where: str) -> tuple[UOp, list[Check]]:
    """Python's `a sym b` for weak values a and b of one shape, and the checks that guard it (see the module)."""
    ka, kb = kind(a), kind(b)
    rk = result_kind(sym, ka, kb)
    checks: list[Check] = []
    if sym in _COMPARE: return _compare(sym, a, b), checks
    if sym in _BITWISE: return a.cast(_TYPE[rk]).alu(_BITWISE[sym], b.cast(_TYPE[rk])), checks
    if sym in ("<<", ">>"): return _shift(sym, a.cast(I64), b.cast(I64), checks, where), checks
    if sym == "**": return _power(a, b, ka, kb, rk, checks, where), checks
    dt = _TYPE[rk]
    x, y = a.cast(dt), b.cast(dt)
    if sym in ("/", "//", "%"):
        _nonzero(y, checks, python_error(lambda: OPERATORS[sym](_SAMPLE[ka], _ZERO[kb])))
    out = x.alu(_ARITH[sym], y)
    if rk == "i" and sym in ("+", "-", "*", "//"): _int_overflow(sym, x, y, out, checks, where)
    return out, checks


def _int_overflow(sym: str, x: UOp, y: UOp, r: UOp, checks: list, where: str) -> None:
    """A check that the int64 result `r` of x sym y is Python's (no wrap-around), unless the bounds prove it."""
    (a0, a1), (b0, b1) = _bounds(x), _bounds(y)
    zero = _const(x, I64, 0)
    if sym == "+":
        if _fits(a0 + b0, a1 + b1): return
        failed = x.alu(Ops.XOR, r).alu(Ops.AND, y.alu(Ops.XOR, r)).alu(Ops.CMPLT, zero)
    elif sym == "-":
        if _fits(a0 - b1, a1 - b0): return
        failed = x.alu(Ops.XOR, y).alu(Ops.AND, x.alu(Ops.XOR, r)).alu(Ops.CMPLT, zero)
    elif sym == "*":
        c = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
        if _fits(min(c), max(c)): return
        # r is the exact product iff r // x == y (x != 0), except for -1 * MIN, whose quotient wraps back to y
        wrapped = r.alu(Ops.FLOORDIV, x).alu(Ops.CMPNE, y).alu(
            Ops.OR, x.alu(Ops.CMPEQ, _const(x, I64, -1)).alu(Ops.AND, y.alu(Ops.CMPEQ, _const(y, I64, INT_MIN))))
        failed = x.alu(Ops.CMPNE, zero).alu(Ops.AND, wrapped)
    else:   # floor division: only MIN // -1 leaves int64
        if not (a0 == INT_MIN and b0 <= -1 <= b1): return
        failed = x.alu(Ops.CMPEQ, _const(x, I64, INT_MIN)).alu(Ops.AND, y.alu(Ops.CMPEQ, _const(y, I64, -1)))
    checks.append((failed, zero, _overflow(sym, where)))


def _shift(sym: str, x: UOp, k: UOp, checks: list, where: str) -> UOp:
    """x << k or x >> k on Python ints: a negative count raises ValueError; a left shift must stay in int64. NumPy's
    shifts already give Python's answer for counts of 64 or more (0, or -1 for negative x shifted right)."""
    (a0, a1), (k0, k1) = _bounds(x), _bounds(k)
    if k0 < 0:
        error = python_error(lambda: 1 << -1)
        if k.op is Ops.CONST: raise type(error)(*error.args)
        checks.append((k.alu(Ops.CMPLT, _const(k, I64, 0)), _const(k, I64, 0), _raiser(error)))
    op = Ops.SHL if sym == "<<" else Ops.SHR
    out = x.alu(op, k)
    if op is Ops.SHR or k1 < 0: return out   # a right shift stays in range; negative counts raise anyway
    lo_k = max(k0, 0)
    if k1 <= 64:
        c = (a0 << lo_k, a0 << k1, a1 << lo_k, a1 << k1)
        if _fits(min(c), max(c)): return out
    zero = _const(x, I64, 0)
    # exact iff shifting back gives x (a count of 64 or more shifts everything out: exact only for 0)
    big = k.alu(Ops.CMPLT, _const(k, I64, 64)).alu(Ops.XOR, _const(k, BOOL, True))
    lost = out.alu(Ops.SHR, k).alu(Ops.CMPNE, x).alu(Ops.OR, big)
    checks.append((x.alu(Ops.CMPNE, zero).alu(Ops.AND, lost), zero, _overflow(sym, where)))
    return out


def _power(a: UOp, b: UOp, ka: str, kb: str, rk: str, checks: list, where: str) -> UOp:
    if rk == "i":
        if b.op is Ops.CONST and b.arg < 0: rk = "f"   # an int to a negative int power: Python's float power
        else: return _int_power(a.cast(I64), b.cast(I64), checks, where)
    dt = _TYPE[rk]
    x, y = a.cast(dt), b.cast(dt)
    out = x.alu(Ops.POW, y)
    zero = _const(x, I64, 0)
    if rk == "c":   # 0j to a negative or complex power
        if not (x.op is Ops.CONST and x.arg != 0):
            e = python_error(lambda: 0j ** -1)
            yr, yi = y.cast(F64), y.alu(Ops.IMAG)
            neg = yr.alu(Ops.CMPLT, _const(yr, F64, 0.0)).alu(Ops.OR, yi.alu(Ops.CMPNE, _const(yi, F64, 0.0)))
            checks.append((x.alu(Ops.CMPEQ, _const(x, C128, 0)).alu(Ops.AND, neg), zero, _raiser(e)))
        e = python_error(lambda: (1e300 + 0j) ** 2)   # a finite power that overflows
        parts = [x.cast(F64), x.alu(Ops.IMAG), y.cast(F64), y.alu(Ops.IMAG)]
        failed = _finite(out.cast(F64)).alu(Ops.AND, _finite(out.alu(Ops.IMAG))).alu(Ops.XOR, _const(x, BOOL, True))
        for p in parts: failed = failed.alu(Ops.AND, _finite(p))
        checks.append((failed, zero, _raiser(e)))
        return out
    const_x, const_y = (x.arg if x.op is Ops.CONST else None), (y.arg if y.op is Ops.CONST else None)
    fzero = _const(x, F64, 0.0)
    if not (const_x is not None and const_x != 0) and not (const_y is not None and const_y >= 0):
        e = python_error(lambda: 0.0 ** -1.0)
        if const_x == 0 and const_y is not None: raise type(e)(*e.args)
        checks.append((x.alu(Ops.CMPEQ, fzero).alu(Ops.AND, y.alu(Ops.CMPLT, fzero)), zero, _raiser(e)))
    if not (const_x is not None and not const_x < 0) and not (const_y is not None and (
            not math.isfinite(const_y) or const_y == math.floor(const_y))):
        fractional = y.alu(Ops.FLOOR).alu(Ops.CMPNE, y).alu(Ops.AND, _finite(y))
        checks.append((x.alu(Ops.CMPLT, fzero).alu(Ops.AND, fractional), zero, lambda _: ValueError(
            f"a negative float to a fractional power at {where} is a complex number in Python ((-8.0) ** 0.5 is "
            "(1.7e-16+2.8j)), but numfn fixes each value's type while tracing and this one is a float; make the "
            "base complex first (base + 0j) for Python's complex result")))
    if not (const_y is not None and abs(const_y) <= 1 and const_y != -1):
        e = python_error(lambda: 1e300 ** 2.0)
        fin = _finite(x).alu(Ops.AND, _finite(y)).alu(Ops.AND, _finite(out).alu(Ops.XOR, _const(x, BOOL, True)))
        failed = fin.alu(Ops.AND, x.alu(Ops.CMPNE, fzero))   # 0.0 ** -1.0 is the ZeroDivisionError above
        checks.append((failed, zero, _raiser(e)))
    return out


def _finite(x: UOp) -> UOp:
    return x.alu(Ops.ABS).alu(Ops.CMPLT, _const(x, x.dtype, math.inf))


def _int_power(x: UOp, y: UOp, checks: list, where: str) -> UOp:
    """Python's int ** int with a non-negative exponent, in int64; a negative traced exponent (whose Python result
    is a float) raises ValueError after the call."""
    (a0, a1), (k0, k1) = _bounds(x), _bounds(y)
    zero = _const(x, I64, 0)
    if k0 < 0:
        if a0 <= 0 <= a1:   # Python's error for 0 ** -n comes first
            e = python_error(lambda: 0 ** -1)
            checks.append((x.alu(Ops.CMPEQ, zero).alu(Ops.AND, y.alu(Ops.CMPLT, zero)), zero, _raiser(e)))
        checks.append((y.alu(Ops.CMPLT, zero), zero, lambda _: ValueError(
            f"a Python int to a negative int power at {where} is a float in Python (2 ** -1 is 0.5), but numfn fixes "
            "each value's type while tracing and this one is an int (its exponent is not known to be >= 0); make "
            "the base a float (base * 1.0) for Python's float result")))
    out = x.alu(Ops.POW, y)
    m = max(abs(a0), abs(a1))
    if m <= 1 or (k1 <= 64 and m ** max(k1, 0) <= INT_MAX): return out
    # the wrapped int64 power differs from the float64 power by a multiple of 2**64 exactly when it wrapped; the
    # float one's own error (under 2**-50 of it) is far below 2**62 where it did not
    approx = x.cast(F64).alu(Ops.POW, y.cast(F64))
    off = approx.alu(Ops.SUB, out.cast(F64)).alu(Ops.ABS)
    failed = off.alu(Ops.CMPLT, _const(off, F64, 2.0**62)).alu(Ops.XOR, _const(off, BOOL, True))
    checks.append((y.alu(Ops.CMPLT, zero).alu(Ops.XOR, _const(y, BOOL, True)).alu(Ops.AND, failed), zero,
                   _overflow("**", where)))
    return out


def _compare(sym: str, a: UOp, b: UOp) -> UOp:
    op, swap = _COMPARE[sym]
    ka, kb = kind(a), kind(b)
    if "c" in (ka, kb): a, b = a.cast(C128), b.cast(C128)
    elif "f" in (ka, kb) and not (ka == kb == "f"):
        return _int_float_compare(op, swap, a, b)
    elif ka != "f": a, b = a.cast(I64), b.cast(I64)
    return (b.alu(op, a) if swap else a.alu(op, b))


def _int_float_compare(op: Ops, swap: bool, a: UOp, b: UOp) -> UOp:
    """An int compared with a float, exactly as Python compares them (by value: 2**53 + 1 > 2.0**53)."""
    i, f = (a, b) if kind(b) == "f" else (b, a)
    i = i.cast(I64)
    fi = i.cast(F64)
    x, y = (fi, f) if kind(b) == "f" else (f, fi)
    approx = y.alu(op, x) if swap else x.alu(op, y)
    lo, hi = _bounds(i)
    if -2**53 <= lo and hi <= 2**53: return approx   # every such int is a float exactly
    # at a tie the float is an integer: compare it with the int as ints (2.0**63, above every int64, stands for
    # INT_MAX + 1: the int is below it, which comparing with INT_MAX and treating equality as below decides)
    tie = fi.alu(Ops.CMPEQ, f)
    top = f.alu(Ops.CMPLT, _const(f, F64, 2.0**63)).alu(Ops.XOR, _const(f, BOOL, True))
    as_int = top.alu(Ops.WHERE, _const(f, F64, 0.0), f).cast(I64)
    p, q = (i, as_int) if kind(b) == "f" else (as_int, i)
    exact = q.alu(op, p) if swap else p.alu(op, q)
    int_first = kind(b) == "f"   # the int is the left operand of the Python expression
    below = _less_outcome(op, swap, int_first)
    return tie.alu(Ops.WHERE, top.alu(Ops.WHERE, _const(f, BOOL, below), exact), approx)


def _less_outcome(op: Ops, swap: bool, int_first: bool) -> bool:
    """The comparison's value when the int operand is below the float one."""
    left_less = int_first   # the Python expression's left operand is the smaller
    if swap: left_less = not left_less   # the ALU op sees (right, left)
    return {Ops.CMPLT: left_less, Ops.CMPLE: left_less, Ops.CMPEQ: False, Ops.CMPNE: True}[op]


def unary(sym: str, a: UOp, where: str) -> tuple[UOp, list[Check]]:
    """Python's `-a`, `+a`, `~a` or `abs(a)` for a weak value, and the checks that guard it."""
    ka = kind(a)
    rk = result_kind(sym, ka)
    checks: list[Check] = []
    if sym == "abs" and ka == "c":
        out = a.alu(Ops.ABS).cast(F64)
        e = python_error(lambda: abs(complex(1.7e308, 1.7e308)))
        checks.append((_finite(out).alu(Ops.XOR, _const(out, BOOL, True)).alu(Ops.AND, _finite(a.cast(F64)).alu(
            Ops.AND, _finite(a.alu(Ops.IMAG)))), _const(a, I64, 0), _raiser(e)))
        return out, checks
    x = a.cast(_TYPE[rk])
    if sym == "+": return x, checks
    if sym == "~": return x.alu(Ops.NOT), checks
    out = x.alu(Ops.NEG if sym == "-" else Ops.ABS)
    if rk == "i" and _bounds(x)[0] == INT_MIN:
        checks.append((x.alu(Ops.CMPEQ, _const(x, I64, INT_MIN)), _const(x, I64, 0),
                       _overflow("-" if sym == "-" else "abs", where)))
    return out, checks
