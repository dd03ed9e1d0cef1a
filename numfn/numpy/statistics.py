"""Statistics: var, std, average, median, percentile, quantile and the NaN-ignoring nanmean, nanvar, nanstd,
nanmedian, nanpercentile, nanquantile.

Each follows the order of operations of NumPy's own implementation (the mean accumulated in `dtype` and divided
into it, deviations in the array's dtype, the squared deviations summed in `dtype`), so the result dtypes, and the
values up to summation order, are NumPy's. Medians and quantiles sort the reduced axes (numfn.numpy.sorting's native
sort; NumPy partitions, which puts the same values at the positions read) and then compute NumPy's indices, weights
and interpolation with NumPy's formulas in NumPy's dtypes, so their values are NumPy's exactly. The NaN-ignoring
versions read each row's first n elements, n being its count of non-NaN values (NaNs sort last).
"""
from __future__ import annotations

import math
from typing import Literal, cast, overload

import numpy as np

from numfn.args import as_dtype, normalize_axes, normalize_axis, refuse
from numfn.dtype import dtypes, result_type
from numfn.errors import unsupported
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes, gather, reduction_mask, tensor_method
from numfn.ir.uop import Ops, UOp
from numfn.numpy._typing import ArrayLike, Axes, DTypeLike

T = Tensor.lift

__all__ = ['var', 'std', 'average', 'nanmean', 'nanvar', 'nanstd', 'median', 'percentile', 'quantile', 'nanmedian',
           'nanpercentile', 'nanquantile']


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


def var(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
        keepdims: bool = False, *, where: ArrayLike | None = None, mean: ArrayLike | None = None,
        correction: float | None = None) -> Tensor:
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
    count: int | Tensor
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


def std(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
        keepdims: bool = False, *, where: ArrayLike | None = None, mean: ArrayLike | None = None,
        correction: float | None = None) -> Tensor:
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


@overload
def average(a: ArrayLike, axis: Axes = None, weights: ArrayLike | None = None, returned: Literal[False] = False, *,
            keepdims: bool = False) -> Tensor: ...
@overload
def average(a: ArrayLike, axis: Axes, weights: ArrayLike | None, returned: Literal[True], *,
            keepdims: bool = False) -> tuple[Tensor, Tensor]: ...
@overload
def average(a: ArrayLike, axis: Axes = None, weights: ArrayLike | None = None, *, returned: Literal[True],
            keepdims: bool = False) -> tuple[Tensor, Tensor]: ...
@overload
def average(a: ArrayLike, axis: Axes = None, weights: ArrayLike | None = None, returned: bool = False, *,
            keepdims: bool = False) -> Tensor | tuple[Tensor, Tensor]: ...


def average(a: ArrayLike, axis: Axes = None, weights: ArrayLike | None = None, returned: bool = False, *,
            keepdims: bool = False) -> Tensor | tuple[Tensor, Tensor]:
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
    """(a with NaN replaced by 0, the NaN mask), or (a, None) for arrays that cannot hold NaN; a complex value is
    NaN when either part is."""
    t = T(a)
    if not t.uop.dtype.is_inexact: return t, None
    nan = t != t
    return Tensor(nan.uop.alu(Ops.WHERE, UOp.const_like(t.uop.dtype, 0, t.shape), t.uop)), nan


def _inexact_dtype(dtype):
    if dtype is None: return None
    dt = as_dtype(dtype)
    if not dt.is_inexact: raise TypeError("If a is inexact, then dtype must be inexact")
    return dt


def nanmean(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
            *, where: ArrayLike | None = None) -> Tensor:
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


def nanvar(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
           keepdims: bool = False, *, where: ArrayLike | None = None, mean: ArrayLike | None = None,
           correction: float | None = None) -> Tensor:
    """The variance of the non-NaN elements; NaN where count - ddof <= 0 (where NumPy warns)."""
    refuse("nanvar", out=out)
    return _nanvar(a, axis, dtype, ddof, keepdims, where, mean, correction)


def nanstd(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
           keepdims: bool = False, *, where: ArrayLike | None = None, mean: ArrayLike | None = None,
           correction: float | None = None) -> Tensor:
    """sqrt(nanvar(...)) with nanvar's arguments."""
    refuse("nanstd", out=out)
    return _sqrt_into(_nanvar(a, axis, dtype, ddof, keepdims, where, mean, correction))


