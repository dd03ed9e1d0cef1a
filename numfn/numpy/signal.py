"""Differences, integration, convolution, interpolation and polynomials: diff, ediff1d, gradient, trapezoid,
convolve, correlate, interp, polyval, polyder, polyint, unwrap.

All are compositions of views, elementwise ops, reductions and GATHER: a convolution reads `a` at `k + j` through a
gather (a sliding window, nothing copied) and sums over j; interp searches xp with numfn.numpy.sorting.searchsorted,
a branch-free binary search of gathers, which vectorizes over x (and sorts xp with the native sort for period=).
"""
from __future__ import annotations

import math

import numpy as np

from numfn.args import normalize_axes, normalize_axis
from numfn.dtype import dtypes, result_type
from numfn.numpy.manipulation import concatenate
from numfn.trace.tensor import Tensor, gather
from numfn.ir.uop import Ops, UOp
from numfn.numpy._typing import ArrayLike, Axes

T = Tensor.lift

__all__ = ['diff', 'ediff1d', 'gradient', 'trapezoid', 'convolve', 'correlate', 'interp', 'polyval', 'polyder',
           'polyint', 'unwrap']

_NOVALUE = object()   # NumPy's "argument not given" (None is a value for prepend=/append=)


def _strong(x) -> Tensor:
    """x as NumPy's asarray sees it: a Python scalar becomes a strong int64/float64/bool array, not a weak one."""
    return Tensor(T(x).uop)


def _along(t: Tensor, axis: int, index) -> Tensor:
    """t[..., index, ...] with `index` (an int or a slice) on `axis`, the other axes whole."""
    return t[(slice(None),) * axis + (index,)]


# ---- differences ----------------------------------------------------------------------------------------------
def diff(a: ArrayLike, n: int = 1, axis: int = -1, prepend=_NOVALUE, append=_NOVALUE) -> Tensor:
    """The n-th discrete difference along `axis` (not_equal for bools), after joining `prepend` and `append` (scalars
    are broadcast to one slice) on that axis."""
    if n == 0: return T(a)
    if n < 0: raise ValueError("order must be non-negative but got " + repr(n))
    t = _strong(a)
    if t.ndim == 0: raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, t.ndim)
    parts = []
    for extra in (prepend, None, append):
        if extra is None: parts.append(t); continue  # noqa: E702
        if extra is _NOVALUE: continue
        e = _strong(extra)
        if e.ndim == 0: e = e.broadcast_to(tuple(1 if i == axis else s for i, s in enumerate(t.shape)))
        parts.append(e)
    if len(parts) > 1: t = concatenate(parts, axis)
    for _ in range(n):
        hi, lo = _along(t, axis, slice(1, None)), _along(t, axis, slice(None, -1))
        t = hi != lo if t.uop.dtype.is_bool else hi - lo
    return t


