"""Reductions and scans: sum, prod, max, min, mean (the Tensor methods, as functions), argmax/argmin, any/all, ptp,
count_nonzero, cumulative sums and products, and the NaN-ignoring variants (nansum, nanmax, nanargmax, ...).

Everything is a composition of REDUCE_AXIS, SCAN and elementwise ops, so it fuses: argmax is a max reduction
followed by a min reduction over `where(x == max, index, n)`, both evaluated in one loop nest per result.
"""
from __future__ import annotations

import builtins
import math
from typing import SupportsIndex

import numpy as np

from numfn.args import normalize_axes, normalize_axis, refuse
from numfn.dtype import dtypes
from numfn.trace import dynamic
from numfn.trace.tensor import Tensor, add_check, gather, reduction_mask, tensor_method
from numfn.ir.uop import Ops, UOp
from numfn.numpy._typing import ArrayLike, Axes, DTypeLike, Scalar

T = Tensor.lift

__all__ = ['sum', 'prod', 'max', 'min', 'mean', 'cumsum', 'amax', 'amin', 'cumprod', 'cumulative_sum',
           'cumulative_prod', 'argmax', 'argmin', 'any', 'all', 'ptp', 'count_nonzero', 'nansum', 'nanprod',
           'nanmax', 'nanmin', 'nanargmax', 'nanargmin', 'nancumsum', 'nancumprod']

# ---- the Tensor methods as functions --------------------------------------------------------------------------
def sum(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
        initial: Scalar | None = None, where: ArrayLike | None = None) -> Tensor:  # noqa: A001
    """NumPy's sum: `dtype` accumulates, `initial` is folded in like one more element, `where` masks elements."""
    return T(a).sum(axis, dtype, out, keepdims, initial, where)


def prod(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
         initial: Scalar | None = None, where: ArrayLike | None = None) -> Tensor:
    """NumPy's prod (keywords as sum's)."""
    return T(a).prod(axis, dtype, out, keepdims, initial, where)


def max(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, initial: Scalar | None = None,
        where: ArrayLike | None = None) -> Tensor:  # noqa: A001
    """NumPy's max: NaN propagates; an empty reduction or a where= mask needs `initial`."""
    return T(a).max(axis, out, keepdims, initial, where)


def min(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, initial: Scalar | None = None,
        where: ArrayLike | None = None) -> Tensor:  # noqa: A001
    """NumPy's min (see max)."""
    return T(a).min(axis, out, keepdims, initial, where)


def mean(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False, *,
         where: ArrayLike | None = None) -> Tensor:
    """NumPy's mean: integers average in float64; with where=, over the selected elements only."""
    return T(a).mean(axis, dtype, out, keepdims, where)


def cumsum(a: ArrayLike, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None, out: None = None) -> Tensor:
    """Cumulative sums along `axis` (of the flattened array for axis=None)."""
    return T(a).cumsum(axis, dtype, out)


amax, amin = max, min


@tensor_method("cumprod")
def cumprod(a: ArrayLike, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None,
            out: None = None) -> Tensor:
    """Cumulative products along `axis` (of the flattened array for axis=None); small integers widen like prod."""
    refuse("cumprod", out=out)
    return T(a)._scan("cumprod", Ops.MUL, axis, dtype)


def _cumulative(name: str, op: Ops, x, axis, dtype, out, include_initial: bool) -> Tensor:
    """NumPy 2.1's cumulative_sum/cumulative_prod: an axis is required beyond 1-D, a 0-d array counts as 1-D, and
    include_initial puts the identity first (n + 1 results along the axis)."""
    refuse(f"cumulative_{name[3:]}", out=out)
    t = T(x)
    if t.ndim == 0: t = t.reshape(1)
    if axis is None:
        if t.ndim > 1: raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    ax = normalize_axis(axis, t.ndim)
    res = t._scan(name, op, ax, dtype)
    if not include_initial: return res
    from numfn.numpy.manipulation import concatenate
    first = Tensor(UOp.const_like(res.uop.dtype, 0 if op is Ops.ADD else 1,
                                  tuple(1 if i == ax else n for i, n in enumerate(res.shape))))
    return concatenate([first, res], axis=ax)


def cumulative_sum(x: ArrayLike, /, *, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None,
                   out: None = None, include_initial: bool = False) -> Tensor:
    """Cumulative sums (NumPy 2.1's array-API spelling of cumsum; see _cumulative)."""
    return _cumulative("cumsum", Ops.ADD, x, axis, dtype, out, include_initial)


