"""Statistics: var, std, average and the NaN-ignoring nanmean, nanvar, nanstd.

Each follows the order of operations of NumPy's own implementation (the mean accumulated in `dtype` and divided
into it, deviations in the array's dtype, the squared deviations summed in `dtype`), so the result dtypes, and the
values up to summation order, are NumPy's. Medians, percentiles and quantiles need sorting and are not here yet.
"""
from __future__ import annotations

import math

import numpy as np

from numfn.args import as_dtype, normalize_axes, normalize_axis, refuse
from numfn.dtype import dtypes, result_type
from numfn.tensor import Tensor, add_check, reduction_mask, tensor_method
from numfn.uop import Ops, UOp

T = Tensor.lift

__all__ = ['var', 'std', 'average', 'nanmean', 'nanvar', 'nanstd']


def _ddof(ddof, correction):
    """NumPy 2's correction= is another name for ddof=."""
    if correction is None: return ddof
    if ddof != 0: raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def _divide_into(total: Tensor, count) -> Tensor:
    """total / count in total's own dtype, as NumPy's true_divide(total, count, out=total, casting='unsafe')."""
    return Tensor._elementwise("true_divide", Ops.FDIV, total, count).astype(total.uop.dtype)


def _check_axis_of_0d(t: Tensor, axis) -> None:
    if t.ndim == 0 and axis is not None:   # like mean, var and std check the axis of a 0-d array
        for a in (axis if isinstance(axis, (tuple, list)) else (axis,)): normalize_axis(a, 0)


def _squared_deviations(t: Tensor, axes, dtype, keepdims, where, mean, count, nan_mask=None):
    """(sum of squared deviations from the mean over `axes`, count shaped like that sum): the mean is the sum over
    `count` elements (a Python int or an int64 Tensor with the reduced axes kept) unless `mean` is given; with
    `nan_mask`, the NaN places deviate by zero."""
    if mean is None:
        m = _divide_into(t.sum(axis=axes, dtype=dtype, keepdims=True, where=where), count)
    else:
        m = T(mean)
    dev = t - m
    if nan_mask is not None:   # NumPy subtracts into the array itself, in its dtype, and zeroes the NaN places
        dev = Tensor(nan_mask.uop.alu(Ops.WHERE, UOp.const_like(t.uop.dtype, 0, t.shape), dev.astype(t.dtype).uop))
    if dev.uop.dtype.is_complex:   # NumPy squares the parts and adds them: |dev|**2, a real value
        re, im = dev.real, dev.imag
        sq, dtype = re * re + im * im, None if dtype is None else as_dtype(dtype).component
    else: sq = dev * dev
    total = sq.sum(axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    if isinstance(count, Tensor) and not keepdims: count = count.reshape(total.shape)
    return total, count


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None) -> Tensor:
    """The variance: mean squared deviation from the mean, divided by max(n - ddof, 0) instead of n (so inf or NaN
    for too few elements, where NumPy warns). Integers and bools compute in float64."""
    refuse("var", out=out)
    return _var(T(a), axis, dtype, ddof, keepdims, where, mean, correction)


def _var(t: Tensor, axis, dtype, ddof, keepdims, where, mean, correction) -> Tensor:
    ddof = _ddof(ddof, correction)
    _check_axis_of_0d(t, axis)
    axes = normalize_axes(axis, t.ndim)
    mask = reduction_mask(where, t.shape)
    if dtype is None and not t.uop.dtype.is_inexact: dtype = dtypes.float64
    if mask is None: count = math.prod(t.shape[a] for a in axes)
    else: count = Tensor(mask.cast(dtypes.int64)).sum(axis=axes, keepdims=True)
    total, count = _squared_deviations(t, axes, dtype, keepdims, where, mean, count)
    dof = max(count - ddof, 0) if not isinstance(count, Tensor) else Tensor._elementwise(
        "maximum", Ops.MAX, count - ddof, 0)
    return _divide_into(total, dof)


def _sqrt_into(v: Tensor) -> Tensor:
    """sqrt(v) stored back into v's dtype (NumPy's std takes the root in place)."""
    from numfn.numpy.ufuncs import sqrt
    return sqrt(v).astype(v.uop.dtype)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None) -> Tensor:
    """The standard deviation, sqrt(var(...)) with var's arguments."""
    refuse("std", out=out)
    return _sqrt_into(_var(T(a), axis, dtype, ddof, keepdims, where, mean, correction))


# the ndarray methods take no correction= (NumPy's functions do)
@tensor_method("var")
def _var_method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None) -> Tensor:
    return var(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean)


