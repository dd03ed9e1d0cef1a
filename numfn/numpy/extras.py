"""Smaller functions of NumPy's main namespace, each a composition of the other modules' functions: conversions
(ascontiguousarray, asfortranarray, asanyarray), predicates (isneginf, isposinf, isscalar, iterable, isin),
shape arithmetic (broadcast_shapes), index arrays of static shapes (tril/triu/diag indices, unravel_index,
ravel_multi_index), windows (hamming, hanning, blackman, bartlett), vander, cov, corrcoef and fill_diagonal."""
from __future__ import annotations

import math
import operator
from typing import SupportsIndex, cast

import numpy as np

from numfn.args import as_dtype
from numfn.dtype import dtypes
from numfn.errors import unsupported
from numfn.trace.tensor import Tensor, add_check, gather
from numfn.ir.uop import UOp
from numfn.numpy._typing import ArrayLike, DTypeLike, ShapeLike

T = Tensor.lift

__all__ = ['ascontiguousarray', 'asfortranarray', 'asanyarray', 'broadcast_shapes', 'isneginf', 'isposinf',
           'isscalar', 'iterable', 'tril_indices', 'triu_indices', 'tril_indices_from', 'triu_indices_from',
           'diag_indices', 'diag_indices_from', 'hamming', 'hanning', 'blackman', 'bartlett', 'vander', 'cov',
           'corrcoef', 'isin', 'fill_diagonal', 'unravel_index', 'ravel_multi_index']


# ---- conversions and predicates -----------------------------------------------------------------------------------
def asanyarray(a: ArrayLike, dtype: DTypeLike | None = None, order: str | None = None, *, device=None, copy=None,
               like=None) -> Tensor:
    """asarray: numfn has no ndarray subclasses."""
    from numfn.numpy.creation import asarray
    return asarray(a, dtype, copy=copy)


def ascontiguousarray(a: ArrayLike, dtype: DTypeLike | None = None, *, like=None) -> Tensor:
    """asarray with at least one dimension (a 0-d input becomes shape (1,)): the array itself where NumPy's is (a
    contiguous view: writes into the result change it), else a new array, as NumPy's copy."""
    return _contiguous_array(a, dtype, "C")


def _contiguous_array(a, dtype, order: str) -> Tensor:
    t = asanyarray(a, dtype)
    if t.ndim == 0: t = t.reshape((1,))
    return t if t.is_contiguous(order) else t.copy()


def asfortranarray(a: ArrayLike, dtype: DTypeLike | None = None, *, like=None) -> Tensor:
    """Like ascontiguousarray, in column-major order (a transposed C-contiguous array is the array itself)."""
    return _contiguous_array(a, dtype, "F")


def broadcast_shapes(*args: ShapeLike) -> tuple[int, ...]:
    """The shape the given shapes broadcast to (plain shape arithmetic, NumPy's errors)."""
    return np.broadcast_shapes(*args)


def _signed_infinity(x, negative: bool, out) -> Tensor:
    if out is not None: raise unsupported(f"numpy.{'isneginf' if negative else 'isposinf'} with out=")
    from numfn.numpy.ufuncs import isinf, logical_and, logical_not, signbit
    t = T(x)
    if t.uop.dtype.kind == "c":
        raise TypeError("This operation is not supported for complex values because it would be ambiguous.")
    sign = signbit(t)
    return logical_and(isinf(t), sign if negative else logical_not(sign))


def isneginf(x: ArrayLike, out: None = None) -> Tensor:
    """x is -inf (False for integers and bools)."""
    return _signed_infinity(x, True, out)


def isposinf(x: ArrayLike, out: None = None) -> Tensor:
    """x is +inf (False for integers and bools)."""
    return _signed_infinity(x, False, out)


def isscalar(element: object) -> bool:
    """NumPy's isscalar: a traced array is an array (False), anything else as NumPy decides."""
    return False if isinstance(element, Tensor) else bool(np.isscalar(element))


def iterable(y: object) -> bool:
    """Whether iter(y) works: a traced array is iterable unless it is 0-d."""
    return y.ndim > 0 if isinstance(y, Tensor) else bool(np.iterable(y))


