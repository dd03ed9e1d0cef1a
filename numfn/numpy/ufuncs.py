"""Elementwise functions (NumPy's ufuncs and a few relatives: where, clip): broadcasting, NumPy 2 promotion with
weak Python scalars (NEP 50), NaN, inf and signed zeros as NumPy has them."""
from __future__ import annotations

import builtins
import math

import numpy as np

from numfn.args import refuse
from numfn.dtype import dtypes, resolve_ufunc, result_type
from numfn.errors import user_location
from numfn.numpy.creation import full_like
from numfn.tensor import Tensor, broadcast_shapes
from numfn.uop import Ops, UOp

T = Tensor.lift

__all__ = ['sin', 'cos', 'tan', 'tanh', 'exp', 'exp2', 'log', 'log2', 'sqrt', 'negative', 'positive', 'invert',
           'bitwise_not', 'abs', 'absolute', 'floor', 'ceil', 'trunc', 'add', 'subtract', 'multiply', 'divide',
           'floor_divide', 'remainder', 'divmod', 'power', 'maximum', 'minimum', 'bitwise_and', 'bitwise_or',
           'bitwise_xor', 'left_shift', 'right_shift', 'less', 'less_equal', 'greater', 'greater_equal', 'equal',
           'not_equal', 'true_divide', 'mod', 'logical_and', 'logical_or', 'logical_xor', 'logical_not', 'square',
           'sign', 'isnan', 'isinf', 'isfinite', 'where', 'clip']

# ---- elementwise ----------------------------------------------------------------------------------------------
def sin(x) -> Tensor: return T(x)._unary("sin", Ops.SIN)
def cos(x) -> Tensor: return T(x)._unary("cos", Ops.COS)
def tan(x) -> Tensor: return T(x)._unary("tan", Ops.TAN)
def tanh(x) -> Tensor: return T(x)._unary("tanh", Ops.TANH)
def exp(x) -> Tensor: return T(x)._unary("exp", Ops.EXP)
def exp2(x) -> Tensor: return T(x)._unary("exp2", Ops.EXP2)
def log(x) -> Tensor: return T(x)._unary("log", Ops.LOG)
def log2(x) -> Tensor: return T(x)._unary("log2", Ops.LOG2)
def sqrt(x) -> Tensor: return T(x)._unary("sqrt", Ops.SQRT)
def negative(x) -> Tensor: return -T(x)
def positive(x) -> Tensor: return +T(x)
def invert(x) -> Tensor: return ~T(x)
bitwise_not = invert


def abs(x) -> Tensor:  # noqa: A001 - NumPy's name
    return builtins.abs(T(x))


absolute = abs


def _rounding(x, ufunc: str, op: Ops) -> Tensor:
    t = T(x)
    # NumPy 2 rounds integers to themselves (same dtype); only floats need the operation
    return t._unary(ufunc, op if t.uop.dtype.is_float else None)


def floor(x) -> Tensor: return _rounding(x, "floor", Ops.FLOOR)
def ceil(x) -> Tensor: return _rounding(x, "ceil", Ops.CEIL)
def trunc(x) -> Tensor: return _rounding(x, "trunc", Ops.TRUNC)


def add(a, b) -> Tensor: return Tensor._elementwise("add", Ops.ADD, a, b)
def subtract(a, b) -> Tensor: return Tensor._elementwise("subtract", Ops.SUB, a, b)
def multiply(a, b) -> Tensor: return Tensor._elementwise("multiply", Ops.MUL, a, b)
def divide(a, b) -> Tensor: return Tensor._elementwise("true_divide", Ops.FDIV, a, b)
def floor_divide(a, b) -> Tensor: return Tensor._elementwise("floor_divide", Ops.FLOORDIV, a, b)
def remainder(a, b) -> Tensor: return Tensor._elementwise("remainder", Ops.MOD, a, b)
def divmod(a, b) -> tuple[Tensor, Tensor]: return floor_divide(a, b), remainder(a, b)  # noqa: A001
def power(a, b) -> Tensor: return T(a) ** b
def maximum(a, b) -> Tensor: return Tensor._elementwise("maximum", Ops.MAX, a, b)
def minimum(a, b) -> Tensor: return Tensor._elementwise("minimum", Ops.MIN, a, b)
def bitwise_and(a, b) -> Tensor: return Tensor._elementwise("bitwise_and", Ops.AND, a, b)
def bitwise_or(a, b) -> Tensor: return Tensor._elementwise("bitwise_or", Ops.OR, a, b)
def bitwise_xor(a, b) -> Tensor: return Tensor._elementwise("bitwise_xor", Ops.XOR, a, b)
def left_shift(a, b) -> Tensor: return Tensor._elementwise("left_shift", Ops.SHL, a, b)
def right_shift(a, b) -> Tensor: return Tensor._elementwise("right_shift", Ops.SHR, a, b)
def less(a, b) -> Tensor: return Tensor._elementwise("less", Ops.CMPLT, a, b)
def less_equal(a, b) -> Tensor: return Tensor._elementwise("less_equal", Ops.CMPLE, a, b)
def greater(a, b) -> Tensor: return Tensor._elementwise("greater", Ops.CMPLT, b, a)
def greater_equal(a, b) -> Tensor: return Tensor._elementwise("greater_equal", Ops.CMPLE, b, a)
def equal(a, b) -> Tensor: return Tensor._elementwise("equal", Ops.CMPEQ, a, b)
def not_equal(a, b) -> Tensor: return Tensor._elementwise("not_equal", Ops.CMPNE, a, b)
true_divide, mod = divide, remainder


