"""Indexing functions: results of run-time length (nonzero, flatnonzero, argwhere, extract, compress), gathers
(take, take_along_axis, choose, select), writes (put, put_along_axis, ufunc.at) and counting scatters (bincount,
histogram, histogram2d). They build on numfn.trace.subscript (x[index], x[index] = v) and numfn.trace.dynamic (run-time
lengths)."""
from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence

import numpy as np

from numfn.trace import dynamic
from numfn.args import normalize_axis, refuse
from numfn.dtype import dtypes, result_type
from numfn.errors import unsupported
from numfn.trace.subscript import region, write
from numfn.trace.tensor import (Tensor, add_check, broadcast_shapes, gather, numpy_function, promote,
                                tensor_method)
from numfn.ir.uop import Ops, UOp
from numfn.trace.value_sizes import requested_value
from numfn.numpy._typing import ArrayLike

T = Tensor.lift
I64 = dtypes.int64

__all__ = ["nonzero", "flatnonzero", "argwhere", "extract", "compress", "take", "take_along_axis",
           "put_along_axis", "put", "choose", "select", "bincount", "histogram", "histogram2d", "digitize"]


def _iota_on(n: int, axis: int, ndim: int) -> Tensor:
    return Tensor(UOp.iota(n).reshape(tuple(n if a == axis else 1 for a in range(ndim)))) if n else \
        Tensor(UOp.const_like(I64, 0, tuple(0 if a == axis else 1 for a in range(ndim))))


def _coordinates(shape: tuple[int, ...]) -> list[Tensor]:
    return [Tensor(_iota_on(n, a, len(shape))._broadcast(shape)) for a, n in enumerate(shape)]


# ---- results of run-time length -------------------------------------------------------------------------------
def nonzero(a: ArrayLike) -> tuple:
    """The indices of the nonzero elements, one array per axis (their number is known when the program runs)."""
    t = T(a)
    if t.runtime_length: raise unsupported("numpy.nonzero of an array selected by values", dynamic.HINT)
    if t.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    mask = t.astype(np.bool_)
    return tuple(dynamic.select(c, mask) for c in _coordinates(t.shape))


def flatnonzero(a: ArrayLike) -> Tensor:
    """The indices of the nonzero elements of the flattened array."""
    return nonzero(T(a).reshape(-1))[0]


def argwhere(a: ArrayLike) -> Tensor:
    """The indices of the nonzero elements as rows of an (n, ndim) array (n known when the program runs)."""
    t = T(a)
    scalar = t.ndim == 0
    if scalar: t = t.reshape(1)   # NumPy: one row (of no columns) if it is nonzero
    out = dynamic.select(_stack_last(_coordinates(t.shape)), t.astype(np.bool_))
    if scalar: return dynamic.DynTensor(out.uop.shrink(((0, out.bound), (0, 0))), out.length)
    return out


def _stack_last(ts: list[Tensor]) -> Tensor:
    stack = numpy_function("stack")
    return stack(ts, axis=-1)


def extract(condition: ArrayLike, arr: ArrayLike) -> Tensor:
    """arr.ravel()[condition.ravel() != 0]: a condition longer than arr may only be true within it."""
    c = T(condition).reshape(-1).astype(np.bool_)
    x = T(arr).reshape(-1)
    if c.size > x.size:
        beyond = c[x.size:]
        add_check(beyond, Tensor(UOp.iota(c.size - x.size)) + x.size,
                  lambda v, n=x.size: IndexError(  # type: ignore[misc]  # mypy infers no lambda with defaults
                      f"index {v} is out of bounds for axis 0 with size {n}"))
        c = c[:x.size]
    return dynamic.select(x[:c.size], c)


def compress(condition: ArrayLike, a: ArrayLike, axis: int | None = None, out: None = None) -> Tensor:
    """The slices of `a` along `axis` where the 1-D condition holds (of the flattened array for axis=None)."""
    refuse("compress", out=out)
    c = T(condition)
    if c.ndim != 1: raise ValueError("condition must be a 1-d array")
    t = T(a).reshape(-1) if axis is None else T(a)
    ax = 0 if axis is None else normalize_axis(axis, t.ndim)
    if ax != 0:
        raise unsupported("numpy.compress along an axis other than the first",
                          "move that axis first (np.moveaxis) and compress along axis 0")
    c = c.astype(np.bool_)
    n = t.shape[0]
    if c.size > n:
        add_check(c[n:], Tensor(UOp.iota(c.size - n)) + n,
                  lambda v: IndexError(f"index {v} is out of bounds for axis {ax} with size {n}"))
        c = c[:n]
    return dynamic.select(t[:c.size], c)


