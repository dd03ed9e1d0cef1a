"""Array creation: constants, ranges (arange, linspace, logspace, geomspace), grids (meshgrid, mgrid, ogrid, indices),
matrices built from their indices (eye, identity, tri, tril, triu, diag, diagflat), copies and conversion of
array-likes. Index-based constructions are computed from IOTA where they are used: nothing is stored."""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, Literal, SupportsIndex, cast, overload

import numpy as np
import numpy.typing as npt

from numfn.args import as_dtype
from numfn.dtype import DType, check_scalar_fits, dtypes, scalar_dtype
from numfn.errors import unsupported, user_location
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes
from numfn.trace.value_sizes import python_item, requested_value
from numfn.ir.uop import Ops, UOp
from numfn.numpy._typing import ArrayLike, DTypeLike, ShapeLike
from numfn.numpy._core import IMPLEMENTATIONS, implementation

T = Tensor.lift

__all__ = ['full', 'zeros', 'ones', 'full_like', 'zeros_like', 'ones_like', 'arange', 'eye', 'asarray', 'array',
           'empty', 'empty_like', 'copy', 'identity', 'tri', 'tril', 'triu', 'diag', 'diagflat', 'indices',
           'linspace', 'logspace', 'geomspace', 'meshgrid', 'mgrid', 'ogrid']

def size_value(s, what: str) -> Any:
    """`s` as a Python int for a size NumPy reads with operator.index: a traced integer is computed from the
    arguments in a second pass (numfn.trace.value_sizes: one specialization per value); others as NumPy reads them."""
    if not isinstance(s, Tensor): return operator.index(s)
    if s.ndim == 0 and not (s.uop.dtype.is_int and not s.uop.dtype.is_bool):
        if not s.weak and not s.is_scalar():
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        kind = (bool if s.uop.dtype.is_bool else float if s.uop.dtype.is_float else complex).__name__ if s.weak \
            else f"numpy.{s.uop.dtype.np.name}"
        raise TypeError(f"'{kind}' object cannot be interpreted as an integer")
    return requested_value(s, what)


def _shape(shape) -> tuple[int, ...]:
    shape = (shape,) if not isinstance(shape, (tuple, list)) else shape
    if isinstance(shape, Tensor) and shape.ndim == 1 and shape.shape[0] <= 64:   # a traced shape array
        shape = [shape[k] for k in range(shape.shape[0])]
    out = tuple(size_value(s, "an array's shape") for s in shape)
    if any(s < 0 for s in out): raise ValueError("negative dimensions are not allowed")
    return out


def full(shape: ShapeLike, fill_value: ArrayLike, dtype: DTypeLike | None = None) -> Tensor:
    """An array of `shape` filled with `fill_value` (a constant: it costs no memory until stored)."""
    if isinstance(fill_value, (Tensor, np.ndarray, list, tuple)):   # an array fill is broadcast
        t = T(fill_value)
        dt = t.uop.dtype if dtype is None else as_dtype(dtype)
        return Tensor(t.astype(dt).broadcast_to(_shape(shape)).uop).as_array()   # a new array
    dt = scalar_dtype(fill_value) if dtype is None else as_dtype(dtype)
    check_scalar_fits(fill_value, dt, "fill value")   # like NumPy: a Python int must fit an integer dtype
    return Tensor(UOp.const_like(dt, fill_value, _shape(shape))).as_array()


def zeros(shape: ShapeLike, dtype: DTypeLike = np.float64) -> Tensor: return full(shape, 0, dtype)
def ones(shape: ShapeLike, dtype: DTypeLike = np.float64) -> Tensor: return full(shape, 1, dtype)


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype: DTypeLike | None = None, order: str = "K", subok: bool = True,
              shape: ShapeLike | None = None) -> Tensor:
    t = T(a)
    return full(t.shape if shape is None else shape, fill_value, t.uop.dtype if dtype is None else dtype)


def zeros_like(a: ArrayLike, dtype: DTypeLike | None = None, order: str = "K", subok: bool = True,
               shape: ShapeLike | None = None) -> Tensor: return full_like(a, 0, dtype, shape=shape)
