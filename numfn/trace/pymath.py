"""Python's `math` functions, the builtins `any`, `all` and `sorted`, and `ndarray.item()` on traced values, so code
written for Python scalars (as Numba users write it: `math.exp(x[i])` in a loop) compiles unchanged.

A `math` function of a traced 0-d value is NumPy's ufunc on it as a float64, giving a Python float (a weak float64:
NEP 50's rules for Python scalars), or a Python int for floor, ceil and trunc. Where `math` raises instead of
returning NaN or infinity (`math.sqrt(-1.0)`, `math.log(0.0)`, `math.exp(1000.0)`, `math.floor(nan)`), the program
raises the same error after the call (a run-time check). Python values go to `math` itself.

`sorted(a)` of a traced 1-d array is the list of its elements in np.sort's order. `any(a)` and `all(a)` of a
traced array are Python's: they iterate the first axis and take the truth of each
element (a row of more than one element is NumPy's ambiguous-truth ValueError); over a list or tuple of traced
scalars, the truth of each. `a.item()` is the Python scalar of a one-element array (an index picks one element)."""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from numfn.dtype import dtypes
from numfn.trace.record import tracing
from numfn.trace.tensor import Tensor, add_check, numpy_function, tensor_method

__all__ = ["TRACED", "checked_int"]


def _real(x: Any, name: str) -> Tensor:
    """x as a 0-d float64 (math converts with float(): one element, real)."""
    t = Tensor.lift(x)
    if t.size != 1: raise TypeError(f"only length-1 arrays can be converted to Python scalars (math.{name})")
    if t.uop.dtype.is_complex: raise TypeError("must be real number, not complex")
    return t.reshape(()).astype(np.float64)


def _domain(bad: Tensor) -> None:
    add_check(bad, 0, lambda _: ValueError("math domain error"))


def _range(result: Tensor, args: list[Tensor]) -> None:
    """math's OverflowError: an infinite result of finite arguments."""
    isinf, isfinite = numpy_function("isinf"), numpy_function("isfinite")
    finite = isfinite(args[0])
    for a in args[1:]: finite = finite & isfinite(a)
    add_check(isinf(result) & finite, 0, lambda _: OverflowError("math range error"))


def _weak(t: Tensor) -> Tensor:
    return Tensor(t.uop, weak=True)


# name -> (NumPy's ufunc, where the arguments are outside math's domain (or None), whether a finite argument can
# overflow to an infinite result)
_FLOAT_FUNCTIONS: dict[str, tuple[str, Callable | None, bool]] = {
    "sqrt": ("sqrt", lambda x: x < 0, False),
    "exp": ("exp", None, True),
    "exp2": ("exp2", None, True),
    "expm1": ("expm1", None, True),
    "log": ("log", lambda x: x <= 0, False),
    "log2": ("log2", lambda x: x <= 0, False),
    "log10": ("log10", lambda x: x <= 0, False),
    "log1p": ("log1p", lambda x: x <= -1, False),
    "sin": ("sin", lambda x: numpy_function("isinf")(x), False),
    "cos": ("cos", lambda x: numpy_function("isinf")(x), False),
    "tan": ("tan", lambda x: numpy_function("isinf")(x), False),
    "asin": ("arcsin", lambda x: abs(x) > 1, False),
    "acos": ("arccos", lambda x: abs(x) > 1, False),
    "atan": ("arctan", None, False),
    "sinh": ("sinh", None, True),
    "cosh": ("cosh", None, True),
    "tanh": ("tanh", None, False),
    "asinh": ("arcsinh", None, False),
    "acosh": ("arccosh", lambda x: x < 1, False),
    "atanh": ("arctanh", lambda x: abs(x) >= 1, False),
    "fabs": ("fabs", None, False),
    "degrees": ("degrees", None, False),
    "radians": ("radians", None, False),
}
_BINARY_FUNCTIONS: dict[str, tuple[str, Callable | None, bool]] = {
    "atan2": ("arctan2", None, False),
    "hypot": ("hypot", None, True),
    "copysign": ("copysign", None, False),
    # (NaN gives NaN: no error)
    "fmod": ("fmod", lambda x, y: (numpy_function("isinf")(x) & (y == y)) | ((y == 0) & (x == x)), False),
    # a negative base with a non-integral exponent, or 0 to a finite negative power
    "pow": ("power", lambda x, y: ((x < 0) & (numpy_function("floor")(y) != y) & numpy_function("isfinite")(x)
                                   & numpy_function("isfinite")(y)) | ((x == 0) & (y < 0) & (y > -np.inf)), True),
}