def cumulative_prod(x: ArrayLike, /, *, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None,
                    out: None = None, include_initial: bool = False) -> Tensor:
    """Cumulative products (NumPy 2.1's array-API spelling of cumprod; see _cumulative)."""
    return _cumulative("cumprod", Ops.MUL, x, axis, dtype, out, include_initial)


# ---- argmax / argmin ------------------------------------------------------------------------------------------
def _arg_axis(t: Tensor, axis) -> tuple[Tensor, int]:
    """The array and axis an arg-reduction works on: axis=None flattens, a 0-d array counts as 1-D."""
    if axis is None: return t.reshape(-1), 0
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
    if t.ndim == 0: t = t.reshape(1)
    return t, normalize_axis(axis, t.ndim)


def _first_index(hit: Tensor, ax: int, keepdims: bool, somewhere: bool = False) -> Tensor:
    """The first index along `ax` where `hit` is true (the axis length where it never is), as int64. `somewhere`:
    `hit` holds somewhere along every line (an arg-reduction's), so the index is below the axis length, and the
    value's bounds say so (np.bincount(np.argmin(d, axis=1), minlength=k) then has the length k)."""
    n = hit.shape[ax]
    index = Tensor(UOp.iota(n).reshape(tuple(n if i == ax else 1 for i in range(hit.ndim))))
    never = n - 1 if somewhere else n
    cand = Tensor(hit.uop.alu(Ops.WHERE, index._broadcast(hit.shape), UOp.const_like(dtypes.int64, never, hit.shape)))
    res = Tensor(cand.uop.reduce(Ops.MIN, (ax,)))
    return res if keepdims else res.reshape(tuple(s for i, s in enumerate(hit.shape) if i != ax))


def _arg_extreme(a, axis, keepdims, name: str, out=None) -> Tensor:
    """argmax/argmin: the first index of the maximum (minimum); a NaN counts as the extreme, the first one wins."""
    refuse(name, out=out)
    t, ax = _arg_axis(T(a), axis)
    if t.shape[ax] == 0: raise ValueError(f"attempt to get {name} of an empty sequence")
    extreme = t.max(axis=ax, keepdims=True) if name == "argmax" else t.min(axis=ax, keepdims=True)
    hit = t == extreme
    # the extreme is NaN exactly when the slice holds one (a complex value is NaN when either part is)
    if t.uop.dtype.is_inexact: hit = hit | (t != t)
    res = _first_index(hit, ax, keepdims, somewhere=True)
    if keepdims and (axis is None or T(a).ndim == 0): res = res.reshape((1,) * T(a).ndim)
    return res