def ones_like(a: ArrayLike, dtype: DTypeLike | None = None, order: str = "K", subok: bool = True,
              shape: ShapeLike | None = None) -> Tensor: return full_like(a, 1, dtype, shape=shape)


def arange(start, stop=None, step=None, dtype: DTypeLike | None = None) -> Tensor:
    """NumPy's arange, computed where it is used (an IOTA: no memory, fused into its consumers). The values are
    NumPy's: its first two elements in the result dtype, then element i = first + i * (second - first), as NumPy's
    fill loops compute them (ints wrap alike; float16 in float32, rounded once; complex part by part)."""
    # traced numbers: NumPy's arange reads them as Python numbers (computed in a second pass, numfn.trace.value_sizes)
    start, stop, step = (requested_value(v, "numpy.arange's bounds", python_item)
                         if isinstance(v, Tensor) and v.ndim == 0 else v for v in (start, stop, step))
    for v in (start, stop, step):
        if isinstance(v, Tensor):
            raise TypeError(f"arange needs numbers, not arrays of {v.ndim} dimensions (at {user_location()})")
    if step is None: step = 1
    if stop is None: start, stop = 0, start
    npdt = None if dtype is None else as_dtype(dtype).np
    n = _arange_length(start, stop, step)
    if n is None or n <= 2:   # NumPy's own answer: its dtype, its errors (step 0, ...), its values
        head = np.arange(start, stop, step, dtype=npdt)
        return T(head) if head.size else Tensor(UOp.const_like(as_dtype(head.dtype), 0, (0,)))
    if npdt is None:   # NumPy's: at least intp, promoted with the type of each argument (3.0 makes it float64)
        npdt = np.dtype(np.intp)
        for v in (start, stop, step): npdt = np.promote_types(npdt, np.asarray(v).dtype)
    dt = as_dtype(npdt)
    if dt.is_bool: raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
    head = np.empty(2, npdt)   # NumPy stores start and start + step (Python's arithmetic) into the result dtype
    head[0], head[1] = start, start + step
    i = UOp.iota(n)
    if dt.is_inexact:
        part = dt.component if dt is not dtypes.float16 else dtypes.float32   # NumPy's HALF_fill: in float32
        parts = []
        for values in ((head.real, head.imag) if dt.is_complex else (head,)):
            first, second = values.astype(part.np)
            delta = second - first
            parts.append(i.cast(part).alu(Ops.MUL, UOp.const(part, delta.item())).alu(
                Ops.ADD, UOp.const(part, first.item())))
        u = parts[0].alu(Ops.COMPLEX, parts[1]) if dt.is_complex else parts[0]
        return Tensor(u.cast(dt))
    first, delta = int(head[0]), int(head[1]) - int(head[0])
    u = i.alu(Ops.MUL, UOp.const(dtypes.int64, delta)).alu(Ops.ADD, UOp.const(dtypes.int64, first))
    return Tensor(u.cast(dt))


def _arange_length(start, stop, step) -> int | None:
    """NumPy's length: ceil((stop - start) / step) in the arguments' own arithmetic (NumPy integer scalars wrap, as
    in NumPy's own computation), at least 0; None where NumPy's arange itself must answer (a step of 0, a length
    that is not a finite real number)."""
    try:
        val = (stop - start) / step
    except (ZeroDivisionError, TypeError, OverflowError):
        return None
    if isinstance(val, (complex, np.complexfloating)) or not math.isfinite(val): return None
    return max(0, math.ceil(val))


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = np.float64) -> Tensor:
    """The identity (ones on diagonal k), computed from two ranges: nothing stored."""
    N = size_value(N, "numpy.eye's N")
    M = N if M is None else size_value(M, "numpy.eye's M")
    if N < 0 or M < 0: raise ValueError("negative dimensions are not allowed")
    rows = Tensor(UOp.iota(N).reshape((N, 1)).expand((N, M)))
    cols = Tensor(UOp.iota(M).reshape((1, M)).expand((N, M)))
    return (rows + k == cols).astype(dtype)


