"""NumPy's functions built from its ufuncs: clip, isclose, allclose, array_equal, array_equiv, nan_to_num, round,
fix, real, imag, angle, iscomplex, isreal, sinc. Each is a composition of the ufuncs of numfn/numpy/ufuncs.py, so
broadcasting, NEP 50 promotion and NaN, inf and signed zeros are theirs."""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable

import numpy as np

from numfn.args import refuse
from numfn.ir.uop import Ops, UOp
from numfn.numpy._typing import ArrayLike
from numfn.numpy.creation import full_like
from numfn.numpy.ufuncs import (absolute, add, arctan2, equal, fill_constant, imag_part, isfinite, isnan,
                                isnan_uop, less_equal, logical_and, make_ufunc, maximum, minimum, multiply,
                                not_equal, real_part, rint, sin, strong_operand, is_python_int, subtract, trunc,
                                ufunc, where)
from numfn.trace.tensor import Tensor, broadcast_shapes, promote

T = Tensor.lift

__all__ = ['clip', 'isclose', 'allclose', 'array_equal', 'array_equiv', 'nan_to_num', 'round', 'around', 'fix', 'real',
           'imag', 'sinc', 'angle', 'iscomplexobj', 'isrealobj', 'iscomplex', 'isreal']


def clip(a: ArrayLike, a_min: ArrayLike | None = None, a_max: ArrayLike | None = None, out: None = None, *,
         min: ArrayLike | None = None, max: ArrayLike | None = None) -> Tensor:  # noqa: A002 - NumPy's names
    """minimum(maximum(a, a_min), a_max) with NumPy's promotion; either bound may be None (NumPy 2.1 also spells
    them min= and max=)."""
    refuse("clip", out=out)
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    if a_min is None and a_max is None: raise ValueError("One of max or min must be given")
    res = T(a)
    if not res.runtime_length: res = Tensor(res.uop)   # np.clip converts `a` with asarray: a Python scalar is strong
    dt = res.uop.dtype
    # like NumPy, a Python-int bound beyond the dtype's range on the side it cannot reach is no bound at all
    if dt.is_int and not res.weak:
        if is_python_int(a_min) and a_min < dt.min: a_min = None
        if is_python_int(a_max) and a_max > dt.max: a_max = None
        if a_min is None and a_max is None: return res
        # a traced Python int (an argument, a loop's result) the same at run time: raised to the dtype's minimum or
        # lowered to its maximum, so only a bound beyond the side it can reach is out of range (fuzz seed 54000199)
        a_min = _within(a_min, Ops.MAX, dt.min)
        a_max = _within(a_max, Ops.MIN, dt.max)
    if a_min is None: return minimum(res, a_max)   # NumPy: the ufunc minimum, whose NaN handling differs
    if a_max is None: return maximum(res, a_min)
    lo = maximum(res, a_min)   # for complex values NumPy's clip compares otherwise (_clip_kernel)
    lo = _clip_max(res, a_min) if lo.uop.dtype.is_complex else lo
    hi = minimum(lo, a_max)
    return _clip_min(lo, a_max) if hi.uop.dtype.is_complex else hi


def _within(bound, op: Ops, limit: int):
    """A traced Python-int `bound` (a weak int64) brought within `limit` by `op` (MAX or MIN); anything else as it
    is."""
    if not (isinstance(bound, Tensor) and bound.weak and bound.uop.dtype.is_int and bound.ndim == 0): return bound
    if not bound.uop.dtype.min <= limit <= bound.uop.dtype.max: return bound
    return Tensor(bound.uop.alu(op, UOp.const(bound.uop.dtype, limit)), weak=True)