def isin(element: ArrayLike, test_elements: ArrayLike, assume_unique: bool = False, invert: bool = False, *,
         kind: str | None = None) -> Tensor:
    """Each element of `element` compared with every test element (== semantics: NaN is in nothing); the result has
    element's shape."""
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    e, s = T(element), T(test_elements)
    e = Tensor(e.uop) if e.weak else e
    s = Tensor(s.uop).reshape(-1)
    if s.size == 0:
        found = Tensor(UOp.const_like(dtypes.bool, False, e.shape))
    else:
        found = (e.reshape(e.shape + (1,)) == s).any(axis=-1)
    return ~found if invert else found


# ---- index arrays of static shapes --------------------------------------------------------------------------------
def _int64(values) -> Tensor:
    return T(np.asarray(values, dtype=np.int64))


def _triangle_indices(n, k, m, lower: bool) -> tuple[Tensor, Tensor]:
    n, k = operator.index(n), operator.index(k)
    m = n if m is None else operator.index(m)
    rows, cols = np.indices((max(n, 0), max(m, 0)), dtype=np.int64)
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return _int64(rows[keep]), _int64(cols[keep])


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Tensor, Tensor]:
    """Row and column indices of the lower triangle (at and below diagonal k) of an n x m matrix, row by row."""
    return _triangle_indices(n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Tensor, Tensor]:
    """Row and column indices of the upper triangle (at and above diagonal k) of an n x m matrix, row by row."""
    return _triangle_indices(n, k, m, False)


def _square_2d(arr) -> tuple[int, int]:
    t = T(arr)
    if t.ndim != 2: raise ValueError("input array must be 2-d")
    return cast("tuple[int, int]", t.shape)


def tril_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Tensor, Tensor]:
    n, m = _square_2d(arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: ArrayLike, k: int = 0) -> tuple[Tensor, Tensor]:
    n, m = _square_2d(arr)
    return triu_indices(n, k, m)


def diag_indices(n: int, ndim: int = 2) -> tuple[Tensor, ...]:
    """The index of the main diagonal of an n x ... x n array: ndim copies of arange(n)."""
    from numfn.numpy.creation import arange
    idx = arange(operator.index(n))
    return (idx,) * operator.index(ndim)


def diag_indices_from(arr: ArrayLike) -> tuple[Tensor, ...]:
    t = T(arr)
    if t.ndim < 2: raise ValueError("input array must be at least 2-d")
    if len(set(t.shape)) != 1: raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(t.shape[0], t.ndim)


def unravel_index(indices: ArrayLike, shape: SupportsIndex | tuple[SupportsIndex, ...] | list[SupportsIndex],
                  order: str = "C") -> tuple[Tensor, ...]:
    """The coordinates in an array of `shape` of flat indices: index // stride % dim per axis (int64). Indices out of
    range raise NumPy's ValueError (while tracing when they are known, else after the call)."""
    dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(d) for d in shape)
    if order not in ("C", "F"): raise ValueError("only 'C' or 'F' order is permitted")
    i = T(indices)
    if not (i.uop.dtype.is_int or i.uop.dtype.is_bool) or i.weak and not isinstance(indices, int):
        raise TypeError("only int indices permitted")
    i = Tensor(i.uop.cast(dtypes.int64))
    size = math.prod(dims)
    bad = (i < 0) | (i >= size)
    known = i.known()
    if known is not None:   # known while tracing: NumPy's error now
        wrong = known[(known < 0) | (known >= size)]
        if wrong.size: raise ValueError(f"index {wrong.flat[0]} is out of bounds for array with size {size}")
    elif i.size:
        add_check(bad, i, lambda x: ValueError(f"index {x} is out of bounds for array with size {size}"))
    axes = range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims))
    out: list[Tensor] = [None] * len(dims)   # type: ignore[list-item]
    stride = 1
    for a in axes:
        out[a] = Tensor(((i // stride) % dims[a]).uop) if dims[a] else Tensor(i.uop)
        stride *= dims[a]
    return tuple(out)


def ravel_multi_index(multi_index, dims: SupportsIndex | tuple[SupportsIndex, ...] | list[SupportsIndex],
                      mode: str = "raise", order: str = "C") -> Tensor:
    """Flat indices of coordinates in an array of shape `dims` (int64); mode 'raise', 'wrap' or 'clip' (one per
    axis or one for all) for coordinates out of range."""
    dims = (operator.index(dims),) if not isinstance(dims, (tuple, list)) else tuple(operator.index(d) for d in dims)
    if order not in ("C", "F"): raise ValueError("only 'C' or 'F' order is permitted")
    coords = [T(c) for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    for md in modes:
        if md not in ("raise", "wrap", "clip"):
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got '{md}')")
    from numfn.numpy.manipulation import broadcast_arrays
    for c in coords:
        if not (c.uop.dtype.is_int or c.uop.dtype.is_bool):
            raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule "
                            "'safe'")
    coords = list(broadcast_arrays(*(Tensor(c.uop.cast(dtypes.int64)) for c in coords)))
    strides, s = [0] * len(dims), 1
    for a in (range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims))):
        strides[a], s = s, s * dims[a]
    from numfn.numpy.ufunc_functions import clip
    total = Tensor(UOp.const_like(dtypes.int64, 0, coords[0].shape if coords else ()))
    for c, d, md, st in zip(coords, dims, modes, strides):
        if md == "wrap":
            c = c % d if d else c
        elif md == "clip":
            c = clip(c, 0, max(d - 1, 0))
        else:
            bad = (c < 0) | (c >= d)
            known = bad.known()
            if known is not None:   # known while tracing
                if known.any(): raise ValueError("invalid entry in coordinates array")
            elif c.size:
                add_check(bad, 0, lambda _: ValueError("invalid entry in coordinates array"))
        total = total + c * st
    return Tensor(total.uop)