@tensor_method("argmax")
def argmax(a: ArrayLike, axis: SupportsIndex | None = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """Index of the first maximum along `axis` (of the flattened array for axis=None); NaN counts as the maximum."""
    return _arg_extreme(a, axis, keepdims, "argmax", out)


@tensor_method("argmin")
def argmin(a: ArrayLike, axis: SupportsIndex | None = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """Index of the first minimum along `axis` (of the flattened array for axis=None); NaN counts as the minimum."""
    return _arg_extreme(a, axis, keepdims, "argmin", out)


# ---- truth and counting ---------------------------------------------------------------------------------------
@tensor_method("any")
def any(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, *,
        where: ArrayLike | None = None) -> Tensor:  # noqa: A001
    """Whether any element (along `axis`) is nonzero; NaN counts as true. False for an empty reduction."""
    refuse("any", out=out)
    return T(a).astype(np.bool_)._reduce("max", Ops.MAX, axis, keepdims, None, False, where)


@tensor_method("all")
def all(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, *,
        where: ArrayLike | None = None) -> Tensor:  # noqa: A001
    """Whether every element (along `axis`) is nonzero; NaN counts as true. True for an empty reduction."""
    refuse("all", out=out)
    return T(a).astype(np.bool_)._reduce("min", Ops.MIN, axis, keepdims, None, True, where)


def count_nonzero(a: ArrayLike, axis: Axes = None, *, keepdims: bool = False) -> Tensor:
    """The number of nonzero elements (along `axis`) as int64 (NumPy's intp)."""
    return T(a).astype(np.bool_).sum(axis=axis, dtype=np.int64, keepdims=keepdims)


def ptp(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False) -> Tensor:
    """max - min along `axis` (integers wrap as NumPy's subtraction does; bools raise NumPy's TypeError)."""
    refuse("ptp", out=out)
    t = T(a)
    return t.max(axis=axis, keepdims=keepdims) - t.min(axis=axis, keepdims=keepdims)


# ---- the NaN-ignoring functions -------------------------------------------------------------------------------
def _without_nan(a, fill) -> tuple[Tensor, Tensor | None]:
    """(a with NaN replaced by `fill`, the NaN mask), or (a, None) for arrays that cannot hold NaN. A complex value
    is NaN when either part is (NumPy's isnan), and `fill` replaces all of it (fill + 0j, as NumPy's copyto)."""
    t = T(a)
    if not t.uop.dtype.is_inexact: return t, None
    nan = t != t
    return Tensor(nan.uop.alu(Ops.WHERE, UOp.const_like(t.uop.dtype, fill, t.shape), t.uop)), nan


def nansum(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
           initial: Scalar | None = None, where: ArrayLike | None = None) -> Tensor:
    """sum treating NaN as zero."""
    return _without_nan(a, 0)[0].sum(axis, dtype, out, keepdims, initial, where)


def nanprod(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
            initial: Scalar | None = None, where: ArrayLike | None = None) -> Tensor:
    """prod treating NaN as one."""
    return _without_nan(a, 1)[0].prod(axis, dtype, out, keepdims, initial, where)


def nancumsum(a: ArrayLike, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None,
              out: None = None) -> Tensor:
    """cumsum treating NaN as zero."""
    return _without_nan(a, 0)[0].cumsum(axis, dtype, out)


def nancumprod(a: ArrayLike, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None,
               out: None = None) -> Tensor:
    """cumprod treating NaN as one."""
    return cumprod(_without_nan(a, 1)[0], axis, dtype, out)


def _nan_extreme(a, axis, out, keepdims, initial, where, name: str, valid_only: bool = False) -> Tensor:
    """nanmax/nanmin as NumPy computes them, a reduction with fmax/fmin: NaN is skipped (a complex value is NaN
    when either part is; complex values compare lexicographically), an all-NaN slice gives NaN (NumPy also warns;
    for complex values its first element, where fmax's reduction stops), and `initial` takes part like one more
    element. `valid_only`: `where` marks the elements that exist (an array of run-time length: numfn.trace.dynamic), so
    it needs no `initial`."""
    refuse(f"nan{name}", out=out)
    t = T(a)
    if not t.uop.dtype.is_inexact: return getattr(t, name)(axis, None, keepdims, initial, where)
    axes = normalize_axes(axis, t.ndim)
    ufunc = "fmax" if name == "max" else "fmin"
    mask = reduction_mask(where, t.shape)
    if initial is None:
        if mask is not None and not valid_only:
            raise ValueError(f"reduction operation '{ufunc}' does not have an identity, so to use a where mask one "
                             "has to specify 'initial'")
        if builtins.any(t.shape[i] == 0 for i in axes):
            raise ValueError(f"zero-size array to reduction operation {ufunc} which has no identity")
    valid = t == t
    if mask is not None: valid = valid & Tensor(mask)
    dt = t.uop.dtype
    far: float | complex = -math.inf if name == "max" else math.inf
    if dt.is_complex: far = complex(far, far)   # before every other value in the lexicographic order
    filled = Tensor(valid.uop.alu(Ops.WHERE, t.uop, UOp.const_like(dt, far, t.shape)))
    res = getattr(filled, name)(axis=axes, keepdims=keepdims, initial=far)   # far: the identity, empty slices too
    found = valid.any(axis=axes, keepdims=keepdims)
    if dt.is_complex and initial is None: nan = _first_of(t, mask, axes, keepdims).uop
    else: nan = UOp.const_like(dt, math.nan, res.shape)
    res = Tensor(found.uop.alu(Ops.WHERE, res.uop, nan))
    if initial is None: return res
    init = T(initial).astype(dt)
    combined = Tensor._elementwise("maximum" if name == "max" else "minimum",
                                   Ops.MAX if name == "max" else Ops.MIN, res, init)
    # fmax/fmin: a NaN on one side gives the other side
    return Tensor((res != res).uop.alu(Ops.WHERE, init._broadcast(res.shape),
                                       (init != init).uop.alu(Ops.WHERE, res.uop, combined.uop)))


def _first_of(t: Tensor, mask: UOp | None, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """The first element over `axes` in their C order (the first one `mask` marks, if given): where a reduction
    of NumPy's starts. The axes are not empty."""
    kept = tuple(i for i in range(t.ndim) if i not in axes)
    rows_shape = tuple(t.shape[i] for i in kept) + (math.prod(t.shape[a] for a in axes),)
    rows = t.transpose(kept + axes).reshape(rows_shape)
    if mask is None or 0 in rows_shape: first = rows[..., :1]
    else:   # (a row without marks reads its last element: gather clamps)
        marked = Tensor(mask).transpose(kept + axes).reshape(rows_shape)
        lead = [Tensor(UOp.iota(n).reshape(tuple(n if j == i else 1 for j in range(len(rows_shape)))))
                for i, n in enumerate(rows_shape[:-1])]
        first = gather(rows, lead + [_first_index(marked, len(kept), True)])
    if keepdims: return first.reshape(tuple(1 if i in axes else n for i, n in enumerate(t.shape)))
    return first.reshape(rows_shape[:-1])


def nanmax(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, initial: Scalar | None = None,
           where: ArrayLike | None = None) -> Tensor:
    """max ignoring NaN; NaN for an all-NaN slice (where NumPy also warns)."""
    return _nan_extreme(a, axis, out, keepdims, initial, where, "max")


def nanmin(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, initial: Scalar | None = None,
           where: ArrayLike | None = None) -> Tensor:
    """min ignoring NaN; NaN for an all-NaN slice (where NumPy also warns)."""
    return _nan_extreme(a, axis, out, keepdims, initial, where, "min")


def _all_nan_slice(_payload: int) -> ValueError:
    return ValueError("All-NaN slice encountered")


def _nan_arg_extreme(a, axis, out, keepdims, name: str) -> Tensor:
    """nanargmax/nanargmin: NumPy replaces NaN by -inf (+inf) and takes argmax (argmin); an all-NaN slice is its
    ValueError, which depends on the values: the program checks for one and the call raises it."""
    t = T(a)
    if not t.uop.dtype.is_inexact: return _arg_extreme(t, axis, keepdims, name[3:], out)
    # NumPy fills with -inf (+inf), for complex arrays -inf + 0j: an element -inf - 1j is smaller than the fill
    filled, nan = _without_nan(t, -math.inf if name == "nanargmax" else math.inf)
    assert nan is not None   # t is an inexact array
    all_nan = nan.all(axis=axis, keepdims=keepdims)   # first, as in NumPy (its axis errors come first)
    res = _arg_extreme(filled, axis, keepdims, name[3:], out)
    add_check(all_nan, 0, _all_nan_slice)
    return res


def nanargmax(a: ArrayLike, axis: SupportsIndex | None = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """argmax ignoring NaN; NumPy's ValueError (raised by the call) for an all-NaN slice."""
    return _nan_arg_extreme(a, axis, out, keepdims, "nanargmax")


def nanargmin(a: ArrayLike, axis: SupportsIndex | None = None, out: None = None, *, keepdims: bool = False) -> Tensor:
    """argmin ignoring NaN; NumPy's ValueError (raised by the call) for an all-NaN slice."""
    return _nan_arg_extreme(a, axis, out, keepdims, "nanargmin")


def _run_time_length_nan_extreme(name: str):
    """nanmax/nanmin of an array of run-time length (numfn.trace.dynamic): NaN skipped; without `initial`, an empty
    selection is NumPy's ValueError (fmax, fmin)."""
    def method(y: dynamic.DynTensor, axis=None, out=None, keepdims=False, initial=None, where=None):
        if not y.uop.dtype.is_inexact: return dynamic.METHODS[name](y, axis, out, keepdims, initial, where)

        def fn(t, axis, keepdims, where=None):
            return _nan_extreme(t, axis, out, keepdims, initial, where, name, valid_only=True)
        empty = None if initial is not None else "fmax" if name == "max" else "fmin"
        return dynamic.reduce(fn, y, axis, keepdims, empty, where=where)
    return method


# numfn.trace.dynamic (below this module) knows these through its table of numfn.numpy functions
dynamic.NUMPY["nanmax"] = _run_time_length_nan_extreme("max")
dynamic.NUMPY["nanmin"] = _run_time_length_nan_extreme("min")