def _math_function(name: str) -> Callable:
    original = getattr(math, name)
    ufunc, domain, overflows = _FLOAT_FUNCTIONS[name]

    def traced(x, *rest):
        if rest or not isinstance(x, Tensor) or not tracing(): return original(x, *rest)
        t = _real(x, name)
        if domain is not None: _domain(domain(t))
        out = numpy_function(ufunc)(t)
        if overflows: _range(out, [t])
        return _weak(out)
    traced.__name__ = name
    return traced


def _binary_function(name: str) -> Callable:
    original = getattr(math, name)
    ufunc, domain, overflows = _BINARY_FUNCTIONS[name]

    def traced(x, y, *rest):
        if rest or not (isinstance(x, Tensor) or isinstance(y, Tensor)) or not tracing(): return original(x, y, *rest)
        a, b = _real(x, name), _real(y, name)
        if domain is not None: _domain(domain(a, b))
        out = numpy_function(ufunc)(a, b)
        if overflows: _range(out, [a, b])
        return _weak(out)
    traced.__name__ = name
    return traced


def _log(x, base=None):
    if not (isinstance(x, Tensor) or isinstance(base, Tensor)) or not tracing():
        return math.log(x) if base is None else math.log(x, base)
    natural = _math_function("log")
    if base is None: return natural(x)
    top = natural(x)   # (its domain check first, as Python computes log(x) first)
    b = _real(base, "log")
    _domain(b <= 0)
    add_check(b == 1, 0, lambda _: ZeroDivisionError("float division by zero"))   # log(x) / log(1)
    return _weak(top / numpy_function("log")(b))


def checked_int(t: Tensor, what: str) -> Tensor:
    """A float64 0-d value as the Python int (a weak int64) int() makes of it: NaN and infinity raise int()'s
    errors, and a value beyond 64 bits (Python's int would hold it exactly; numfn's Python ints are 64-bit) raises
    OverflowError rather than wrap. One check when the program runs, whose payload is the value's bits."""
    bad = ~((t >= -(2.0 ** 63)) & (t < 2.0 ** 63))   # (NaN compares false: bad too)

    def error(bits: int) -> BaseException:
        value = float(np.array(bits, np.int64).view(np.float64))
        if math.isnan(value): return ValueError("cannot convert float NaN to integer")
        if math.isinf(value): return OverflowError("cannot convert float infinity to integer")
        return OverflowError(f"{what} of {value!r} does not fit a 64-bit integer (numfn's Python ints have 64 bits)")
    add_check(bad, Tensor(t.uop.bitcast(dtypes.int64)), error)
    return _weak(t.astype(np.int64))


def _rounding(name: str) -> Callable:
    """floor, ceil, trunc: a Python int, with int()'s errors for NaN and infinity."""
    original = getattr(math, name)
    ufunc = {"floor": "floor", "ceil": "ceil", "trunc": "trunc"}[name]

    def traced(x):
        if not isinstance(x, Tensor) or not tracing(): return original(x)
        t = Tensor.lift(x)
        if t.uop.dtype.is_int or t.uop.dtype.is_bool: return _weak(t.reshape(()).astype(np.int64))
        return checked_int(numpy_function(ufunc)(_real(t, name)), f"math.{name}()")
    traced.__name__ = name
    return traced


def _predicate(name: str) -> Callable:
    original = getattr(math, name)

    def traced(x):
        if not isinstance(x, Tensor) or not tracing(): return original(x)
        return _weak(numpy_function(name)(_real(x, name)))
    traced.__name__ = name
    return traced