# ---- windows and matrices -----------------------------------------------------------------------------------------
def _window(M, make) -> Tensor:
    """A symmetric window of M points (float64): empty for M < 1, [1.] for M == 1, else make(n, M) with n the
    odd offsets 1-M, 3-M, ..., M-1."""
    from numfn.numpy.creation import arange, ones, zeros
    M = float(np.float64(M))
    if M < 1: return zeros((0,))
    if M == 1: return ones((1,))
    n = arange(1 - M, M, 2).astype(np.float64)
    return Tensor(make(n, M).uop)


def hamming(M: int) -> Tensor:
    """The Hamming window: 0.54 + 0.46 cos(pi n / (M-1))."""
    from numfn.numpy.ufuncs import cos
    return _window(M, lambda n, m: 0.54 + 0.46 * cos(math.pi * n / (m - 1)))


def hanning(M: int) -> Tensor:
    """The Hann window: 0.5 + 0.5 cos(pi n / (M-1))."""
    from numfn.numpy.ufuncs import cos
    return _window(M, lambda n, m: 0.5 + 0.5 * cos(math.pi * n / (m - 1)))


def blackman(M: int) -> Tensor:
    """The Blackman window: 0.42 + 0.5 cos(pi n / (M-1)) + 0.08 cos(2 pi n / (M-1))."""
    from numfn.numpy.ufuncs import cos
    return _window(M, lambda n, m: 0.42 + 0.5 * cos(math.pi * n / (m - 1)) + 0.08 * cos(2.0 * math.pi * n / (m - 1)))


def bartlett(M: int) -> Tensor:
    """The triangular window: 1 + n / (M-1) up to the middle, 1 - n / (M-1) after."""
    from numfn.numpy.creation import where_same_dtype
    return _window(M, lambda n, m: where_same_dtype(n <= 0, 1 + n / (m - 1), 1 - n / (m - 1)))


def vander(x: ArrayLike, N: int | None = None, increasing: bool = False) -> Tensor:
    """Columns of powers of x (decreasing unless `increasing`), each the running product of the previous one, in
    NumPy's type (x's type promoted with int64)."""
    from numfn.numpy.creation import ones
    from numfn.numpy.manipulation import concatenate, flip
    t = T(x)
    t = Tensor(t.uop) if t.weak else t
    if t.ndim != 1: raise ValueError("x must be a one-dimensional array or sequence.")
    n = t.shape[0]
    N = n if N is None else operator.index(N)
    if N < 0: raise ValueError("negative dimensions are not allowed")
    dt = as_dtype(np.promote_types(t.dtype, np.int64))
    t = t.astype(dt)
    cols = [ones((n, min(N, 1)), dt)]
    if N > 1: cols.append(t.reshape((n, 1)).broadcast_to((n, N - 1)).cumprod(axis=1))
    v = concatenate(cols, axis=1)
    return Tensor((v if increasing else flip(v, axis=1)).uop)