_NO_COPY = ("Unable to avoid copy while creating an array as requested.\nIf using `np.array(obj, copy=False)` replace "
            "it with `np.asarray(obj)` to allow a copy when needed (no behavior change in NumPy 1.x).\nFor more "
            "details, see https://numpy.org/devdocs/numpy_2_0_migration_guide.html#adapting-to-changes-in-the-copy-"
            "keyword.")


def asarray(a: ArrayLike, dtype: Any = None, order: str | None = None, *, device: str | None = None,
            copy: bool | None = None, like=None) -> Tensor:
    """`a` as an array: a traced array itself where its dtype matches (writes into the result change it, as
    NumPy's), else a new one; copy=True always a new array, copy=False NumPy's ValueError where one is needed."""
    t = T(a)
    if t.is_scalar(): t = Tensor(t.uop).as_array()   # a Python or NumPy scalar becomes a (strong) 0-d array
    converted = dtype is not None and as_dtype(dtype) is not t.uop.dtype
    if copy is False and (converted or not isinstance(a, (Tensor, np.ndarray))): raise ValueError(_NO_COPY)
    res = t.astype(dtype, copy=False) if converted else t
    return res.copy() if copy and res is t else res


def array(object: ArrayLike, dtype: Any = None, *, copy: bool | None = True, order: str = "K",  # noqa: A002
          subok: bool = False, ndmin: int = 0, ndmax: int = 0, like=None) -> Tensor:
    """NumPy's array: a new array (copy=True, the default: writes into it never change `object`; asarray's sharing
    for copy=None), with at least `ndmin` dimensions (ones prepended)."""
    if ndmax: raise unsupported("the ndmax= argument of numpy.array")
    res = asarray(object, dtype, copy=copy)
    if ndmin > res.ndim: res = res.reshape((1,) * (ndmin - res.ndim) + tuple(res.shape))
    return res


def empty(shape: ShapeLike, dtype: DTypeLike = np.float64, order: str = "C", *, device: str | None = None,
          like=None) -> Tensor:
    """NumPy leaves the values undefined; numfn's are zeros (deterministic, and free: a constant)."""
    return zeros(shape, dtype)


def empty_like(prototype: ArrayLike, dtype: DTypeLike | None = None, order: str = "K", subok: bool = True,
               shape: ShapeLike | None = None, *, device: str | None = None) -> Tensor:
    return zeros_like(prototype, dtype, shape=shape)


def copy(a: ArrayLike, order: str = "K", subok: bool = False) -> Tensor:
    """A new array with a's values: it shares no memory with `a`, so either may be updated in place."""
    return as_strong(a).as_array()


def as_strong(a) -> Tensor:
    """`a` as NumPy's asarray sees it: a Python scalar becomes a (strong) int64/float64/bool array."""
    t = T(a)
    return Tensor(t.uop)


# ---- matrices from their indices ----------------------------------------------------------------------------------
def _rows_cols(n: int, m: int) -> tuple[Tensor, Tensor]:
    """Row and column numbers of an n x m matrix (int64 ranges broadcast to the matrix)."""
    return (Tensor(UOp.iota(n).reshape((n, 1)).expand((n, m))), Tensor(UOp.iota(m).reshape((1, m)).expand((n, m))))


def identity(n: int, dtype: DTypeLike | None = None, *, like=None) -> Tensor:
    return eye(size_value(n, "numpy.identity's n"), dtype=np.float64 if dtype is None else dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = float, *, like=None) -> Tensor:
    """Ones at and below diagonal k (column - row <= k), zeros above."""
    N = size_value(N, "numpy.tri's N")
    M = N if M is None else size_value(M, "numpy.tri's M")
    rows, cols = _rows_cols(max(N, 0), max(M, 0))
    return (cols - rows <= operator.index(k)).astype(dtype)


def _matrix_shape(m: Tensor, name: str) -> tuple[int, int]:
    if m.ndim == 0: raise TypeError(f"{name}() of a 0-d array: tri() missing 1 required positional argument: 'N'")
    return (m.shape[-1], m.shape[-1]) if m.ndim == 1 else cast("tuple[int, int]", m.shape[-2:])