# ---- gathers ---------------------------------------------------------------------------------------------------
def _mode_indices(indices: Tensor, n: int, mode: str, axis: int) -> Tensor:
    """Indices into an axis of size n under take's modes: 'raise' checks (negative ones count from the end), 'wrap'
    takes them modulo n, 'clip' clips them into range."""
    if mode == "raise": return indices
    if mode not in ("wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    i = indices.astype(np.int64)
    if n == 0: raise IndexError("cannot do a non-empty take from an empty axes.")
    if mode == "wrap": return i % n
    clip = numpy_function("clip")
    return clip(i, 0, n - 1)


def take(a: ArrayLike, indices: ArrayLike, axis: int | None = None, out: None = None, mode: str = "raise") -> Tensor:
    """Elements of `a` (the flattened array for axis=None) at `indices` along `axis`."""
    refuse("take", out=out)
    t = T(a).reshape(-1) if axis is None else T(a)
    ax = 0 if axis is None else normalize_axis(axis, t.ndim)
    i = indices if isinstance(indices, Tensor) and indices.runtime_length else T(indices)
    if not (i.uop.dtype.is_int or i.uop.dtype.is_bool):
        raise TypeError(f"Cannot cast array data from {i.dtype!r} to dtype('int64') according to the rule 'safe'")
    i = _mode_indices(i, t.shape[ax], mode, ax)
    return t[(slice(None),) * ax + (i,)]


def _along_axis(arr, indices, axis) -> tuple[Tensor, int, tuple[int, ...], Tensor]:
    """What take_along_axis and put_along_axis share, with NumPy's errors: (arr, the axis, the shape of the
    region, the indices along the axis as int64, wrapped and checked to be in bounds)."""
    t, i = T(arr), T(indices)
    if axis is None:
        if i.ndim != 1: raise ValueError("when axis=None, `indices` must have a single dimension.")
        t, axis = t.reshape(-1), 0
    if not i.uop.dtype.is_int: raise IndexError("`indices` must be an integer array")
    if i.ndim != t.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = normalize_axis(axis, t.ndim)
    shape = broadcast_shapes(tuple(1 if a == ax else n for a, n in enumerate(t.shape)),
                             tuple(1 if a == ax else n for a, n in enumerate(i.shape)))
    shape = shape[:ax] + (i.shape[ax],) + shape[ax + 1:]
    n = t.shape[ax]
    j = i.astype(np.int64)
    add_check((j < -n) | (j >= n), j, lambda v: IndexError(f"index {v} is out of bounds for axis {ax} with size {n}"))
    return t, ax, shape, Tensor((j < 0).uop.alu(Ops.WHERE, (j + n).uop, j.uop))


def take_along_axis(arr: ArrayLike, indices: ArrayLike, axis: int = -1) -> Tensor:
    """arr's elements at `indices` along `axis`, matching the other axes (broadcast): NumPy's take_along_axis."""
    t, ax, out_shape, j = _along_axis(arr, indices, axis)
    zero = Tensor(UOp.const_like(I64, 0, (1,) * t.ndim))   # an axis of size 1 in arr: broadcast
    idx = [j if a == ax else _iota_on(m, a, t.ndim) if t.shape[a] != 1 else zero for a, m in enumerate(out_shape)]
    return gather(t, [Tensor(x._broadcast(out_shape)) for x in idx])


def choose(a: ArrayLike, choices: Tensor | np.ndarray | Sequence[ArrayLike], out: None = None,
           mode: str = "raise") -> Tensor:
    """choices[a[i]][i] for every position i (a and the choices broadcast together)."""
    refuse("choose", out=out)
    idx = T(a)
    cs = [T(c) for c in choices] if not isinstance(choices, Tensor) else [choices[k] for k in range(choices.shape[0])]
    if not cs: raise ValueError("0-length sequence.")
    dt = result_type(*(c.uop.dtype for c in cs))
    shape = broadcast_shapes(idx.shape, *(c.shape for c in cs))
    n = len(cs)
    i = _mode_indices(idx, n, mode, 0).astype(np.int64)
    if mode == "raise":
        add_check((i < 0) | (i >= n), i, lambda v: ValueError("invalid entry in choice array"))
    stack = numpy_function("stack")
    stacked = stack([Tensor(c.astype(dt)._broadcast(shape)) for c in cs])
    return gather(stacked, [Tensor(i._broadcast(shape))] + _coordinates(shape))


def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: ArrayLike = 0) -> Tensor:
    """Elements of the first choice whose condition holds, else `default` (NumPy's select)."""
    conds, choices = list(condlist), list(choicelist)
    if len(conds) != len(choices): raise ValueError("list of cases must be same length as list of conditions")
    if not choices: raise ValueError("select with an empty condition list is not possible")
    cs = [T(c) for c in choices]
    d = T(default)
    where = numpy_function("where")
    dt = promote(*cs, d)
    out = Tensor(d.uop.cast(dt), d.weak)
    for k, (c, v) in reversed(list(enumerate(zip(conds, cs)))):
        ct = T(c)
        if not ct.uop.dtype.is_bool:
            raise TypeError(f"invalid entry {k} in condlist: should be boolean ndarray")
        out = where(ct, Tensor(v.uop.cast(dt), v.weak), out)
    shape = broadcast_shapes(*(T(c).shape for c in conds), *(c.shape for c in cs), d.shape)
    return Tensor(out._broadcast(shape)).astype(dt)