def _cov_rows(a, dtype, rowvar: bool, name: str) -> Tensor:
    """a as a 2-D array of variables (rows) in `dtype`. As NumPy decides: without rowvar, m is transposed unless it is
    1-D, y unless it has a single row."""
    t = T(a)
    t = Tensor(t.uop) if t.weak else t
    if t.ndim > 2: raise ValueError(f"{name} has more than 2 dimensions")
    one_d = t.ndim == 1
    t = t.astype(dtype).reshape((1,) * (2 - t.ndim) + t.shape)
    if not rowvar and (not one_d if name == "m" else t.shape[0] != 1): t = t.T
    return t


def cov(m: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, bias: bool = False, ddof: float | None = None,
        fweights: ArrayLike | None = None, aweights: ArrayLike | None = None, *,
        dtype: DTypeLike | None = None) -> Tensor:
    """NumPy's covariance of the rows (variables) over the columns (observations): the centered rows' products,
    times 1 / (observations - ddof) (infinite when that is <= 0, as NumPy does after its warning)."""
    if fweights is not None or aweights is not None: raise unsupported("numpy.cov with fweights= or aweights=")
    if ddof is not None and ddof != int(ddof): raise ValueError("ddof must be integer")
    parts = [T(m)] + ([] if y is None else [T(y)])
    if dtype is None:
        dtype = np.result_type(*(p.dtype for p in parts), np.float64)
    dt = as_dtype(dtype)
    X = _cov_rows(m, dt, rowvar, "m")
    Y = None if y is None else _cov_rows(y, dt, rowvar, "y")
    if X.shape[0] == 0:
        from numfn.numpy.creation import zeros
        return zeros((0, 0))   # float64 whatever the dtype, as NumPy's
    if Y is not None:
        from numfn.numpy.manipulation import concatenate
        X = concatenate([X, Y], axis=0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    fact = X.shape[1] - ddof
    factor = np.true_divide(1, fact, dtype=dt.np) if fact > 0 else np.array(np.inf, dtype=dt.np)[()]
    centered = X - X.mean(axis=1).reshape((X.shape[0], 1))
    from numfn.numpy.products import dot
    c = dot(centered, centered.T) * factor
    return Tensor(c.squeeze().uop)


def corrcoef(x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, bias: bool | None = None,
             ddof: float | None = None, *, dtype: DTypeLike | None = None) -> Tensor:
    """The correlation coefficients: cov divided by the outer product of the standard deviations, clipped to
    [-1, 1] (bias and ddof have no effect, as in NumPy)."""
    from numfn.numpy.ufunc_functions import clip
    from numfn.numpy.ufuncs import sqrt
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0: return Tensor((c / c).uop)
    d = sqrt(c.diagonal())
    c = c / d.reshape((-1, 1)) / d.reshape((1, -1))
    return Tensor(clip(c, -1, 1).uop)


def fill_diagonal(a: ArrayLike, val: ArrayLike, wrap: bool = False) -> None:
    """Writes val (repeated as needed) on a's main diagonal, in place; for a tall 2-D matrix `wrap` restarts the
    diagonal every N+1 rows."""
    t = T(a)
    if t.ndim < 2: raise ValueError("array must be at least 2-d")
    if t.ndim == 2:
        step, end = t.shape[1] + 1, (None if wrap else t.shape[1] * t.shape[1])
    else:
        if len(set(t.shape)) != 1: raise ValueError("All dimensions of input must be of equal length")
        step, end = 1 + int(np.cumprod(t.shape[:-1]).sum()), None
    size = t.size
    flat = np.arange(0, size if end is None else min(end, size), step, dtype=np.int64)
    if flat.size == 0: return
    # written through a[rows, cols, ...] (coordinates known while tracing), val repeated cyclically as a.flat does
    coords = tuple(T(c) for c in np.unravel_index(flat, t.shape))
    v = T(val)
    if v.size == 0: return
    if v.ndim:
        v = v.reshape(-1)
        v = gather(v, [Tensor(UOp.iota(flat.size)) % v.size])
    t[coords] = v.astype(t.dtype) if not v.weak else v