def tril(m: ArrayLike, k: int = 0) -> Tensor:
    """m with the elements above diagonal k zeroed (a 1-D m is taken as a row repeated: the result is 2-D)."""
    t = as_strong(m)
    mask = tri(*_matrix_shape(t, "tril"), k=k, dtype=np.bool_)
    return where_same_dtype(mask, t, Tensor(UOp.const(t.uop.dtype, 0)))


def triu(m: ArrayLike, k: int = 0) -> Tensor:
    """m with the elements below diagonal k zeroed."""
    t = as_strong(m)
    mask = tri(*_matrix_shape(t, "triu"), k=operator.index(k) - 1, dtype=np.bool_)
    return where_same_dtype(mask, Tensor(UOp.const(t.uop.dtype, 0)), t)


def where_same_dtype(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """where(c, a, b) for a and b of one dtype, broadcast together."""
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    return Tensor(c._broadcast(shape).alu(Ops.WHERE, a._broadcast(shape), b._broadcast(shape)))


def diag(v: ArrayLike, k: int = 0) -> Tensor:
    """A 1-D v placed on diagonal k of a square matrix (zeros elsewhere), or diagonal k of a 2-D v (a view)."""
    t = as_strong(v) if not isinstance(v, Tensor) else v
    k = operator.index(k)
    if t.ndim == 2:
        diagonal = implementation("diagonal")
        return diagonal(t, k)
    if t.ndim != 1: raise ValueError("Input must be 1- or 2-d.")
    size = t.shape[0]
    n = size + abs(k)
    # row i holds v[i] at column i + k (k >= 0); column j holds v[j] at row j - k (k < 0): v padded to n and
    # broadcast along the other axis, kept where column - row == k
    u = Tensor(t.uop).uop.pad(((0, abs(k)),))
    vb = Tensor(u.reshape((n, 1) if k >= 0 else (1, n)).expand((n, n)))
    rows, cols = _rows_cols(n, n)
    return where_same_dtype(cols - rows == k, vb, Tensor(UOp.const(t.uop.dtype, 0)))


def diagflat(v: ArrayLike, k: int = 0) -> Tensor:
    """The flattened input on diagonal k of a new square matrix."""
    return diag(as_strong(v).reshape(-1), k)


def indices(dimensions: Sequence[SupportsIndex], dtype: DTypeLike = int,
            sparse: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The index grid of an array of shape `dimensions`: stacked (shape (N, *dimensions)) or, with sparse, a tuple
    of N arrays each varying along one axis."""
    dims = tuple(size_value(d, "numpy.indices's dimensions") for d in dimensions)
    n = len(dims)
    grids = [arange(d, dtype=dtype).reshape(tuple(d if j == i else 1 for j in range(n))) for i, d in enumerate(dims)]
    if sparse: return tuple(grids)
    if not grids: return zeros((0,), dtype)
    stack = implementation("stack")
    return stack([g.broadcast_to(dims) for g in grids])


# ---- evenly spaced values -----------------------------------------------------------------------------------------
def _inexact_type(*xs: Tensor) -> DType:
    """NumPy's result type of the arguments with a weak 0.0 (an inexact type: integers give float64)."""
    rep = {"b": False, "i": 0, "u": 0, "f": 0.0}
    parts = [rep[t.uop.dtype.kind] if t.weak else t.dtype for t in xs]
    return dtypes.from_numpy(np.result_type(*parts, 0.0))


def _move_first(t: Tensor, axis: int) -> Tensor:
    """moveaxis(t, 0, axis), as the functions built on it call it."""
    moveaxis = implementation("moveaxis")
    return moveaxis(t, 0, axis)


def _check_dtype_kind(dtype) -> None:
    if dtype is not None: as_dtype(dtype)   # complex and other dtypes numfn lacks: the unsupported-dtype error


@overload
def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, retstep: Literal[False] = False,
             dtype: DTypeLike | None = None, axis: int = 0, *, device: str | None = None) -> Tensor: ...
@overload
def linspace(start: ArrayLike, stop: ArrayLike, num: int, endpoint: bool, retstep: Literal[True],
             dtype: DTypeLike | None = None, axis: int = 0, *,
             device: str | None = None) -> tuple[Tensor, Tensor]: ...
@overload
def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, *, retstep: Literal[True],
             dtype: DTypeLike | None = None, axis: int = 0,
             device: str | None = None) -> tuple[Tensor, Tensor]: ...