# ---- writes ------------------------------------------------------------------------------------------------------
def put_along_axis(arr: ArrayLike, indices: ArrayLike, values: ArrayLike, axis: int) -> None:
    """arr[..., indices, ...] = values along `axis`, matching the other axes: written into arr."""
    t, ax, shape, j = _along_axis(arr, indices, axis)
    idx = [j if a == ax else _iota_on(m, a, t.ndim) for a, m in enumerate(shape)]
    from numfn.trace.subscript import assignable
    v = assignable(values, t.uop.dtype, shape)
    write(t, shape, idx, v, injective=False)


def put(a: ArrayLike, ind: ArrayLike, v: ArrayLike, mode: str = "raise") -> None:
    """a.flat[ind] = v, v repeated as needed: written into a."""
    t = T(a)
    flat = t.reshape(-1)
    i = T(ind).reshape(-1)
    if not i.uop.dtype.is_int:
        raise TypeError(f"Cannot cast array data from {i.dtype!r} to dtype('int64') according to the rule 'safe'")
    n = flat.shape[0]
    if mode == "raise":
        add_check((i < -n) | (i >= n), i, lambda x: IndexError(f"index {x} is out of bounds for axis 0 with size {n}"))
        i = Tensor((i < 0).uop.alu(Ops.WHERE, (i + n).uop, i.uop))
    else:
        i = _mode_indices(i, n, mode, 0)
    vals = T(v).reshape(-1).astype(t.dtype)
    if i.size == 0 or vals.size == 0: return   # NumPy puts nothing when there are no values
    cyc = gather(vals, [Tensor(UOp.iota(i.size)) % vals.size])
    write(flat, (i.size,), [i], cyc, injective=False)


def ufunc_at(name: str, op: Ops, a, indices, b=None) -> None:
    """ufunc.at(a, indices, b): a[indices] = ufunc(a[indices], b) unbuffered: every index counts, repeated ones
    accumulate (written into a)."""
    t = T(a)
    items = _at_items(t, indices)
    shape, idx = region(t.shape, items)
    if b is None: raise unsupported(f"numpy.{name}.at of a unary ufunc")
    from numfn.trace.subscript import assignable
    v = assignable(b, t.uop.dtype, shape)
    write(t, shape, idx, v, injective=False, combine=op)


def _at_items(t: Tensor, indices):
    from numfn.trace.subscript import normalize
    return normalize(t.shape, indices)


# ---- counting ----------------------------------------------------------------------------------------------------
BINCOUNT_LIMIT = 1 << 24   # the largest output bincount allocates from its input's value bounds