def _isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0):
    """math.isclose: equal, or both finite with |a - b| within rel_tol of the larger magnitude or abs_tol."""
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)) or not tracing():
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    if rel_tol < 0 or abs_tol < 0: raise ValueError("tolerances must be non-negative")
    x, y = _real(a, "isclose"), _real(b, "isclose")
    isfinite = numpy_function("isfinite")
    diff = abs(x - y)
    near = (diff <= rel_tol * abs(y)) | (diff <= rel_tol * abs(x)) | (diff <= abs_tol)
    return _weak((x == y) | (near & isfinite(x) & isfinite(y)))


def _sorted(iterable, *, key=None, reverse=False):
    """sorted() of a traced 1-d array: its elements in order, as a list of NumPy scalars (np.sort's order)."""
    if key is not None or not isinstance(iterable, Tensor) or not tracing():
        return sorted(iterable, key=key, reverse=reverse)
    if iterable.ndim != 1:
        if iterable.ndim == 0: raise TypeError("iteration over a 0-d array")
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
    ordered = numpy_function("sort")(iterable)
    return list(ordered[::-1] if reverse else ordered)


# ---------------------------------------------------------------------------------------------------------------
# any, all

def _truths(iterable: Any, what: str) -> list | None:
    """The truth of each item Python's any/all would take (traced 0-d values and Python values), or None where
    nothing traced is involved (the builtin then runs as it is)."""
    if isinstance(iterable, Tensor):
        if iterable.ndim == 0: raise TypeError("iteration over a 0-d array")
        rows = int(np.prod(iterable.shape[1:]))
        if iterable.shape[0] and rows != 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                             "a.all()" if rows else "The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
        return [iterable.reshape(iterable.shape[0]).astype(np.bool_)]
    if isinstance(iterable, (list, tuple)) and any(isinstance(v, Tensor) for v in iterable):
        out: list[Any] = []
        for v in iterable:
            if isinstance(v, Tensor):
                if v.size != 1:
                    raise ValueError("The truth value of an array with more than one element is ambiguous. Use "
                                     "a.any() or a.all()")
                out.append(v.reshape(()).astype(np.bool_))
            else: out.append(builtins.bool(v))
        return out
    return None


def _any(iterable):
    truths = _truths(iterable, "any") if tracing() else None
    if truths is None: return builtins.any(iterable)
    out: Any = False
    for t in truths: out = out | (t.any() if isinstance(t, Tensor) and t.ndim else t)
    return _weak(Tensor.lift(out).astype(np.bool_))


def _all(iterable):
    truths = _truths(iterable, "all") if tracing() else None
    if truths is None: return builtins.all(iterable)
    out: Any = True
    for t in truths: out = out & (t.all() if isinstance(t, Tensor) and t.ndim else t)
    return _weak(Tensor.lift(out).astype(np.bool_))


# ---------------------------------------------------------------------------------------------------------------
# ndarray.item

@tensor_method("item")
def _item(self: Tensor, *args: Any) -> Tensor:
    """The Python scalar of a one-element array, or of the element an index picks (a flat index, or one per axis):
    a weak value, as NumPy's Python int, float, complex or bool."""
    if len(args) == 1 and isinstance(args[0], tuple): args = args[0]
    if not args:
        if self.size != 1: raise ValueError("can only convert an array of size 1 to a Python scalar")
        element = self.reshape(())
    elif len(args) == 1: element = self.reshape(-1)[args[0]]
    else:
        if len(args) != self.ndim: raise ValueError("incorrect number of indices for array")
        element = self[tuple(args)]
    t = Tensor.lift(element)
    kind = np.bool_ if t.uop.dtype.is_bool else np.int64 if t.uop.dtype.is_int else \
        np.complex128 if t.uop.dtype.is_complex else np.float64
    return _weak(t.astype(kind))


TRACED: dict[Any, Callable] = {
    **{getattr(math, name): _math_function(name) for name in _FLOAT_FUNCTIONS if hasattr(math, name)},
    **{getattr(math, name): _binary_function(name) for name in _BINARY_FUNCTIONS},
    **{getattr(math, name): _rounding(name) for name in ("floor", "ceil", "trunc")},
    **{getattr(math, name): _predicate(name) for name in ("isnan", "isinf", "isfinite")},
    math.log: _log, builtins.any: _any, builtins.all: _all,   # (math.log takes a base too)
    math.isclose: _isclose, builtins.sorted: _sorted,
}
