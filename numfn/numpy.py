"""numfn.numpy: NumPy-style functions over traced arrays.

Inside a compiled function, `numfn.numpy.sin(x)` and `np.sin(x)` both trace (NumPy hands Tensors to these
functions through __array_ufunc__ / __array_function__). Every function follows NumPy's semantics: broadcasting,
dtype promotion (NumPy 2 rules, Python scalars are weak), result shapes and the errors NumPy raises.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any
from collections.abc import Sequence

import numpy as np

from numfn.dtype import check_scalar_fits, dtypes, resolve_ufunc, result_type, scalar_dtype
from numfn.errors import user_location
from numfn.tensor import Tensor, _as_dtype, _norm_axis, matmul
from numfn.uop import Ops, UOp

__all__ = ["sin", "cos", "tan", "tanh", "exp", "exp2", "log", "log2", "sqrt", "abs", "absolute", "floor", "ceil",
           "trunc", "where", "maximum", "minimum", "clip", "zeros", "ones", "full", "eye", "arange", "zeros_like",
           "ones_like", "full_like", "stack", "concatenate", "sum", "mean", "max", "min", "amax", "amin", "prod",
           "matmul", "dot", "cumsum", "add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
           "remainder", "mod", "divmod", "power", "negative", "positive", "invert", "bitwise_and", "bitwise_or",
           "bitwise_xor", "left_shift", "right_shift",
           "bitwise_not", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "square", "sign", "isnan", "isinf", "isfinite", "reshape",
           "transpose", "swapaxes", "expand_dims", "squeeze", "broadcast_to", "ravel", "astype", "asarray", "array",
           "ndim", "shape", "size"]

T = Tensor.lift

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
    """Elements of x where condition is true, else of y (both broadcast); the one-argument form is not traceable."""
    if x is None or y is None:
        raise TypeError(f"numfn.numpy.where needs three arguments: where(condition, x, y) (at {user_location()})")
    c, a, b = _truth(condition), T(x), T(y)
    dt = _promote(a, b)
    from numfn.tensor import broadcast_shapes
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    u = c._broadcast(shape).alu(Ops.WHERE, Tensor(a.uop.cast(dt))._broadcast(shape),
                                Tensor(b.uop.cast(dt))._broadcast(shape))
    return Tensor(u, weak=a.weak and b.weak)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None) -> Tensor:  # noqa: A002 - NumPy's names
    """minimum(maximum(a, a_min), a_max) with NumPy's promotion; either bound may be None (NumPy 2.1 also spells
    them min= and max=)."""
    from numfn.tensor import _refuse
    _refuse("clip", out=out)
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


# ---- creation -------------------------------------------------------------------------------------------------
def _shape(shape) -> tuple[int, ...]:
    shape = (shape,) if not isinstance(shape, (tuple, list)) else shape
    out = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in out): raise ValueError("negative dimensions are not allowed")
    return out


def full(shape, fill_value, dtype=None) -> Tensor:
    """An array of `shape` filled with `fill_value` (a constant: it costs no memory until stored)."""
    if isinstance(fill_value, (Tensor, np.ndarray, list, tuple)):   # an array fill is broadcast
        t = T(fill_value)
        dt = t.uop.dtype if dtype is None else _as_dtype(dtype)
        return t.astype(dt).broadcast_to(_shape(shape))
    dt = scalar_dtype(fill_value) if dtype is None else _as_dtype(dtype)
    check_scalar_fits(fill_value, dt, "fill value")   # like NumPy: a Python int must fit an integer dtype
    return Tensor(UOp.const_like(dt, fill_value, _shape(shape)))


def zeros(shape, dtype=np.float64) -> Tensor: return full(shape, 0, dtype)
def ones(shape, dtype=np.float64) -> Tensor: return full(shape, 1, dtype)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None) -> Tensor:
    t = T(a)
    return full(t.shape if shape is None else shape, fill_value, t.uop.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None) -> Tensor: return full_like(a, 0, dtype, shape=shape)
def ones_like(a, dtype=None, order="K", subok=True, shape=None) -> Tensor: return full_like(a, 1, dtype, shape=shape)


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """NumPy's arange: the values are computed while tracing and embedded as a constant."""
    for v in (start, stop, step):
        if isinstance(v, Tensor):
            raise TypeError(f"arange needs Python numbers, not traced arrays (at {user_location()})")
    npdt = None if dtype is None else _as_dtype(dtype).np
    values = np.arange(start, stop, step, dtype=npdt) if stop is not None else np.arange(start, step=step, dtype=npdt)
    return T(values)


def eye(N: int, M: int | None = None, k: int = 0, dtype=np.float64) -> Tensor:
    M = N if M is None else M
    rows = arange(N, dtype=np.int64).reshape(N, 1) if N else zeros((0, 1), np.int64)
    cols = arange(M, dtype=np.int64).reshape(1, M) if M else zeros((1, 0), np.int64)
    return (rows + k == cols).astype(dtype)