def bincount(x: ArrayLike, weights: ArrayLike | None = None, minlength: int = 0) -> Tensor:
    """Occurrences of each value 0..max(x) in the non-negative ints x (or the sums of their weights). The length,
    max(max(x) + 1, minlength), is known when the program runs: the output is allocated at a bound from x's value
    bounds (its dtype, or what computed it), at least minlength."""
    t = T(x)
    if t.ndim != 1: raise ValueError("object too deep for desired array" if t.ndim > 1 else
                                     "object of too small depth for desired array")
    if not (t.uop.dtype.is_int or t.uop.dtype.is_bool):
        raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule 'safe'")
    minlength = operator.index(minlength)
    if minlength < 0: raise ValueError("'minlength' must not be negative")
    i = t.astype(np.int64)
    add_check(i < 0, i, lambda v: ValueError("'list' argument must have no negative elements"))
    known = i.known()
    bound: int | None
    if known is not None:
        bound = builtins.max(int(known.max()) + 1 if known.size else 0, minlength)
    else:
        hi = i.uop.bounds[1]
        bound = builtins.max(hi + 1, minlength) if hi < BINCOUNT_LIMIT else None
    if t.size == 0: bound = minlength
    if bound is None:   # no bound known while tracing: the length computed in a second pass (numfn.trace.value_sizes)
        length = Tensor.lift(i.max()) + 1
        bound = requested_value(Tensor(length.uop.alu(Ops.MAX, UOp.const(I64, minlength))), "numpy.bincount's length")
        minlength = bound   # (the length is exact: no run-time length)
    w = None if weights is None else T(weights)
    if w is not None and w.shape != t.shape: raise ValueError("The weights and list don't have the same length.")
    dt = dtypes.int64 if w is None else dtypes.float64 if not w.uop.dtype.is_float or w.uop.dtype.itemsize < 8 \
        else w.uop.dtype
    counts = Tensor(UOp.const_like(dt, 0, (bound,)))
    if t.size:
        ones = Tensor(UOp.const_like(dt, 1, t.shape)) if w is None else w.astype(dt)
        safe = Tensor((i < 0).uop.alu(Ops.WHERE, UOp.const_like(I64, 0, i.shape), i.uop))
        counted = Tensor((i >= 0).uop.alu(Ops.WHERE, ones.uop, UOp.const_like(dt, 0, i.shape)))
        if bound == 1:   # every count is of 0: a sum (an add-scatter into one element loses adds, numfn's bug)
            counts = Tensor(numpy_function("sum")(counted).uop.reshape((1,)))
        else: write(counts, (t.size,), [safe], counted, injective=False, combine=Ops.ADD)
    if known is not None or minlength >= bound or t.size == 0: return counts
    length = Tensor.lift(i.max()) + 1
    length = Tensor(length.uop.alu(Ops.MAX, UOp.const(I64, minlength)))
    return dynamic.DynTensor(counts.uop, length.uop)


def digitize(x: ArrayLike, bins: ArrayLike, right: bool = False) -> Tensor:
    """The index of the bin each x falls in (bins increasing or decreasing, which NumPy decides from their values:
    computed bins take both searches and the one their values call for), as NumPy's digitize."""
    from numfn.numpy.sorting import searchsorted
    b, v = T(bins), T(x)
    if b.ndim != 1: raise ValueError("object too deep for desired array")
    side = "left" if right else "right"
    known = b.known()
    if known is not None:
        direction = _monotonicity(known)
        if direction == 0: raise ValueError("bins must be monotonically increasing or decreasing")
        if direction > 0: return searchsorted(b, v, side=side)
        return b.shape[0] - searchsorted(b[::-1], v, side=side)
    increasing = _increasing(b)
    up, down = searchsorted(b, v, side=side), b.shape[0] - searchsorted(b[::-1], v, side=side)
    return Tensor(increasing.uop.alu(Ops.WHERE, up.uop, down.uop))


def _monotonicity(b: np.ndarray) -> int:
    """NumPy's test of digitize's bins: 1 increasing, -1 decreasing, 0 neither. The direction is that of bins[0] to
    the first element that differs from it (all equal: increasing; NaN compares false: decreasing), then every
    later pair must not go the other way."""
    differ = np.nonzero(~(b[1:] == b[0]))[0] if b.size > 1 else np.zeros(0, int)
    if differ.size == 0: return 1
    i = int(differ[0]) + 1
    lo, hi = b[i:-1], b[i + 1:]
    if b[0] < b[i]: return 0 if (lo > hi).any() else 1
    return 0 if (lo < hi).any() else -1