# ---- order statistics: median, percentile, quantile ------------------------------------------------------------
class _Rows:
    """An array's reduced axes sorted, as rows: `s` (kept shape + (m,)), and per row the count `n` of elements that
    count (an int, or an int64 Tensor of the kept shape: non-NaN elements, or the elements inside run-time lengths),
    which are the row's first n (NaNs, and the positions past a run-time length, sort last). `lengths`: the run-time
    lengths of the kept axes (an array of run-time length keeps those of the axes it does not reduce)."""

    def __init__(self, a, axis, skip_nan: bool, complex_ok: bool = False):
        from numfn.trace import dynamic
        from numfn.numpy.sorting import filled
        t = a if isinstance(a, dynamic.DynTensor) else T(a)
        self.dtype = t.uop.dtype
        if self.dtype.kind not in ("biufc" if complex_ok else "biuf"):
            raise TypeError("a must be an array of real numbers")
        self.ndim = t.ndim
        self.axes = normalize_axes(axis, t.ndim)
        self.kept = tuple(i for i in range(t.ndim) if i not in self.axes)
        bound = t.uop.shape
        assert bound is not None   # an array's value is a tensor-level node
        kept_shape = tuple(bound[i] for i in self.kept)
        self.m = math.prod(bound[i] for i in self.axes)
        dyn = isinstance(t, dynamic.DynTensor)
        self.lengths = tuple(t.lengths[i] for i in self.kept) if dyn else (None,) * len(self.kept)
        lengths = tuple(t.lengths[i] for i in self.axes) if dyn else ()
        # the positions past a run-time length fill with the dtype's last value in sort order: they sort last
        value = filled(cast(dynamic.DynTensor, t)) if any(ln is not None for ln in lengths) else Tensor(t.uop)
        rows = value.transpose(self.kept + self.axes).reshape(kept_shape + (self.m,))
        self.shape = kept_shape
        self.n: int | Tensor = self.m
        if any(ln is not None for ln in lengths):   # the product of the reduced axes' sizes, at run time
            count = Tensor(UOp.const(dtypes.int64, math.prod(bound[i] for i in self.axes if t.lengths[i] is None)))
            for ln in lengths:
                if ln is not None: count = count * Tensor(ln)
            self.n = Tensor(count._broadcast(kept_shape))
        self.total = self.n   # the elements, NaNs included
        if skip_nan and self.dtype.is_inexact:
            self.n = (rows == rows).sum(axis=-1, dtype=np.int64)   # the positions past a length hold NaN
        self.rows = rows
        self.s: Tensor | None = None
        self.static = isinstance(self.n, int)

    def order(self, *positions) -> None:
        """Make the rows readable at `positions` (index arrays, as `pick` takes them): where every one is known
        while tracing (a static count and static q), the native select puts just those positions in place (NumPy's
        partition: linear time); else the rows are sorted."""
        from numfn.numpy.sorting import SELECT_MAX, select_last, sort_last
        if self.s is not None: return
        known = [T(p).known() for p in positions] if self.static else [None]
        if all(k is not None for k in known):
            kth = sorted({int(v) for k in known for v in np.ravel(cast(np.ndarray, k)) if 0 <= v < self.m})
            if 0 < len(kth) <= SELECT_MAX:
                self.s = select_last(self.rows, kth)
                return
        self.s = sort_last(self.rows, False)

    def pick(self, idx) -> Tensor:
        """s at per-row positions `idx` (an int Tensor of shape q's shape + the kept shape, or broadcastable)."""
        idx = T(idx).astype(np.int64)
        self.order()   # sorted, unless `order` was told the positions
        assert self.s is not None
        shape = broadcast_shapes(idx.shape, self.shape)
        if 0 in shape: return Tensor(UOp.const_like(self.s.uop.dtype, 0, shape))
        lead = len(shape) - len(self.shape)
        coords = [Tensor(UOp.iota(k).reshape(tuple(k if j == lead + i else 1 for j in range(len(shape)))))
                  for i, k in enumerate(self.shape)]
        return gather(self.s, coords + [idx])

    def last(self) -> Tensor:
        """Each row's last element that counts."""
        return self.pick(Tensor.lift(self.n) - 1)

    def finish(self, result: Tensor, qdims: int, keepdims: bool) -> Tensor:
        """The result (q's axes, then the kept axes) with keepdims' axes of size 1 where the reduced ones were, and
        the kept axes' run-time lengths."""
        lengths: tuple[UOp | None, ...] | list[UOp | None] = (None,) * qdims + self.lengths
        if keepdims:
            full, kept = list(result.shape[:qdims]), iter(zip(result.shape[qdims:], self.lengths))
            lengths = [None] * qdims
            for i in range(self.ndim):
                size, length = (1, None) if i in self.axes else next(kept)
                full.append(size)
                lengths.append(length)
            result = result.reshape(tuple(full))
        if all(ln is None for ln in lengths): return result
        from numfn.trace import dynamic
        return dynamic.DynTensor(result.uop, lengths=tuple(lengths))