def _truth(x) -> Tensor: return T(x).astype(np.bool_)
def logical_and(a, b) -> Tensor: return _truth(a) & _truth(b)
def logical_or(a, b) -> Tensor: return _truth(a) | _truth(b)
def logical_xor(a, b) -> Tensor: return _truth(a) ^ _truth(b)
def logical_not(x) -> Tensor: return ~_truth(x)


def square(x) -> Tensor:
    t = T(x)
    (cast,), out = resolve_ufunc("square", (t.uop.dtype,))   # bool squares in int8, like NumPy
    u = t.uop.cast(cast)
    return Tensor(u.alu(Ops.MUL, u).cast(out), t.weak)


def sign(x) -> Tensor:
    t = T(x)
    if t.uop.dtype.is_bool: raise TypeError(f"numpy.sign is not supported for bool (at {user_location()})")
    zero = Tensor(UOp.const(t.uop.dtype, 0))
    one = Tensor(UOp.const(t.uop.dtype, 1))
    neg = Tensor(UOp.const(t.uop.dtype, -1 if not t.uop.dtype.is_unsigned else 0))
    return where(t > zero, one, where(t < zero, neg, where(t == zero, zero, t)))


def isnan(x) -> Tensor:
    t = T(x)
    return t != t if t.uop.dtype.is_float else full_like(t, False, dtype=np.bool_)


def isinf(x) -> Tensor:
    t = T(x)
    return abs(t) == math.inf if t.uop.dtype.is_float else full_like(t, False, dtype=np.bool_)


def isfinite(x) -> Tensor:
    t = T(x)
    return abs(t) < math.inf if t.uop.dtype.is_float else full_like(t, True, dtype=np.bool_)


def _promote(*xs: Tensor):
    """NumPy 2 result_type with weak Python scalars: the dtype arrays and scalars combine to."""
    strong = [t.uop.dtype for t in xs if not t.weak]
    kinds = [t.uop.dtype.kind for t in xs if t.weak]
    if not strong: return result_type(*(t.uop.dtype for t in xs))
    dt = result_type(*strong)
    rep = {"b": False, "i": 0, "u": 0, "f": 0.0}
    return dtypes.from_numpy(np.result_type(dt.np, *(rep[k] for k in kinds)))


def where(condition, x=None, y=None) -> Tensor:
    """Elements of x where condition is true, else of y (both broadcast); where(condition) is nonzero(condition)."""
    if x is None and y is None:
        from numfn.numpy.indexing import nonzero
        return nonzero(condition)
    if x is None or y is None: raise ValueError("either both or neither of x and y should be given")
    if any(isinstance(v, Tensor) and v.runtime_length for v in (condition, x, y)):
        from numfn import dynamic
        return dynamic.elementwise(where, [condition, x, y])
    c, a, b = _truth(condition), T(x), T(y)
    dt = _promote(a, b)
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    u = c._broadcast(shape).alu(Ops.WHERE, Tensor(a.uop.cast(dt))._broadcast(shape),
                                Tensor(b.uop.cast(dt))._broadcast(shape))
    return Tensor(u, weak=a.weak and b.weak)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None) -> Tensor:  # noqa: A002 - NumPy's names
    """minimum(maximum(a, a_min), a_max) with NumPy's promotion; either bound may be None (NumPy 2.1 also spells
    them min= and max=)."""
    refuse("clip", out=out)
    a_min = min if a_min is None else a_min
    a_max = max if a_max is None else a_max
    if a_min is None and a_max is None: raise ValueError("One of max or min must be given")
    out = Tensor(T(a).uop)   # np.clip converts `a` with asarray: a Python scalar there is a strong array
    dt = out.uop.dtype
    # like NumPy, a Python-int bound beyond the dtype's range on the side it cannot reach is no bound at all
    if dt.is_int and not out.weak:
        if _is_pyint(a_min) and a_min < dt.min: a_min = None
        if _is_pyint(a_max) and a_max > dt.max: a_max = None
        if a_min is None and a_max is None: return out
    if a_min is not None: out = maximum(out, a_min)
    if a_max is not None: out = minimum(out, a_max)
    return out


def _is_pyint(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