@overload
def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: DTypeLike | None = None, axis: int = 0, *,
             device: str | None = None) -> Tensor | tuple[Tensor, Tensor]: ...


def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: DTypeLike | None = None, axis: int = 0, *,
             device: str | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """`num` evenly spaced values from start to stop (array start/stop give one sequence per element, along `axis`).
    The arithmetic is NumPy's: step = (stop - start) / div in the inexact result type, values i * step + start, the
    last one set to stop when `endpoint` (and i / div * delta where a step underflows to 0); integer dtypes floor."""
    num = size_value(num, "numpy.linspace's num")
    if num < 0: raise ValueError(f"Number of samples, {num}, must be non-negative.")
    _check_dtype_kind(dtype)
    div = num - 1 if endpoint else num
    s, e = T(start), T(stop)
    dt = _inexact_type(s, e)
    sc, ec = Tensor(s.uop.cast(dt)), Tensor(e.uop.cast(dt))
    delta = ec - sc
    y = Tensor(UOp.iota(num).cast(dt).reshape((num,) + (1,) * delta.ndim))
    step = None
    if div > 0:
        step = delta / div
        zero = step == 0
        if zero.uop.op is Ops.CONST:   # decided while tracing (constant start and stop)
            y = y / div * delta if zero.uop.arg else y * step
        else:                          # NumPy asks whether any step is 0: one answer for the whole result
            any_zero = zero.reshape(-1).max() if zero.size > 1 else zero.reshape(())
            y = where_same_dtype(any_zero, y / div * delta, y * step) if zero.size else y * step
    else:
        y = y * delta
    y = y + sc
    if endpoint and num > 1:
        last = Tensor(UOp.iota(num).reshape((num,) + (1,) * delta.ndim)) == num - 1
        y = where_same_dtype(last, ec, y)
    if axis != 0: y = _move_first(y, axis)
    if dtype is not None:
        target = as_dtype(dtype)
        if target.is_int: y = Tensor(y.uop.alu(Ops.FLOOR))   # NumPy floors for integer dtypes (not for bool)
        y = y.astype(target)
    y = Tensor(y.uop)
    if not retstep: return y
    return y, (Tensor(UOp.const(dtypes.float64, math.nan)) if step is None else step)


def logspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, base: ArrayLike = 10.0,
             dtype: DTypeLike | None = None, axis: int = 0) -> Tensor:
    """base ** linspace(start, stop): with NumPy's promotion (a Python-float base takes the exponents' type)."""
    _check_dtype_kind(dtype)
    if not isinstance(base, (float, int)) and T(base).ndim:
        # an array base: NumPy makes all three arrays of the broadcast rank (Python scalars become strong)
        parts = [as_strong(a) for a in (start, stop, base)]
        nd = len(broadcast_shapes(*(p.shape for p in parts)))
        start, stop, base = (p.reshape((1,) * (nd - p.ndim) + p.shape) for p in parts)
        base = base.expand_dims(axis)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = T(base) ** y
    return Tensor(out.uop) if dtype is None else out.astype(dtype)


def geomspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True,
              dtype: npt.DTypeLike | None = None, axis: int = 0) -> Tensor:
    """A geometric sequence from start to stop (negative ranges as the negated positive one): logspace between the
    logarithms, with the ends set to start and stop exactly. A bound of 0 raises NumPy's ValueError: while tracing
    if it is known then, else after the call (a run-time check)."""
    _check_dtype_kind(dtype)
    s, e = as_strong(start), as_strong(stop)
    for t in (s, e):
        zero = ValueError("Geometric sequence cannot include zero")
        if t.uop.op is Ops.CONST:
            if t.uop.arg == 0: raise zero
        elif t.uop.op is Ops.BUFFER:
            if not np.all(t.uop.arg.data): raise zero
        elif t.size:
            add_check(t == 0, 0, lambda _: ValueError("Geometric sequence cannot include zero"))
    dt = dtypes.from_numpy(np.result_type(s.dtype, e.dtype, float(num), np.float64 if dtype is None else dtype))
    out_dtype = dt if dtype is None else as_dtype(dtype)
    s, e = s.astype(dt), e.astype(dt)
    sign = implementation("sign")(s)
    s, e = s / sign, e / sign
    log10 = IMPLEMENTATIONS.get("log10") or (lambda x: implementation("log")(x) / math.log(10.0))
    result = logspace(log10(s), log10(e), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    if num > 0:
        at = Tensor(UOp.iota(num).reshape((num,) + (1,) * (result.ndim - 1)))
        result = where_same_dtype(at == 0, s, result)
        if num > 1 and endpoint: result = where_same_dtype(at == num - 1, e, result)
    result = result * sign
    if axis != 0: result = _move_first(result, axis)
    return Tensor(result.astype(out_dtype).uop)


# ---- grids --------------------------------------------------------------------------------------------------------
def meshgrid(*xi: ArrayLike, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate arrays from coordinate vectors: with indexing 'xy' the first two axes are swapped (Cartesian),
    with 'ij' they are not (matrix); sparse keeps each array one-dimensional in spirit (size 1 along the others)."""
    if indexing not in ("xy", "ij"): raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    n = len(xi)
    ts = [T(x) if isinstance(x, Tensor) else as_strong(x) for x in xi]
    shapes = [[1] * n for _ in range(n)]
    for i in range(n): shapes[i][i] = -1
    if indexing == "xy" and n > 1:
        shapes[0][0], shapes[0][1] = 1, -1
        shapes[1][0], shapes[1][1] = -1, 1
    out = [t.reshape(tuple(s)) for t, s in zip(ts, shapes)]
    if not sparse:
        broadcast_arrays = implementation("broadcast_arrays")
        out = list(broadcast_arrays(*out))
    return tuple(Tensor(o.uop) for o in out) if copy else tuple(out)


class _Grid:
    """mgrid and ogrid: `grid[start:stop:step, ...]` builds the grid of ranges, each like arange (or, for an
    imaginary step such as 5j, that many points from start to stop inclusive, like linspace). As NumPy's, the values
    are i * step + start in the grid's type (int64 when every bound and step is an integer, else float64)."""

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __repr__(self) -> str:
        return "numfn.numpy.ogrid" if self.sparse else "numfn.numpy.mgrid"

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            return self._single(key)
        sizes, num_list = [], [0]
        for k in key:
            start, stop, step = (0 if k.start is None else k.start), k.stop, (1 if k.step is None else k.step)
            if isinstance(step, (complex, np.complexfloating)):
                step = abs(step)
                sizes.append(int(step))
            else:
                sizes.append(math.ceil((stop - start) / step))
            num_list += [start, stop, step]
        typ = np.result_type(*num_list)
        out = []
        for i, (k, n) in enumerate(zip(key, sizes)):
            start, step = (0 if k.start is None else k.start), (1 if k.step is None else k.step)
            if isinstance(step, (complex, np.complexfloating)):
                step = int(abs(step))
                if step != 1: step = (k.stop - start) / float(step - 1)
            shape = tuple(max(n, 0) if j == i else 1 for j in range(len(sizes)))
            g = Tensor(UOp.iota(max(n, 0)).cast(as_dtype(typ)).reshape(shape)) * step + start
            out.append(g)
        if self.sparse: return tuple(Tensor(g.uop) for g in out)
        if any(n < 0 for n in sizes): raise ValueError("negative dimensions are not allowed")
        full_shape = tuple(sizes)
        stack = implementation("stack")
        return stack([g.broadcast_to(full_shape) for g in out]) if out else zeros((0,), typ)

    @staticmethod
    def _single(key: slice) -> Tensor:
        start, stop, step = (0 if key.start is None else key.start), key.stop, key.step
        if isinstance(step, (complex, np.complexfloating)):
            magnitude = cast("float | np.floating", abs(step))   # mypy joins abs() over the union to object
            length = int(magnitude)
            typ = np.result_type(start, stop, magnitude)
            step = length if length == 1 else (stop - start) / float(length - 1)
            return Tensor((Tensor(UOp.iota(length).cast(as_dtype(typ))) * step + start).uop)
        return arange(start, stop, 1 if step is None else step)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