def _nan_to(result: Tensor, where: Tensor, value: Tensor) -> Tensor:
    from numfn.numpy.ufuncs import where as where_
    return where_(where, value.astype(result.uop.dtype), result)


def median(a: ArrayLike, axis: Axes = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Tensor:
    """The median along `axis` (None: of everything): the middle element, or the mean of the two middle ones (in
    mean's dtype: float64 for integers); NaN where the slice holds a NaN. overwrite_input= is accepted (numfn never
    changes the input)."""
    refuse("median", out=out)
    return _median(a, axis, keepdims, False)


def nanmedian(a: ArrayLike, axis: Axes = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Tensor:
    """The median of the non-NaN elements; NaN for a slice without any (where NumPy warns)."""
    refuse("nanmedian", out=out)
    return _median(a, axis, keepdims, True)


def _median(a, axis, keepdims, skip_nan: bool) -> Tensor:
    r = _Rows(a, axis, skip_nan, complex_ok=True)   # complex values: NumPy's sort order (numfn.numpy.sorting)
    from numfn.numpy.manipulation import stack
    from numfn.numpy.ufuncs import isnan, where
    mean_dt = Tensor(UOp.const_like(r.dtype, 0, (1,))).mean().uop.dtype
    nothing = complex(math.nan, math.nan) if mean_dt.is_complex else math.nan   # the mean of nothing: 0 / 0
    if r.static and r.m == 0:   # (NumPy warns)
        return r.finish(Tensor(UOp.const_like(mean_dt, nothing, r.shape)), 0, keepdims)
    n = Tensor.lift(r.n)
    nan_check = r.dtype.is_inexact and not skip_nan   # a NaN in the row is the result: the last element tells
    r.order((n - 1) // 2, n // 2, *([n - 1] if nan_check else []))
    lo, hi = r.pick((n - 1) // 2), r.pick(n // 2)
    one = stack([lo], axis=-1).mean(axis=-1)            # NumPy: the mean of the middle element(s)
    two = stack([lo, hi], axis=-1).mean(axis=-1)
    if r.static: res = one if r.m % 2 else two
    else: res = where(n % 2 == 1, one, two)
    if not r.static:
        res = _nan_to(res, n == 0, Tensor(UOp.const(res.uop.dtype, nothing)))
        if skip_nan and r.dtype.is_complex: res = _all_nan_complex(r, res)
    if nan_check:
        last = r.last()
        res = _nan_to(res, isnan(last), last)
    return r.finish(res, 0, keepdims)


def _all_nan_complex(r: _Rows, res: Tensor) -> Tensor:
    """nanmedian of complex rows that hold only NaNs, as NumPy's: its one-dimensional path (no axis kept, or rows of
    600 elements or more) returns the row's last element, the other one NaN (nan + 0j); rows without elements stay
    the mean of nothing."""
    from numfn.numpy.ufuncs import where
    if not r.kept or r.m >= 600:
        last = gather(r.rows, [Tensor(UOp.iota(k).reshape(tuple(k if j == i else 1 for j in range(len(r.shape)))))
                               for i, k in enumerate(r.shape)] + [Tensor.lift(r.total) - 1])
    else: last = Tensor(UOp.const(res.uop.dtype, math.nan))
    return where((Tensor.lift(r.n) == 0) & (Tensor.lift(r.total) > 0), last.astype(res.uop.dtype), res)


# NumPy's quantile methods: the virtual index of q among n sorted elements, and how the weight of the next element
# is adjusted ('discrete' methods index an element; the others interpolate between two)
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}
_DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen",
            "weibull", "linear", "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint", "nearest")


def percentile(a: ArrayLike, q: ArrayLike, axis: Axes = None, out: None = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Tensor:
    """The q-th percentiles (q in [0, 100]) along `axis`, by NumPy's `method` (default 'linear'); q's axes come
    first in the result. weights= (method 'inverted_cdf' only) is not supported."""
    refuse("percentile", out=out)
    return _quantile(a, q, axis, method, keepdims, weights, True, False)


def quantile(a: ArrayLike, q: ArrayLike, axis: Axes = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Tensor:
    """The q-th quantiles (q in [0, 1]) along `axis`, by NumPy's `method` (default 'linear')."""
    refuse("quantile", out=out)
    return _quantile(a, q, axis, method, keepdims, weights, False, False)


def nanpercentile(a: ArrayLike, q: ArrayLike, axis: Axes = None, out: None = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Tensor:
    """percentile of the non-NaN elements; NaN for a slice without any."""
    refuse("nanpercentile", out=out)
    return _quantile(a, q, axis, method, keepdims, weights, True, True)


def nanquantile(a: ArrayLike, q: ArrayLike, axis: Axes = None, out: None = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Tensor:
    """quantile of the non-NaN elements; NaN for a slice without any."""
    refuse("nanquantile", out=out)
    return _quantile(a, q, axis, method, keepdims, weights, False, True)


def _q_values(q, percent: bool) -> tuple[Tensor, bool]:
    """q as NumPy's quantile code sees it (divided by 100 for percentiles), checked to lie in [0, 1], and whether it
    was a Python scalar (NumPy then interpolates with a weak Python float)."""
    weak = type(q) in (int, float)
    what = "Percentiles must be in the range [0, 100]" if percent else "Quantiles must be in the range [0, 1]"
    if isinstance(q, Tensor):
        qt = Tensor(q.uop)
        if percent: qt = Tensor._elementwise("true_divide", Ops.FDIV, qt, 100)
        if qt.size: add_check(~((qt >= 0) & (qt <= 1)).all(), 0, lambda _: ValueError(what))
        return qt, False
    qn = np.asanyarray(q)
    if qn.dtype.kind not in "biuf": raise TypeError(f"q must be real numbers, not {qn.dtype}")
    if percent: qn = np.true_divide(qn, 100)
    if qn.size and not ((qn >= 0) & (qn <= 1)).all(): raise ValueError(what)
    return Tensor(Tensor.lift(qn).uop), weak


def _quantile(a, q, axis, method, keepdims, weights, percent: bool, skip_nan: bool) -> Tensor:
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        raise unsupported("weights= of numpy.quantile and numpy.percentile")
    qt, weak = _q_values(q, percent)
    if qt.ndim > 2: raise ValueError("q must be a scalar or 1d")
    if method not in _METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: dict_keys({list(_METHODS)!r})")
    from numfn.trace import dynamic
    if skip_nan and not isinstance(a, dynamic.DynTensor) and T(a).size == 0:
        # NumPy: nanmean of the empty array (NaN, or an empty result), whatever q
        return nanmean(a, axis, keepdims=keepdims)
    r = _Rows(a, axis, skip_nan)
    if r.static and r.m == 0: raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    from numfn.numpy.ufuncs import ceil, floor, isnan, rint, where
    qdims = qt.ndim
    qdt = qt.uop.dtype
    # the counts as NumPy's Python ints meet q: weak, converted to q's dtype
    if r.static: n = Tensor.lift(r.n)
    else:
        n = Tensor(cast(Tensor, r.n).uop).astype(qdt if qdt.is_float else np.int64)
        n = n.reshape((1,) * qdims + n.shape)
    qb = qt.reshape(qt.shape + (1,) * len(r.shape))   # q's axes first, then the kept ones
    count = Tensor.lift(r.n) if r.static else Tensor(cast(Tensor, r.n).uop).reshape((1,) * qdims + r.shape)

    def last_index() -> Tensor:
        return count - 1

    nan_check = r.dtype.is_inexact and not skip_nan   # a NaN in the row is the result: the last element tells
    last_position = [last_index()] if nan_check else []

    if method in _DISCRETE or (method == "linear" and not qdt.is_float):
        if method == "lower": vi = floor((n - 1) * qb).astype(np.int64)
        elif method == "higher": vi = ceil((n - 1) * qb).astype(np.int64)
        elif method == "nearest": vi = rint((n - 1) * qb).astype(np.int64)
        elif method == "linear": vi = ((n - 1) * qb).astype(np.int64)
        else:
            index = n * qb - 1 - (0.5 if method == "closest_observation" else 0)
            prev = floor(index)
            gamma = index - prev
            at_prev = gamma == 0
            if method == "closest_observation": at_prev = at_prev & (prev % 2 == 1)
            vi = where(at_prev, prev, prev + 1).astype(np.int64)
            vi = where(vi < 0, 0, vi)
        r.order(vi, *last_position)
        res = r.pick(vi)
    else:
        if method == "linear": vi = (n - 1) * qb
        elif method == "midpoint": vi = 0.5 * (floor((n - 1) * qb) + ceil((n - 1) * qb))
        elif method == "averaged_inverted_cdf": vi = n * qb - 1
        else:
            alpha, beta = _ALPHA_BETA[method]
            vi = n * qb + (alpha + qb * (1 - alpha - beta)) - 1
        vdt = vi.uop.dtype
        top = last_index().astype(vdt) if not r.static else r.m - 1
        floor_vi = floor(vi)
        above, below_zero = vi >= top, vi < 0   # NumPy: past the end, the last element; before the start, the first
        prev = where(below_zero, 0, where(above, -1, floor_vi))
        nxt = where(below_zero, 0, where(above, -1, floor_vi + 1))
        prev, nxt = prev.astype(np.int64), nxt.astype(np.int64)
        gamma = (vi - prev.astype(vdt)).astype(vdt)
        if method == "averaged_inverted_cdf": gamma = where(gamma == 0, 0.5, 1.0).astype(vdt)
        elif method == "midpoint": gamma = where(vi % 1 == 0, 0.0, 0.5).astype(vdt)
        # index -1 is the last element that counts
        prev = where(prev < 0, last_index(), prev)
        nxt = where(nxt < 0, last_index(), nxt)
        r.order(prev, nxt, *last_position)
        below, above_v = r.pick(prev), r.pick(nxt)
        if weak: gamma = Tensor(gamma.uop, weak=True)   # NumPy: float(gamma)
        res = _lerp(below, above_v, gamma)
    if not r.static and not skip_nan:   # an empty array of run-time length: NumPy's IndexError
        add_check(r.n == 0, 0, lambda _: IndexError("index -1 is out of bounds for axis 0 with size 0"))
    if skip_nan and r.dtype.is_inexact:
        res = _nan_to(res, (cast(Tensor, r.n) == 0).reshape((1,) * qdims + r.shape),
                      Tensor(UOp.const(r.dtype, math.nan)))
    elif nan_check:
        last = r.last()
        res = _nan_to(res, isnan(last), last)
    return r.finish(res, qdims, keepdims)


def _lerp(a: Tensor, b: Tensor, t: Tensor) -> Tensor:
    """NumPy's linear interpolation: a + (b - a) * t, or b - (b - a) * (1 - t) where t >= 0.5 (in the first one's
    dtype), with NumPy's dtypes (b - a in the array's own dtype)."""
    from numfn.numpy.ufuncs import where
    diff = b - a
    out = a + diff * t
    other = (b - diff * (1 - t)).astype(out.uop.dtype)
    return where(t >= 0.5, other, out)


# arrays of run-time length (x[mask]) reach these through numfn.trace.dynamic's guard
from numfn.trace import dynamic  # noqa: E402

dynamic.NUMPY.update({"median": median, "nanmedian": nanmedian, "percentile": percentile, "quantile": quantile,
                      "nanpercentile": nanpercentile, "nanquantile": nanquantile})