def unwrap(p: ArrayLike, discont: float | None = None, axis: int = -1, *, period: float = 2 * math.pi) -> Tensor:
    """NumPy's unwrap: along `axis`, each jump between neighbours of at least max(discont, period / 2) is replaced by
    its complement modulo `period` (the corrections' running sum added to the values after it), as NumPy computes
    it: in the dtype of the differences and `period` (an integer period halves exactly, or the boundary is
    ambiguous and a positive jump keeps its sign)."""
    from numfn.numpy import ufuncs as U
    from numfn.numpy.reductions import cumsum
    t = _strong(p)
    dd = diff(t, axis=axis)   # (NumPy's error for a 0-d p)
    axis = normalize_axis(axis, t.ndim)
    if discont is None: discont = period / 2
    dtype = np.result_type(dd.uop.dtype.np, period)
    if np.issubdtype(dtype, np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    ddmod = U.mod(dd - (-high), period) + (-high)
    if ambiguous:   # (NumPy's copyto: the value cast into ddmod's dtype)
        ddmod = U.where((ddmod == -high) & (dd > 0), T(high).astype(ddmod.uop.dtype.np), ddmod)
    correction = ddmod - dd
    correction = U.where(U.absolute(dd) < discont, T(0).astype(correction.uop.dtype.np), correction)
    up = t.astype(dtype)
    rest = _along(t, axis, slice(1, None))
    up[(slice(None),) * axis + (slice(1, None),)] = rest + cumsum(correction, axis)
    return up


def ediff1d(ary: ArrayLike, to_end: ArrayLike | None = None, to_begin: ArrayLike | None = None) -> Tensor:
    """Differences of consecutive elements of the flattened array, with `to_begin` and `to_end` (cast to its dtype,
    which they must reach under 'same_kind' casting) around them."""
    t = _strong(ary).reshape(-1)
    if to_begin is None and to_end is None: return t[1:] - t[:-1]
    dt = t.uop.dtype
    pieces: list[Tensor | None] = []
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None: pieces.append(None); continue  # noqa: E702
        e = _strong(extra)
        if not np.can_cast(e.dtype, dt.np, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        pieces.append(e.reshape(-1).astype(dt))
    body = (t[1:] - t[:-1]).astype(dt)   # NumPy subtracts into the result (of ary's dtype)
    return concatenate([p for p in (pieces[0], body, pieces[1]) if p is not None])


def _spacings(t: Tensor, axes: tuple[int, ...], varargs) -> list:
    """gradient's spacing for each axis: a Python or 0-d scalar (uniform), or the differences of 1-D coordinates."""
    if not varargs: return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0: return list(varargs) * len(axes)
    if len(varargs) != len(axes): raise TypeError("invalid number of arguments")
    out = []
    d: np.ndarray | Tensor
    for ax, distances in zip(axes, varargs):
        if np.ndim(distances) == 0: out.append(distances); continue  # noqa: E702
        if np.ndim(distances) != 1: raise ValueError("distances must be either scalars or 1d")
        if len(distances) != t.shape[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        if not isinstance(distances, Tensor):   # known coordinates: NumPy's check for even spacing can be made
            coords = np.asarray(distances)
            if coords.dtype.kind in "iu": coords = coords.astype(np.float64)
            d = np.diff(coords)
            out.append(d[0] if (d == d[0]).all() else T(d))
            continue
        d = distances.astype(np.float64) if distances.uop.dtype.kind in "iu" else distances
        # traced coordinates: the general formulas, which equal the uniform ones up to rounding when evenly spaced
        out.append(diff(d))
    return out


def gradient(f: ArrayLike, *varargs: ArrayLike, axis: Axes = None, edge_order: int = 1) -> Tensor | tuple[Tensor, ...]:
    """Second-order central differences inside, first- or second-order one-sided differences at the edges, along
    every axis in `axis` (all by default): a tuple of arrays for several axes. Spacing: none (1), one scalar for
    all axes, or one scalar or 1-D coordinate array per axis. Integers compute in float64."""
    t = _strong(f)
    n = t.ndim
    axes = tuple(range(n)) if axis is None else normalize_axes(
        tuple(axis) if isinstance(axis, list) else axis, n)
    spacing = _spacings(t, axes, varargs)
    if edge_order > 2: raise ValueError("'edge_order' greater than 2 not supported")
    otype = t.uop.dtype
    if not otype.is_float:
        if otype.is_int: t = t.astype(np.float64)
        otype = dtypes.float64
    outs = []
    for ax, dx in zip(axes, spacing):
        if t.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                             "elements are required.")
        def f_(index, ax=ax): return _along(t, ax, index)   # noqa: E306
        uniform = np.ndim(dx) == 0
        if uniform:
            inner = (f_(slice(2, None)) - f_(slice(None, -2))) / (2.0 * dx)
        else:
            dx1, dx2 = dx[:-1], dx[1:]
            shape = tuple(-1 if i == ax else 1 for i in range(n))
            a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            inner = a * f_(slice(None, -2)) + b * f_(slice(1, -1)) + c * f_(slice(2, None))
        if edge_order == 1:
            first = (f_(slice(1, 2)) - f_(slice(0, 1))) / (dx if uniform else dx[0])
            last = (f_(slice(-1, None)) - f_(slice(-2, -1))) / (dx if uniform else dx[-1])
        else:
            if uniform: a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
            else:
                dx1, dx2 = dx[0], dx[1]
                a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
                b = (dx1 + dx2) / (dx1 * dx2)
                c = -dx1 / (dx2 * (dx1 + dx2))
            first = a * f_(slice(0, 1)) + b * f_(slice(1, 2)) + c * f_(slice(2, 3))
            if uniform: a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
            else:
                dx1, dx2 = dx[-2], dx[-1]
                a = dx2 / (dx1 * (dx1 + dx2))
                b = -(dx2 + dx1) / (dx1 * dx2)
                c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
            last = a * f_(slice(-3, -2)) + b * f_(slice(-2, -1)) + c * f_(slice(-1, None))
        # NumPy assigns each piece into an array of dtype otype
        pieces = [first.astype(otype), inner.astype(otype), last.astype(otype)]
        outs.append(concatenate(pieces, axis=ax))
    return outs[0] if len(axes) == 1 else tuple(outs)


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: float = 1.0, axis: int = -1) -> Tensor:
    """The integral of y along `axis` by the trapezoidal rule, with sample points `x` or spacing `dx`."""
    t = _strong(y)
    nd = t.ndim
    if not -nd <= axis < nd: raise IndexError("list assignment index out of range")   # NumPy indexes a list of slices
    ax = axis % nd
    if x is None: d = T(dx)
    else:
        xs = _strong(x)
        if xs.ndim == 1:
            d = diff(xs)
            d = d.reshape(tuple(d.shape[0] if i == ax else 1 for i in range(nd)))
        else:
            d = diff(xs, axis=axis)
    return (d * (_along(t, ax, slice(1, None)) + _along(t, ax, slice(None, -1))) / 2.0).sum(axis)


# ---- convolution ----------------------------------------------------------------------------------------------
_MODES = {"valid": 0, "same": 1, "full": 2, 0: 0, 1: 1, 2: 2}


def _mode(mode) -> int:
    if isinstance(mode, str):
        if mode not in _MODES: raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
        return _MODES[mode]
    if isinstance(mode, (int, np.integer)) and not isinstance(mode, bool) and int(mode) in (0, 1, 2):
        return int(mode)
    raise ValueError("mode must be 0, 1, or 2")


def _vector(x) -> Tensor:
    """A convolution operand: a 1-D array (a scalar becomes one element); deeper arrays are NumPy's ValueError."""
    t = _strong(x)
    if t.ndim == 0: t = t.reshape(1)
    if t.ndim > 1: raise ValueError("object too deep for desired array")
    return t


def _window_dot(a: Tensor, v: Tensor, start: int, count: int, dt) -> Tensor:
    """out[k] = sum_j a[start + k + j] * v[j] for k < count, a read as zero outside its range (a padded view is only
    made where the window leaves a, so the inner loop of the interior has no bounds checks)."""
    n, m = a.shape[0], v.shape[0]
    before, after = max(0, -start), max(0, start + count + m - 1 - n)
    src = Tensor(a.uop.cast(dt).pad(((before, after),))) if before or after else Tensor(a.uop.cast(dt))
    k = Tensor(UOp.iota(count).reshape((count, 1)))
    j = Tensor(UOp.iota(m).reshape((1, m)))
    window = gather(src, [k + j + (start + before)])   # window[k, j]: a view by index, nothing copied
    vs = Tensor(v.uop.cast(dt).reshape((1, m)))
    if dt.is_bool: return (window & vs).any(axis=1)   # NumPy's bool dot: or of ands
    return (window * vs).sum(axis=1, dtype=dt)          # integers wrap in their own dtype, as NumPy's dot does


def _sliding_dot(a: Tensor, v: Tensor, mode: int) -> Tensor:
    """out[k] = sum_j a[k + j - left] * v[j] with a read as zero outside its range: NumPy's correlation kernel for
    len(a) >= len(v). `left` is 0, len(v)//2 or len(v)-1 for the modes valid, same and full. The outputs whose
    window lies inside a (all of them in valid mode) are computed apart from the few at the edges."""
    n, m = a.shape[0], v.shape[0]
    left, length = ((0, n - m + 1), (m // 2, n), (m - 1, n + m - 1))[mode]
    dt = result_type(a.uop.dtype, v.uop.dtype)
    # the interior's length a multiple of 16 (the rest joins the right edge), so the kernel optimizer can compute
    # outputs in register tiles of a vector-friendly width
    count = n - m + 1 if n - m + 1 < 64 else (n - m + 1) // 16 * 16
    inner = _window_dot(a, v, 0, count, dt)
    if left == 0 and length == count: return inner
    right = length - left - count
    pieces = [_window_dot(a, v, -left, left, dt)] if left else []
    pieces.append(inner)
    if right: pieces.append(_window_dot(a, v, count, right, dt))
    return concatenate(pieces)


def correlate(a: ArrayLike, v: ArrayLike, mode: str = "valid") -> Tensor:
    """Cross-correlation of two 1-D sequences: out[k] = sum_n a[n + k] * v[n] (modes valid, same, full). As in NumPy,
    when v is longer than a the operands are swapped and the result reversed."""
    md = _mode(mode)
    a, v = _vector(a), _vector(v)
    if a.shape[0] == 0: raise ValueError("first array argument cannot be empty")
    if v.shape[0] == 0: raise ValueError("second array argument cannot be empty")
    if v.shape[0] > a.shape[0]: return _sliding_dot(v, a, md)[::-1]
    return _sliding_dot(a, v, md)


def convolve(a: ArrayLike, v: ArrayLike, mode: str = "full") -> Tensor:
    """Discrete linear convolution of two 1-D sequences (modes full, same, valid); the longer one slides."""
    md = _mode(mode)
    a, v = _vector(a), _vector(v)
    if v.shape[0] > a.shape[0]: a, v = v, a
    if a.shape[0] == 0: raise ValueError("a cannot be empty")
    if v.shape[0] == 0: raise ValueError("v cannot be empty")
    return _sliding_dot(a, v[::-1], md)


# ---- interpolation ----------------------------------------------------------------------------------------------
def interp(x: ArrayLike, xp: ArrayLike, fp: ArrayLike, left: ArrayLike | None = None, right: ArrayLike | None = None,
           period: float | None = None) -> Tensor:
    """Piecewise-linear interpolation of the points (xp, fp) at x, in float64: xp must increase (NumPy does not
    check it either); `left`/`right` (default fp[0]/fp[-1]) beyond the ends; with `period`, x and xp are taken
    modulo it. NaN in x gives NaN."""
    xt = _strong(x).astype(np.float64)
    xps, fps = _strong(xp), _strong(fp)
    if period is not None:
        if period == 0: raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        if xps.ndim != 1 or fps.ndim != 1: raise ValueError("Data points must be 1-D sequences")
        if xps.shape[0] != fps.shape[0]: raise ValueError("fp and xp are not of the same length")
    for v in (xps, fps):
        if v.ndim != 1:
            raise ValueError("object of too small depth for desired array" if v.ndim == 0 else
                             "object too deep for desired array")
    if fps.shape[0] == 0 or (period is None and xps.shape[0] == 0):
        raise ValueError("array of sample points is empty")
    if xps.shape[0] != fps.shape[0]: raise ValueError("fp and xp are not of the same length.")
    xpt, fpt = xps.astype(np.float64), fps.astype(np.float64)
    if period is not None:
        from numfn.numpy.ufuncs import remainder
        from numfn.numpy.sorting import argsort
        xt, xpt = remainder(xt, period), remainder(xpt, period)
        order = argsort(xpt)
        xpt, fpt = gather(xpt, [order]), gather(fpt, [order])
        xpt = concatenate([xpt[-1:] - period, xpt, xpt[:1] + period])
        fpt = concatenate([fpt[-1:], fpt, fpt[:1]])
    n = xpt.shape[0]
    lval = fpt[0] if left is None else _strong(left).astype(np.float64)
    rval = fpt[-1] if right is None else _strong(right).astype(np.float64)
    if lval.ndim or rval.ndim: raise TypeError("only length-1 arrays can be converted to Python scalars")
    from numfn.numpy.ufuncs import isnan, where
    if n == 1:
        x0, f0 = xpt[0], fpt[0]
        return where(xt < x0, lval, where(xt > x0, rval, f0))
    from numfn.numpy.sorting import searchsorted
    j = searchsorted(xpt, xt, side="right") - 1  # the segment [xp[j], xp[j+1]) holding x; -1 left of xp[0]
    jc = Tensor._elementwise("maximum", Ops.MAX, Tensor._elementwise("minimum", Ops.MIN, j, n - 2), 0)
    x0, x1 = gather(xpt, [jc]), gather(xpt, [jc + 1])
    f0, f1 = gather(fpt, [jc]), gather(fpt, [jc + 1])
    slope = (f1 - f0) / (x1 - x0)
    res = slope * (xt - x0) + f0
    # NumPy's fallbacks where the formula gives NaN: from the right end of the segment, then a flat segment's value
    res = where(isnan(res), slope * (xt - x1) + f1, res)
    res = where(isnan(res) & (f0 == f1), f0, res)
    at_point = gather(xpt, [Tensor._elementwise("maximum", Ops.MAX, j, 0)]) == xt
    res = where((j == n - 1) | at_point, gather(fpt, [Tensor._elementwise("maximum", Ops.MAX, j, 0)]), res)
    res = where(j < 0, lval, res)
    res = where(xt > xpt[-1], rval, res)
    return where(isnan(xt), math.nan, res)


# ---- polynomials ----------------------------------------------------------------------------------------------
def polyval(p: ArrayLike, x: ArrayLike) -> Tensor:
    """The polynomial with coefficients p (highest power first) at x, by Horner's rule: y = y * x + p[i]."""
    coeffs = _strong(p)
    xt = _strong(x)
    y = Tensor(UOp.const_like(xt.uop.dtype, 0, xt.shape))
    for c in coeffs: y = y * xt + c
    return y


def polyder(p: ArrayLike, m: int = 1) -> Tensor:
    """The m-th derivative of the polynomial with coefficients p (highest power first)."""
    m = int(m)
    if m < 0: raise ValueError("Order of derivative must be positive (see polyint)")
    t = _strong(p)
    n = len(t) - 1
    from numfn.numpy.creation import arange
    y = t[:-1] * _strong(arange(n, 0, -1)) if n > 0 else t[:0] * Tensor(UOp.const_like(dtypes.int64, 0, (0,)))
    return t if m == 0 else polyder(y, m - 1)


def polyint(p: ArrayLike, m: int = 1, k: ArrayLike | None = None) -> Tensor:
    """The m-th antiderivative of the polynomial with coefficients p (highest power first); the integration
    constants k (a scalar or one per order, the first for the first integration) default to zero."""
    m = int(m)
    if m < 0: raise ValueError("Order of integral must be positive (see polyder)")
    kt = Tensor(UOp.const_like(dtypes.float64, 0.0, (m,))) if k is None else _strong(k)
    if kt.ndim == 0: kt = kt.reshape(1)
    if kt.shape[0] == 1 and m > 1: kt = kt[0] * Tensor(UOp.const_like(dtypes.float64, 1.0, (m,)))
    if kt.shape[0] < m: raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    t = _strong(p)
    if m == 0: return t
    from numfn.numpy.creation import arange
    steps = _strong(arange(len(t), 0, -1)) if len(t) else Tensor(UOp.const_like(dtypes.int64, 0, (0,)))
    y = concatenate([t / steps, kt[:1]])
    return polyint(y, m - 1, k=kt[1:])