def _increasing(b: Tensor) -> Tensor:
    """_monotonicity for computed bins: whether they increase, NumPy's ValueError (after the call) if neither."""
    n = b.shape[0]
    if n < 2: return Tensor(UOp.const(dtypes.bool, True))
    from numfn.numpy.reductions import argmax
    differ = ~(b[1:] == b[0])
    i = argmax(differ) + 1
    up = (b[0] < gather(b, [i])) | ~differ.any()
    later = Tensor(UOp.iota(n - 1)) >= i
    bad = Tensor(up.uop.alu(Ops.WHERE, (later & (b[:-1] > b[1:])).any().uop, (later & (b[:-1] < b[1:])).any().uop))
    add_check(bad, 0, lambda _: ValueError("bins must be monotonically increasing or decreasing"))
    return up


def histogram(a: ArrayLike, bins: ArrayLike = 10, range: tuple[float, float] | None = None, density: bool | None = None,
              weights: ArrayLike | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002 - NumPy's name
    """Counts of `a` in bins (an int with range= or a's range, or explicit increasing edges), with NumPy's exact
    assignment of values to equal-width bins; returns (hist, bin_edges)."""
    t = T(a).reshape(-1)
    w = None if weights is None else T(weights).reshape(-1)
    if w is not None and w.shape != t.shape: raise ValueError("weights should have the same shape as a.")
    edges, index = _bins(t, bins, range)
    nb = edges.shape[0] - 1
    dt = dtypes.int64 if w is None else (w.uop.dtype if w.uop.dtype.is_float else dtypes.float64)
    hist = Tensor(UOp.const_like(dt, 0, (nb,)))
    if t.size:
        keep, k = index
        ones = Tensor(UOp.const_like(dt, 1, t.shape)) if w is None else w.astype(dt)
        write(hist, (t.size,), [k], Tensor(keep.uop.alu(Ops.WHERE, ones.uop, UOp.const_like(dt, 0, t.shape))),
              injective=False, combine=Ops.ADD)
    if density:
        widths = edges[1:] - edges[:-1]
        return hist / hist.sum() / widths, edges
    return hist, edges


def _bins(t: Tensor, bins, rng) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """(edges, (keep, index)): the bin edges and, for each value, whether it falls in the histogram and its bin."""
    linspace = numpy_function("linspace")
    if isinstance(bins, str): raise unsupported(f"numpy.histogram with bins={bins!r}", "pass a number of bins")
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        nb = operator.index(bins)
        if nb < 1: raise ValueError("`bins` must be positive, when an integer")
        dt = t.uop.dtype if t.uop.dtype.is_float else dtypes.float64
        if rng is not None:
            lo, hi = (float(r) for r in rng)
            if lo > hi: raise ValueError("max must be larger than min in range parameter.")
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
            if lo == hi: lo, hi = lo - 0.5, hi + 0.5
            first, last = Tensor(UOp.const(dt, lo)), Tensor(UOp.const(dt, hi))
        else:
            if t.size == 0: first, last = Tensor(UOp.const(dt, 0.0)), Tensor(UOp.const(dt, 1.0))
            else:
                first, last = t.min().astype(dt), t.max().astype(dt)
                add_check(~(_finite(first) & _finite(last)), 0, lambda _: ValueError(
                    "autodetected range of [nan, nan] is not finite"))
                same = first == last
                first = Tensor(same.uop.alu(Ops.WHERE, (first - 0.5).uop, first.uop))
                last = Tensor(same.uop.alu(Ops.WHERE, (last + 0.5).uop, last.uop))
        edges = linspace(first, last, nb + 1, endpoint=True, dtype=dt)
        # NumPy's assignment: scaled index, then corrected against the edges themselves
        x = t.astype(dt)
        keep = (x >= first) & (x <= last)
        norm = nb / (last - first)
        f = (x - first) * norm
        k = Tensor(keep.uop.alu(Ops.WHERE, f.uop, UOp.const_like(dt, 0, f.shape))).astype(np.int64)
        k = Tensor((k == nb).uop.alu(Ops.WHERE, (k - 1).uop, k.uop))
        k = Tensor((k < 0).uop.alu(Ops.WHERE, UOp.const_like(I64, 0, k.shape), k.uop))
        k = Tensor((k > nb - 1).uop.alu(Ops.WHERE, UOp.const_like(I64, nb - 1, k.shape), k.uop))
        below = x < gather(edges, [k])
        k = Tensor(below.uop.alu(Ops.WHERE, (k - 1).uop, k.uop))
        k = Tensor((k < 0).uop.alu(Ops.WHERE, UOp.const_like(I64, 0, k.shape), k.uop))
        upper = gather(edges, [Tensor((k + 1).uop.alu(Ops.MIN, UOp.const_like(I64, nb, k.shape)))])
        above = (x >= upper) & (k != nb - 1)
        k = Tensor(above.uop.alu(Ops.WHERE, (k + 1).uop, k.uop))
        return edges, (keep, k)
    edges = T(bins)
    if edges.ndim != 1: raise ValueError("`bins` must be 1d, when an array")
    known = edges.known()
    if known is not None and (np.diff(known) < 0).any():
        raise ValueError("`bins` must increase monotonically, when an array")
    nb = edges.shape[0] - 1
    if nb < 1: raise ValueError("`bins` must have at least one edge pair")
    dt = result_type(t.uop.dtype, edges.uop.dtype)
    x = t.astype(dt)
    e = edges.astype(dt)
    from numfn.numpy.sorting import searchsorted
    k = searchsorted(e, x, side="right") - 1              # the last edge <= x
    keep = (x >= e[0]) & (x <= e[-1])
    k = Tensor((x == e[-1]).uop.alu(Ops.WHERE, UOp.const_like(I64, nb - 1, k.shape), k.uop))
    k = Tensor((k < 0).uop.alu(Ops.WHERE, UOp.const_like(I64, 0, k.shape), k.uop))
    k = Tensor((k > nb - 1).uop.alu(Ops.WHERE, UOp.const_like(I64, nb - 1, k.shape), k.uop))
    return edges, (keep, k)


def _finite(v: Tensor) -> Tensor:
    return (v == v) & (v - v == 0)


def histogram2d(x: ArrayLike, y: ArrayLike, bins=10,  # noqa: A002 - NumPy's name (range)
                range: Sequence[tuple[float, float]] | None = None, density: bool | None = None,
                weights: ArrayLike | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Counts of the points (x, y) in a grid of bins; returns (H, xedges, yedges)."""
    tx, ty = T(x).reshape(-1), T(y).reshape(-1)
    if tx.shape != ty.shape: raise ValueError("x and y must have the same length.")
    if isinstance(bins, (int, np.integer)) or (isinstance(bins, Tensor) and bins.ndim == 1) or \
            (isinstance(bins, (list, np.ndarray)) and np.ndim(bins) == 1 and len(bins) != 2):
        bx = by = bins
    else:
        bx, by = bins
    rx, ry = (None, None) if range is None else range
    ex, (kx_keep, kx) = _bins(tx, bx, rx)
    ey, (ky_keep, ky) = _bins(ty, by, ry)
    nx, ny = ex.shape[0] - 1, ey.shape[0] - 1
    w = None if weights is None else T(weights).reshape(-1)
    dt = dtypes.float64 if w is None or not w.uop.dtype.is_float else w.uop.dtype
    hist = Tensor(UOp.const_like(dt, 0, (nx * ny,)))
    if tx.size:
        keep = kx_keep & ky_keep
        ones = Tensor(UOp.const_like(dt, 1, tx.shape)) if w is None else w.astype(dt)
        write(hist, (tx.size,), [kx * ny + ky], Tensor(keep.uop.alu(Ops.WHERE, ones.uop,
                                                                        UOp.const_like(dt, 0, tx.shape))),
              injective=False, combine=Ops.ADD)
    h = hist.reshape(nx, ny)
    if density:
        area = (ex[1:] - ex[:-1]).reshape(nx, 1) * (ey[1:] - ey[:-1]).reshape(1, ny)
        h = h / h.sum() / area
    return h, ex, ey


# ---- ndarray methods -----------------------------------------------------------------------------------------------
@tensor_method("nonzero")
def _nonzero_method(self) -> tuple:
    return nonzero(self)


@tensor_method("take")
def _take_method(self, indices, axis=None, out=None, mode="raise") -> Tensor:
    return take(self, indices, axis, out, mode)


@tensor_method("put")
def _put_method(self, indices, values, mode="raise") -> None:
    put(self, indices, values, mode)


@tensor_method("choose")
def _choose_method(self, choices, out=None, mode="raise") -> Tensor:
    return choose(self, choices, out, mode)


@tensor_method("compress")
def _compress_method(self, condition, axis=None, out=None) -> Tensor:
    return compress(condition, self, axis, out)