# ---- joining --------------------------------------------------------------------------------------------------
def concatenate(arrays: Sequence, axis: int | None = 0, out=None, dtype=None, casting="same_kind") -> Tensor:
    from numfn.tensor import _refuse
    _refuse("concatenate", out=out)
    ts = [T(a) if dtype is None else T(a).astype(dtype) for a in arrays]
    if not ts: raise ValueError("need at least one array to concatenate")
    if axis is None: ts, axis = [t.reshape(-1) for t in ts], 0
    nd = ts[0].ndim
    if nd == 0: raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(ts):
        if t.ndim != nd:
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly, but "
                             f"the array at index 0 has {nd} dimension(s) and the array at index {i} has {t.ndim} "
                             "dimension(s)")
    ax = _norm_axis(axis, nd)
    for i, t in enumerate(ts):
        for d in range(nd):
            if d != ax and t.shape[d] != ts[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match exactly,"
                                 f" but along dimension {d}, the array at index 0 has size {ts[0].shape[d]} and the "
                                 f"array at index {i} has size {t.shape[d]}")
    dt = result_type(*(t.uop.dtype for t in ts))
    total = builtins.sum(t.shape[ax] for t in ts)
    out_shape = ts[0].shape[:ax] + (total,) + ts[0].shape[ax + 1:]
    # each piece padded to the full length; a mask of where it lies picks it (exact for -0.0 and NaN, unlike a sum)
    out, offset, pieces = None, 0, []
    for t in ts:
        n = t.shape[ax]
        pad = tuple((offset, total - offset - n) if d == ax else (0, 0) for d in range(nd))
        if n: pieces.append((t.uop.cast(dt).pad(pad), UOp.const_like(dtypes.bool, True, t.shape).pad(pad)))
        offset += n
    if not pieces: return zeros(out_shape, dt)
    out = pieces[-1][0]
    for value, mask in reversed(pieces[:-1]): out = mask.alu(Ops.WHERE, value, out)
    return Tensor(out)


def stack(arrays: Sequence, axis: int = 0) -> Tensor:
    ts = [T(a) for a in arrays]
    if not ts: raise ValueError("need at least one array to stack")
    if any(t.shape != ts[0].shape for t in ts): raise ValueError("all input arrays must have the same shape")
    ax = _norm_axis(axis, ts[0].ndim + 1)
    return concatenate([t.expand_dims(ax) for t in ts], axis=ax)


# ---- reductions and products ----------------------------------------------------------------------------------
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
    return T(a).sum(axis, dtype, out, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:
    return T(a).prod(axis, dtype, out, keepdims, initial, where)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
    return T(a).max(axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
    return T(a).min(axis, out, keepdims, initial, where)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None) -> Tensor:
    return T(a).mean(axis, dtype, out, keepdims, where)


def cumsum(a, axis=None, dtype=None, out=None) -> Tensor: return T(a).cumsum(axis, dtype, out)
amax, amin = max, min


def dot(a, b) -> Tensor:
    """NumPy's dot: products for scalars, matmul for 1-D and 2-D, and for N-D a sum over the last axis of `a`
    and the second-to-last of `b`."""
    # np.dot converts its operands with asarray: a Python scalar is a strong int64/float64 array, not weak
    a, b = (Tensor(T(v).uop) for v in (a, b))
    if a.ndim == 0 or b.ndim == 0: return multiply(a, b)
    if b.ndim <= 2: return matmul(a, b)
    out = result_type(a.uop.dtype, b.uop.dtype)
    # a[..., k] . b[..., k, m] -> a.shape[:-1] + b.shape[:-2] + b.shape[-1:]
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
                         f"{b.shape[-2]} (dim {b.ndim - 2})")
    k = a.shape[-1]
    bm = b.swapaxes(-1, -2)  # (..., m, k)
    ae = a.reshape(a.shape[:-1] + (1,) * (b.ndim - 1) + (k,))
    # sum() widens small integers; casting back wraps exactly like accumulating in `out` would
    return multiply(ae, bm).sum(axis=-1).astype(out)


# ---- shapes ---------------------------------------------------------------------------------------------------
def reshape(a, shape, order: str = "C") -> Tensor: return T(a).reshape(shape, order=order)
def ndim(a) -> int: return T(a).ndim
def shape(a) -> tuple[int, ...]: return T(a).shape
def size(a, axis=None) -> int: return T(a).size if axis is None else T(a).shape[axis]
def transpose(a, axes=None) -> Tensor: return T(a).transpose(*(() if axes is None else (axes,)))
def swapaxes(a, axis1: int, axis2: int) -> Tensor: return T(a).swapaxes(axis1, axis2)
def expand_dims(a, axis) -> Tensor: return T(a).expand_dims(axis)
def squeeze(a, axis=None) -> Tensor: return T(a).squeeze(axis)
def broadcast_to(a, shape) -> Tensor: return T(a).broadcast_to(shape)
def ravel(a) -> Tensor: return T(a).ravel()
def astype(a, dtype) -> Tensor: return T(a).astype(dtype)


def asarray(a, dtype: Any = None) -> Tensor:
    return T(a).astype(dtype, copy=False) if dtype is not None else T(a)   # the array itself when its dtype matches


array = asarray