@tensor_method("std")
def _std_method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None) -> Tensor:
    return std(self, axis, dtype, out, ddof, keepdims, where=where, mean=mean)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The (weighted) average along `axis`; with returned=True also the sum of the weights (the element count
    without weights), broadcast to the average's shape. Weights either have a's shape or the shape of a's axes
    `axis` (in that order). Weights summing to zero are NumPy's ZeroDivisionError, raised by the call."""
    t = T(a)
    axes = None if axis is None else normalize_axes(axis if isinstance(axis, tuple) else
                                                    tuple(axis) if isinstance(axis, list) else (axis,), t.ndim)
    if weights is None:
        avg = t.mean(axis=axes, keepdims=keepdims)
        scale = Tensor(UOp.const(avg.uop.dtype, t.size / avg.size))   # NumPy's ZeroDivisionError for an empty result
    else:
        w = T(weights)
        if t.uop.dtype.is_float: rdt = result_type(t.uop.dtype, w.uop.dtype)
        else: rdt = result_type(t.uop.dtype, w.uop.dtype, dtypes.float64)
        if t.shape != w.shape:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.shape != tuple(t.shape[ax] for ax in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            # weights given along `axes` in that order: put them in a's axis order, then broadcast along a
            w = w.transpose(tuple(int(i) for i in np.argsort(axes)))
            w = w.reshape(tuple(s if ax in axes else 1 for ax, s in enumerate(t.shape)))
        scale = w.sum(axis=axes, dtype=rdt, keepdims=keepdims)
        add_check(scale == 0, 0, _zero_weights)
        prod = Tensor._elementwise("multiply", Ops.MUL, t.astype(rdt), w.astype(rdt))
        avg = Tensor._elementwise("true_divide", Ops.FDIV, prod.sum(axis=axes, keepdims=keepdims), scale)
    if not returned: return avg
    if scale.shape != avg.shape: scale = scale.broadcast_to(avg.shape)
    return avg, scale


def _zero_weights(_payload: int) -> ZeroDivisionError:
    return ZeroDivisionError("Weights sum to zero, can't be normalized")


# ---- NaN-ignoring statistics ----------------------------------------------------------------------------------
def _nan_split(a):
    t = T(a)
    if not t.uop.dtype.is_float: return t, None
    nan = t != t
    return Tensor(nan.uop.alu(Ops.WHERE, UOp.const_like(t.uop.dtype, 0, t.shape), t.uop)), nan


def _inexact_dtype(dtype):
    if dtype is None: return None
    dt = as_dtype(dtype)
    if not dt.is_float: raise TypeError("If a is inexact, then dtype must be inexact")
    return dt


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None) -> Tensor:
    """The mean of the non-NaN elements; NaN for a slice without any (where NumPy warns)."""
    refuse("nanmean", out=out)
    arr, nan = _nan_split(a)
    if nan is None: return arr.mean(axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    dtype = _inexact_dtype(dtype)
    count = (~nan).sum(axis=axis, dtype=np.int64, keepdims=keepdims, where=where)
    return _divide_into(arr.sum(axis=axis, dtype=dtype, keepdims=keepdims, where=where), count)


def _nanvar(a, axis, dtype, ddof, keepdims, where, mean, correction) -> Tensor:
    arr, nan = _nan_split(a)
    if nan is None: return _var(arr, axis, dtype, ddof, keepdims, where, mean, correction)
    dtype = _inexact_dtype(dtype)
    ddof = _ddof(ddof, correction)
    axes = normalize_axes(axis, arr.ndim)
    count = (~nan).sum(axis=axes, dtype=np.int64, keepdims=True, where=where)
    total, count = _squared_deviations(arr, axes, dtype, keepdims, where, mean, count, nan_mask=nan)
    dof = count - ddof
    res = _divide_into(total, dof)
    # NumPy replaces the result by NaN where there are too few elements (dof <= 0)
    return Tensor((dof <= 0).uop.alu(Ops.WHERE, UOp.const_like(res.uop.dtype, math.nan, res.shape), res.uop))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
           correction=None) -> Tensor:
    """The variance of the non-NaN elements; NaN where count - ddof <= 0 (where NumPy warns)."""
    refuse("nanvar", out=out)
    return _nanvar(a, axis, dtype, ddof, keepdims, where, mean, correction)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
           correction=None) -> Tensor:
    """sqrt(nanvar(...)) with nanvar's arguments."""
    refuse("nanstd", out=out)
    return _sqrt_into(_nanvar(a, axis, dtype, ddof, keepdims, where, mean, correction))