def _clip_kernel(op: Ops) -> Callable:
    """np.clip's maximum (op MAX) and minimum: for complex values NumPy's clip keeps the value where it is NaN or
    not smaller (larger) than the bound in the lexicographic order with NaN parts compared as they are; maximum's."""
    def kernel(a: UOp, b: UOp) -> UOp:
        if not a.dtype.is_complex: return a.alu(op, b)
        ar, ai, br, bi = real_part(a), imag_part(a), real_part(b), imag_part(b)
        keep = (ar > br if op is Ops.MAX else ar < br) | (ar.eq(br) & (ai >= bi if op is Ops.MAX else ai <= bi))
        return (isnan_uop(ar) | isnan_uop(ai) | keep).where(a, b)
    return kernel


_clip_max, _clip_min = make_ufunc("maximum", _clip_kernel(Ops.MAX), 2), make_ufunc("minimum", _clip_kernel(Ops.MIN), 2)




def isclose(a: ArrayLike, b: ArrayLike, rtol: ArrayLike = 1e-05, atol: ArrayLike = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """abs(a - b) <= atol + rtol * abs(b) elementwise (NumPy's formula, b made floating first; infinities equal
    only to themselves)."""
    x = a if _is_python_number(a) else strong_operand(a)
    y = b if _is_python_number(b) else strong_operand(b)
    atol = atol if _is_python_number(atol) else strong_operand(atol)
    rtol = rtol if _is_python_number(rtol) else strong_operand(rtol)
    if isinstance(y, Tensor):
        y = y.astype(promote(y, T(1.0)), copy=False)
    elif isinstance(y, int):
        y = float(y)
    yt = T(y)
    result = (less_equal(absolute(subtract(x, yt)), add(atol, multiply(rtol, absolute(yt)))) & isfinite(yt)) \
        | equal(x, yt)
    if equal_nan: result = result | (isnan(x) & isnan(yt))
    return result


def _is_python_number(v) -> bool:
    return isinstance(v, (int, float, complex)) and not isinstance(v, Tensor)


def allclose(a: ArrayLike, b: ArrayLike, rtol: ArrayLike = 1e-05, atol: ArrayLike = 1e-08,
             equal_nan: bool = False) -> Tensor:
    """isclose(...).all(). NumPy returns a Python bool; a traced result is a 0-d bool array (it is only known when
    the compiled code runs)."""
    return logical_and.reduce(isclose(a, b, rtol, atol, equal_nan).reshape(-1))


def array_equal(a1: ArrayLike, a2: ArrayLike, equal_nan: bool = False) -> bool | Tensor:
    """True if both have the same shape and elements. Different shapes give Python's False (known while
    tracing); otherwise a 0-d bool array."""
    x, y = T(a1), T(a2)
    if x.shape != y.shape: return False
    same = equal(x, y)
    if equal_nan: same = same | (isnan(x) & isnan(y))
    return logical_and.reduce(same.reshape(-1))


def array_equiv(a1: ArrayLike, a2: ArrayLike) -> bool | Tensor:
    """True if the arrays broadcast together and are equal elementwise: Python's False where they do not
    broadcast, else a 0-d bool array."""
    x, y = T(a1), T(a2)
    try:
        broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return logical_and.reduce(equal(x, y).reshape(-1))


def nan_to_num(x: ArrayLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN replaced by `nan`, infinities by `posinf`/`neginf` (default: the dtype's largest finite values)."""
    t = strong_operand(x)
    dt = t.uop.dtype
    if dt.is_complex:   # each part on its own
        parts = [nan_to_num(p, copy, nan, posinf, neginf) for p in (t.real, t.imag)]
        return Tensor(parts[0].uop.alu(Ops.COMPLEX, parts[1].uop))
    if not dt.is_float: return t
    fi = np.finfo(dt.np)
    big = float(fi.max) if posinf is None else posinf
    small = float(fi.min) if neginf is None else neginf
    fill = [T(v).astype(dt) if isinstance(v, Tensor) else T(fill_constant(v, dt)) for v in (nan, big, small)]
    return where(isnan(t), fill[0], where(t == math.inf, fill[1], where(t == -math.inf, fill[2], t)))


def round(a: ArrayLike, decimals: int = 0, out: None = None) -> Tensor:  # noqa: A001 - NumPy's name
    """Round to `decimals` decimal places, as NumPy: x * 10**d rounded half to even, then divided by 10**d (for
    negative d: divided, rounded, multiplied); integers are returned as they are for d >= 0."""
    t = strong_operand(a)
    dt = t.uop.dtype
    d = int(decimals)
    if dt.is_complex:   # NumPy rounds the two parts on their own
        parts = [round(p, decimals) for p in (t.real, t.imag)]
        res = Tensor(parts[0].uop.alu(Ops.COMPLEX, parts[1].uop))
        return res if out is None else _store_into("round", res, out)
    if dt.is_bool and d == 0: res = rint(t)    # float16, as NumPy's rint of bools
    elif dt.is_bool:
        raise TypeError(f"Cannot cast ufunc '{'multiply' if d > 0 else 'divide'}' output from dtype('float64') to "
                        "dtype('bool') with casting rule 'same_kind'")
    elif not dt.is_inexact and d >= 0: res = t
    else:
        x = t if dt.is_inexact else t.astype(np.float64)
        f = 10.0 ** builtins.abs(d)
        y = rint(x * f) / f if d >= 0 else rint(x / f) * f
        res = y.astype(dt, copy=False)
    return res if out is None else _store_into("round", res, out)


def _store_into(name: str, res: Tensor, out) -> Tensor:
    """`res` written into out= as a ufunc would (same checks and casting)."""
    return ufunc(name, lambda x, dtype=None: x, 1)._store((res,), out)


around = round


def fix(x: ArrayLike, out: None = None) -> Tensor:
    """Round towards zero (np.trunc: floats keep their dtype, integers are returned as they are)."""
    return trunc(x, out=out)


def real(val: ArrayLike) -> Tensor:
    """The real part: a view of a complex array's real parts (val.real), the array itself for real arrays."""
    return T(val).real


def imag(val: ArrayLike) -> Tensor:
    """The imaginary part: a view of a complex array's imaginary parts (val.imag), zeros for real arrays."""
    return T(val).imag


def angle(z: ArrayLike, deg: bool = False) -> Tensor:
    """The argument of complex numbers, arctan2(imag, real) (in degrees with deg=True); 0 or pi for real ones."""
    t = T(z)
    # NumPy's arctan2(0, z) for real z: the weak 0 takes z's dtype, so int8 gives float16 and bool float64
    a = arctan2(t.imag, t.real) if t.uop.dtype.is_complex else arctan2(0, t)
    return a * (180.0 / math.pi) if deg else a


def iscomplexobj(x: ArrayLike) -> bool:
    """Whether x has a complex dtype (known while tracing: a Python bool)."""
    if isinstance(x, Tensor): return x.uop.dtype.is_complex
    return bool(np.iscomplexobj(x))


def isrealobj(x: ArrayLike) -> bool:
    """Whether x does not have a complex dtype (a Python bool)."""
    return not iscomplexobj(x)


def iscomplex(x: ArrayLike) -> Tensor:
    """Elementwise: a nonzero imaginary part (False everywhere for real arrays)."""
    t = T(x)
    if not t.uop.dtype.is_complex: return full_like(t, False, dtype=np.bool_)
    return not_equal(t.imag, 0)


def isreal(x: ArrayLike) -> Tensor:
    """Elementwise: a zero imaginary part (True everywhere for real arrays)."""
    t = T(x)
    if not t.uop.dtype.is_complex: return full_like(t, True, dtype=np.bool_)
    return equal(t.imag, 0)


def sinc(x: ArrayLike) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0, as NumPy computes it (pi x replaced by a tiny eps where it is 0)."""
    y = math.pi * strong_operand(x)
    eps = float(np.finfo(y.dtype).eps) if y.uop.dtype.is_float else 1e-20
    y = where(y, y, eps)
    return sin(y) / y
