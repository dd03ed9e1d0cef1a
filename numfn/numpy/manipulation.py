"""Array manipulation: shapes and views (reshape, transpose, moveaxis, flip, rot90, diagonal, ...), joining
(concatenate, stack, block, the *stack family, append, insert), splitting, repetition (tile, repeat), roll, pad and
delete.

Where NumPy returns a view, so does numfn: the result is made with `Tensor._view`, so in-place updates know the two
share memory. Elements that move by computed indices are read with `numfn.trace.tensor.gather` at indices built from IOTA
(or, for positions known only as a list, a small constant index array): one load per element, fused into whatever
consumes the result."""
from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Sequence
from typing import SupportsIndex

import numpy as np

from numfn.args import as_dtype, normalize_axis, refuse
from numfn.dtype import check_scalar_fits, dtypes, result_type
from numfn.errors import unsupported
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes, gather, numpy_function, tensor_method
from numfn.trace.value_sizes import requested_value
from numfn.ir.uop import Ops, UOp
from numfn.numpy import ufuncs
from numfn.numpy.creation import as_strong, where_same_dtype, linspace, size_value, zeros
from numfn.numpy._typing import ArrayLike, Axes, Casting, DTypeLike, ShapeLike
from numfn.numpy._core import implementation

T = Tensor.lift

__all__ = ['reshape', 'ndim', 'shape', 'size', 'transpose', 'swapaxes', 'expand_dims', 'squeeze', 'broadcast_to',
           'ravel', 'astype', 'concatenate', 'stack', 'concat', 'permute_dims', 'matrix_transpose', 'moveaxis',
           'rollaxis', 'flip', 'fliplr', 'flipud', 'rot90', 'diagonal', 'trace', 'tile', 'repeat', 'roll', 'pad',
           'atleast_1d', 'atleast_2d', 'atleast_3d', 'hstack', 'vstack', 'dstack', 'column_stack', 'row_stack',
           'block', 'split', 'array_split', 'hsplit', 'vsplit', 'dsplit', 'unstack', 'broadcast_arrays', 'append',
           'insert', 'delete']


def _array(a) -> Tensor:
    """`a` as NumPy's asanyarray gives it: a traced array itself (so views share its memory family), anything else
    as a strong array."""
    return a if isinstance(a, Tensor) and not a.weak else as_strong(a)


def _axis_tuple(axis, ndim: int, name: str, allow_duplicate: bool = False) -> tuple[int, ...]:
    """NumPy's normalize_axis_tuple: an int or a sequence of ints, each in range; duplicates refused unless allowed."""
    if not isinstance(axis, (tuple, list)):
        try:
            axis = [operator.index(axis)]
        except TypeError:
            pass
    out = tuple(_axis_index(a, ndim, name) for a in axis)
    if not allow_duplicate and len(set(out)) != len(out):
        raise ValueError(f"repeated axis in `{name}` argument" if name else "repeated axis")
    return out


def _axis_index(axis, ndim: int, name: str = "axis") -> int:
    """NumPy's normalize_axis_index, with its AxisError wording."""
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(f"{name + ': ' if name else ''}axis {a} is out of bounds for array of "
                                      f"dimension {ndim}")
    return a % ndim


def _iota_on(n: int, axis: int, ndim: int) -> Tensor:
    """0..n-1 along `axis` of an ndim-dimensional shape (size 1 elsewhere): one gather index."""
    return Tensor(UOp.iota(n).reshape(tuple(n if a == axis else 1 for a in range(ndim))))


def _take(x: Tensor, index, axis: int) -> Tensor:
    """x with its positions along `axis` read at `index` (a 1-D array of positions: a Tensor or an int array)."""
    idx = index if isinstance(index, Tensor) else Tensor.lift(np.asarray(index, dtype=np.int64))
    if idx.shape[0] == 0 or x.size == 0:
        return Tensor(UOp.const_like(x.uop.dtype, 0, x.shape[:axis] + (idx.shape[0],) + x.shape[axis + 1:]))
    runs = np.asarray(index) if not isinstance(index, Tensor) else None
    if runs is not None and runs.size and np.array_equal(runs, np.arange(runs[0], runs[0] + runs.size)):
        start = int(runs[0])   # consecutive positions: a slice, no gather
        return Tensor(x.uop.shrink(tuple((start, start + runs.size) if a == axis else (0, s)
                                         for a, s in enumerate(x.shape))))
    along = idx.reshape(tuple(idx.shape[0] if a == axis else 1 for a in range(x.ndim)))
    return gather(x, [along if a == axis else _iota_on(s, a, x.ndim) for a, s in enumerate(x.shape)])


# ---- shapes ---------------------------------------------------------------------------------------------------
def reshape(a: ArrayLike, shape: ShapeLike | None = None, order: str = "C", *, newshape: ShapeLike | None = None,
            copy: bool | None = None) -> Tensor:
    if shape is None: shape = newshape
    if shape is None: raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    t = _array(a)
    return t.reshape(shape, order=order) if not copy else Tensor(t.reshape(shape, order=order).uop)


def ndim(a: ArrayLike) -> int: return T(a).ndim
def shape(a: ArrayLike) -> tuple[int, ...]: return T(a).shape
def size(a: ArrayLike, axis: int | None = None) -> int: return T(a).size if axis is None else T(a).shape[axis]
def transpose(a: ArrayLike, axes: Sequence[SupportsIndex] | None = None) -> Tensor:
    return _array(a).transpose(*(() if axes is None else (axes,)))
def permute_dims(a: ArrayLike, axes: Sequence[SupportsIndex] | None = None) -> Tensor: return transpose(a, axes)
def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Tensor: return _array(a).swapaxes(axis1, axis2)
def expand_dims(a: ArrayLike, axis: SupportsIndex | Sequence[SupportsIndex]) -> Tensor:
    return _array(a).expand_dims(axis)
def squeeze(a: ArrayLike, axis: Axes = None) -> Tensor: return _array(a).squeeze(axis)
def broadcast_to(array: ArrayLike, shape: ShapeLike, subok: bool = False) -> Tensor:
    return _array(array).broadcast_to(shape)
def ravel(a: ArrayLike, order: str = "C") -> Tensor: return _array(a).ravel(order)
def astype(x: ArrayLike, dtype: DTypeLike, /, *, copy: bool = True, device: str | None = None) -> Tensor:
    return T(x).astype(dtype, copy=copy)


def matrix_transpose(x: ArrayLike, /) -> Tensor:
    """The last two axes swapped (a view)."""
    t = _array(x)
    if t.ndim < 2: raise ValueError(f"Input array must be at least 2-dimensional, but it is {t.ndim}")
    return t.swapaxes(-1, -2)


def moveaxis(a: ArrayLike, source: SupportsIndex | Sequence[SupportsIndex],
             destination: SupportsIndex | Sequence[SupportsIndex]) -> Tensor:
    """The axes `source` moved to positions `destination`, the others keeping their order (a view)."""
    t = _array(a)
    src = _axis_tuple(source, t.ndim, "source")
    dst = _axis_tuple(destination, t.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(t.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)): order.insert(d, s)
    return t.transpose(order)


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Tensor:
    """Axis `axis` moved to just before position `start` (a view)."""
    t = _array(a)
    n = t.ndim
    axis = _axis_index(axis, n)
    if start < 0: start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start: start -= 1
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return t.transpose(order)


def flip(m: ArrayLike, axis: Axes = None) -> Tensor:
    """The order of elements reversed along the given axes (all by default): a view."""
    t = _array(m)
    axes = tuple(range(t.ndim)) if axis is None else _axis_tuple(axis, t.ndim, "")
    return t._view(t.uop.flip(axes))


def fliplr(m: ArrayLike) -> Tensor:
    t = _array(m)
    if t.ndim < 2: raise ValueError("Input must be >= 2-d.")
    return flip(t, 1)


def flipud(m: ArrayLike) -> Tensor:
    t = _array(m)
    if t.ndim < 1: raise ValueError("Input must be >= 1-d.")
    return flip(t, 0)


def rot90(m: ArrayLike, k: int = 1, axes: Sequence[int] = (0, 1)) -> Tensor:
    """Rotation by 90 degrees k times in the plane of `axes`, from the first axis towards the second (a view)."""
    axes = tuple(axes)
    if len(axes) != 2: raise ValueError("len(axes) must be 2.")
    t = _array(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == t.ndim: raise ValueError("Axes must be different.")
    if not all(-t.ndim <= a < t.ndim for a in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={t.ndim}.")
    k = operator.index(k) % 4
    if k == 0: return t._view(t.uop)
    if k == 2: return flip(flip(t, axes[0]), axes[1])
    order = list(range(t.ndim))
    a0, a1 = axes[0] % t.ndim, axes[1] % t.ndim
    order[a0], order[a1] = order[a1], order[a0]
    return flip(t, axes[1]).transpose(order) if k == 1 else flip(t.transpose(order), axes[1])


def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The diagonal `offset` of the planes (axis1, axis2), as a new last axis: a view, read at i, i + offset."""
    t = _array(a)
    if t.ndim < 2: raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = _axis_index(axis1, t.ndim, "axis1"), _axis_index(axis2, t.ndim, "axis2")
    if a1 == a2: raise ValueError("axis1 and axis2 cannot be the same")
    offset = operator.index(offset)
    rest = [i for i in range(t.ndim) if i not in (a1, a2)]
    moved = Tensor(t.uop.permute(tuple(rest) + (a1, a2)))
    n, m = moved.shape[-2:]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    d = builtins.max(0, builtins.min(n - r0, m - c0))
    lead = moved.shape[:-2]
    if d == 0 or moved.size == 0: return t._view(UOp.const_like(t.uop.dtype, 0, lead + (d,)))
    nd = len(lead) + 1
    i = _iota_on(d, nd - 1, nd)
    idx = [_iota_on(s, j, nd) for j, s in enumerate(lead)] + [i + r0, i + c0]
    return t._view(gather(moved, idx).uop)


def trace(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DTypeLike | None = None,
          out: None = None) -> Tensor:
    """The sum along diagonals (NumPy's sum dtype: small integers widen)."""
    refuse("trace", out=out)
    return Tensor(diagonal(a, offset, axis1, axis2).uop).sum(axis=-1, dtype=dtype)


# ---- joining --------------------------------------------------------------------------------------------------
def concatenate(arrays: Sequence, axis: int | None = 0, out: None = None, *, dtype: DTypeLike | None = None,
                casting: Casting = "same_kind") -> Tensor:
    refuse("concatenate", out=out)
    if isinstance(arrays, Tensor): arrays = list(arrays)
    ts = [as_strong(a) for a in arrays]
    if not ts: raise ValueError("need at least one array to concatenate")
    if dtype is not None:
        target = as_dtype(dtype)
        for t in ts:
            if not np.can_cast(t.dtype, target.np, casting):
                raise TypeError(f"Cannot cast array data from {t.dtype!r} to {target.np!r} according to the rule "
                                f"{casting!r}")
        ts = [t.astype(target) for t in ts]
    if axis is None: ts, axis = [t.reshape(-1) for t in ts], 0
    nd = ts[0].ndim
    if nd == 0: raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(ts):
        if t.ndim != nd:
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly, but "
                             f"the array at index 0 has {nd} dimension(s) and the array at index {i} has {t.ndim} "
                             "dimension(s)")
    ax = normalize_axis(axis, nd)
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
    offset, pieces = 0, []
    for t in ts:
        n = t.shape[ax]
        pad = tuple((offset, total - offset - n) if d == ax else (0, 0) for d in range(nd))
        if n: pieces.append((t.uop.cast(dt).pad(pad), UOp.const_like(dtypes.bool, True, t.shape).pad(pad)))
        offset += n
    if not pieces: return zeros(out_shape, dt)
    result = pieces[-1][0]
    for value, mask in reversed(pieces[:-1]): result = mask.alu(Ops.WHERE, value, result)
    return Tensor(result)


concat = concatenate


def stack(arrays: Sequence, axis: int = 0, out: None = None, *, dtype: DTypeLike | None = None,
          casting: Casting = "same_kind") -> Tensor:
    refuse("stack", out=out)
    if isinstance(arrays, Tensor): arrays = list(arrays)
    ts = [as_strong(a) for a in arrays]
    if not ts: raise ValueError("need at least one array to stack")
    if any(t.shape != ts[0].shape for t in ts): raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, ts[0].ndim + 1)
    return concatenate([t.expand_dims(ax) for t in ts], axis=ax, dtype=dtype, casting=casting)


def _atleast(arys, fn):
    out = tuple(fn(_array(a)) for a in arys)
    return out[0] if len(out) == 1 else out


def _at_least_1d(t: Tensor) -> Tensor: return t.reshape(1) if t.ndim == 0 else t
def _at_least_2d(t: Tensor) -> Tensor: return t.reshape((1,) * (2 - t.ndim) + t.shape) if t.ndim < 2 else t


def _at_least_3d(t: Tensor) -> Tensor:
    if t.ndim == 0: return t.reshape(1, 1, 1)
    if t.ndim == 1: return t.reshape(1, t.shape[0], 1)
    if t.ndim == 2: return t.reshape(t.shape + (1,))
    return t


def atleast_1d(*arys: ArrayLike) -> Tensor | tuple[Tensor, ...]:
    """Each input with at least one axis (0-d becomes shape (1,)); one array for one input, else a tuple."""
    return _atleast(arys, _at_least_1d)


def atleast_2d(*arys: ArrayLike) -> Tensor | tuple[Tensor, ...]:
    """Each input with at least two axes (1-D of n becomes (1, n))."""
    return _atleast(arys, _at_least_2d)


def atleast_3d(*arys: ArrayLike) -> Tensor | tuple[Tensor, ...]:
    """Each input with at least three axes (1-D of n becomes (1, n, 1), 2-D (m, n) becomes (m, n, 1))."""
    return _atleast(arys, _at_least_3d)


def _sequence(tup, name: str) -> list:
    if not isinstance(tup, (list, tuple, Tensor, np.ndarray)):
        raise TypeError(f"arrays to {name} must be passed as a \"sequence\" type such as list or tuple.")
    return list(tup)


def hstack(tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: Casting = "same_kind") -> Tensor:
    arrs = [_at_least_1d(_array(a)) for a in _sequence(tup, "stack")]
    axis = 0 if arrs and arrs[0].ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def vstack(tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: Casting = "same_kind") -> Tensor:
    return concatenate([_at_least_2d(_array(a)) for a in _sequence(tup, "stack")], 0, dtype=dtype, casting=casting)


row_stack = vstack


def dstack(tup: Sequence[ArrayLike]) -> Tensor:
    return concatenate([_at_least_3d(_array(a)) for a in _sequence(tup, "stack")], 2)


def column_stack(tup: Sequence[ArrayLike]) -> Tensor:
    """1-D inputs as columns, 2-D and more as they are, joined along axis 1."""
    arrs = []
    for a in _sequence(tup, "stack"):
        t = _array(a)
        arrs.append(t.reshape(-1, 1) if t.ndim == 1 else t.reshape(1, 1) if t.ndim == 0 else t)
    return concatenate(arrs, 1)


def block(arrays: Sequence[ArrayLike]) -> Tensor:
    """An array assembled from nested lists of blocks: the innermost lists join along the last axis, the next ones
    along the axis before it, and so on; blocks get leading size-1 axes up to the result's rank."""
    def depths(x, index):
        if isinstance(x, tuple):
            where = "arrays" + "".join(f"[{i}]" for i in index)
            raise TypeError(f"{where} is a tuple. Only lists can be used to arrange blocks, and np.block does not "
                            "allow implicit conversion from tuple to ndarray.")
        if isinstance(x, list):
            if not x:
                raise ValueError("List at " + "arrays" + "".join(f"[{i}]" for i in index) + " cannot be empty")
            found = [depths(v, index + [i]) for i, v in enumerate(x)]
            first, nd = found[0]
            for idx, n in found[1:]:
                if len(idx) != len(first):
                    raise ValueError(f"List depths are mismatched. First element was at depth {len(first)}, but there "
                                     f"is an element at depth {len(idx)} (arrays"
                                     + "".join(f"[{i}]" for i in idx) + ")")
                nd = builtins.max(nd, n)
            return first, nd
        return index, T(x).ndim

    first, arr_ndim = depths(arrays, [])
    list_ndim = len(first)
    result_ndim = builtins.max(arr_ndim, list_ndim)

    def build(x, depth):
        if depth < list_ndim:
            return concatenate([build(v, depth + 1) for v in x], axis=-(list_ndim - depth))
        t = as_strong(x)
        return t.reshape((1,) * (result_ndim - t.ndim) + t.shape)

    return Tensor(build(arrays, 0).uop)


# ---- splitting ------------------------------------------------------------------------------------------------
def array_split(ary: ArrayLike, indices_or_sections, axis: int = 0) -> list[Tensor]:
    """Views of consecutive parts along `axis`: at the given indices, or into that many parts (the first
    len % sections parts one longer)."""
    t = _array(ary)
    total = t.shape[axis]
    if isinstance(indices_or_sections, Tensor):
        raise unsupported("splitting at traced positions", "pass the positions as Python ints")
    try:
        n_parts = len(indices_or_sections) + 1
        points = [0] + [operator.index(i) for i in indices_or_sections] + [total]
    except TypeError:
        n_parts = int(indices_or_sections)
        if n_parts <= 0: raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(total, n_parts)
        sizes = [0] + extras * [each + 1] + (n_parts - extras) * [each]
        points = list(np.cumsum(sizes))
    swapped = t.swapaxes(axis, 0)
    return [swapped[int(points[i]):int(points[i + 1])].swapaxes(axis, 0) for i in range(n_parts)]


def split(ary: ArrayLike, indices_or_sections, axis: int = 0) -> list[Tensor]:
    """Like array_split, but a number of sections must divide the axis exactly."""
    try:
        len(indices_or_sections)
    except TypeError:
        n = _array(ary).shape[axis]
        if n % indices_or_sections: raise ValueError("array split does not result in an equal division") from None
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary: ArrayLike, indices_or_sections: ArrayLike) -> list[Tensor]:
    t = _array(ary)
    if t.ndim == 0: raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(t, indices_or_sections, 1 if t.ndim > 1 else 0)


def vsplit(ary: ArrayLike, indices_or_sections: ArrayLike) -> list[Tensor]:
    t = _array(ary)
    if t.ndim < 2: raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(t, indices_or_sections, 0)


def dsplit(ary: ArrayLike, indices_or_sections: ArrayLike) -> list[Tensor]:
    t = _array(ary)
    if t.ndim < 3: raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(t, indices_or_sections, 2)


def unstack(x: ArrayLike, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The views x[..., i, ...] along `axis`, as a tuple."""
    t = _array(x)
    if t.ndim == 0: raise ValueError("Input array must be at least 1-d.")
    return tuple(moveaxis(t, axis, 0))


def broadcast_arrays(*args: ArrayLike, subok: bool = False) -> tuple[Tensor, ...]:
    """Views of the inputs broadcast to their common shape (inputs of that shape come back as they are)."""
    ts = [_array(a) for a in args]
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(t if t.shape == shape else t.broadcast_to(shape) for t in ts)


# ---- repetition and rolling ---------------------------------------------------------------------------------------
def tile(A: ArrayLike, reps: SupportsIndex | tuple[SupportsIndex, ...] | list[SupportsIndex] | np.ndarray) -> Tensor:
    """A repeated reps[i] times along axis i (reps and A's shape padded with leading 1s to the same length)."""
    counts: tuple[int, ...] = tuple(size_value(r, "numpy.tile's reps") for r in reps) \
        if isinstance(reps, (tuple, list, np.ndarray)) else (size_value(reps, "numpy.tile's reps"),)
    if any(r < 0 for r in counts): raise ValueError("negative dimensions are not allowed")
    t = as_strong(A)
    nd = builtins.max(len(counts), t.ndim)
    counts = (1,) * (nd - len(counts)) + counts
    shp = (1,) * (nd - t.ndim) + t.shape
    # (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...) and merged: element i of axis k reads A[i % sk]
    u = t.uop.reshape(tuple(v for s in shp for v in (1, s)))
    u = u.expand(tuple(v for r, s in zip(counts, shp) for v in (r, s)))
    return Tensor(u.reshape(tuple(r * s for r, s in zip(counts, shp))))


def repeat(a: ArrayLike, repeats: ArrayLike, axis: int | None = None) -> Tensor:
    """Each element repeated `repeats` times along `axis` (the flattened array for None). Counts must be known while
    tracing (Python ints or NumPy arrays): counts computed by the function would give the result a shape only known
    at run time."""
    if isinstance(repeats, Tensor) and repeats.known() is None: return _repeat_traced(a, repeats, axis)
    counts = np.asarray(repeats.known() if isinstance(repeats, Tensor) else repeats)
    if counts.dtype.kind not in "biu":
        # NumPy converts Python numbers and lists unsafely, arrays under the 'safe' rule
        if isinstance(repeats, np.ndarray) or counts.dtype.kind != "f":
            raise TypeError(f"Cannot cast {'scalar' if counts.ndim == 0 else 'array data'} from {counts.dtype!r} to "
                            "dtype('int64') according to the rule 'safe'")
        counts = counts.astype(np.intp)
    t = as_strong(a)
    if axis is None: t, axis = t.reshape(-1), 0
    else: axis = _axis_index(axis, t.ndim)
    n = t.shape[axis]
    if counts.size == 1:
        r = int(counts.reshape(-1)[0])
        if r < 0: raise ValueError("negative dimensions are not allowed")
        # (.., n, 1, ..) broadcast to (.., n, r, ..) and merged: each element r times in a row
        u = t.uop.reshape(t.shape[:axis + 1] + (1,) + t.shape[axis + 1:])
        u = u.expand(t.shape[:axis + 1] + (r,) + t.shape[axis + 1:])
        return Tensor(u.reshape(t.shape[:axis] + (n * r,) + t.shape[axis + 1:]))
    if counts.ndim > 1 or counts.shape[0] != n:
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({counts.size},)")
    if (counts < 0).any(): raise ValueError("repeats may not contain negative values.")
    return _take(t, np.repeat(np.arange(n), counts), axis)


def _repeat_traced(a: ArrayLike, repeats: Tensor, axis: int | None) -> Tensor:
    """np.repeat with counts computed by the function: the result's length (their sum) is computed from the
    arguments in a second pass (numfn.trace.value_sizes: one specialization per length), and element j of the
    result reads the element whose run of repeats holds j."""
    if not (repeats.uop.dtype.is_int or repeats.uop.dtype.is_bool):
        raise TypeError(f"Cannot cast {'scalar' if repeats.ndim == 0 else 'array data'} from "
                        f"dtype('{repeats.uop.dtype.np.name}') to dtype('int64') according to the rule 'safe'")
    if repeats.ndim > 1: raise ValueError("object too deep for desired array")
    if repeats.size == 1:   # one count for every element: the count itself is the value asked for
        r = requested_value(Tensor(repeats.astype(np.int64).uop.reshape(())), "numpy.repeat's count")
        return repeat(a, r, axis)
    t = as_strong(a)
    if axis is None: t, axis = t.reshape(-1), 0
    else: axis = _axis_index(axis, t.ndim)
    n = t.shape[axis]
    if repeats.shape[0] != n:
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({repeats.size},)")
    counts = repeats.astype(np.int64)
    add_check(counts < 0, counts, lambda v: ValueError("repeats may not contain negative values."))
    total = requested_value(counts.sum(), "numpy.repeat's result length")
    ends = numpy_function("cumsum")(counts)
    positions = numpy_function("searchsorted")(ends, Tensor(UOp.iota(total)), side="right")
    return _take(t, positions, axis)


def roll(a: ArrayLike, shift: ArrayLike, axis: Axes = None) -> Tensor:
    """Elements shifted along the axes, those leaving one end coming back at the other. A shift may be a traced
    integer (the amount is then taken modulo the axis length at run time)."""
    t = as_strong(a) if not isinstance(a, Tensor) else Tensor(a.uop)
    if axis is None: return roll(t.reshape(-1), shift, 0).reshape(t.shape)
    axes = _axis_tuple(axis, t.ndim, "", allow_duplicate=True)
    shifts: list | np.ndarray
    if isinstance(shift, Tensor):
        if shift.ndim > 1 or not (shift.uop.dtype.is_int or shift.uop.dtype.is_bool):
            raise TypeError("roll: a traced shift must be an integer scalar or 1-D array")
        shifts = [shift] if shift.ndim == 0 else [shift[i] for i in range(shift.shape[0])]
    else:
        shifts = np.asarray(shift)
        if shifts.ndim > 1: raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
        shifts = [int(s) for s in shifts.reshape(-1)]
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between arg 0 "
                         f"with shape ({len(shifts)},) and arg 1 with shape ({len(axes)},).")
    pairs = zip(shifts * len(axes) if len(shifts) == 1 else shifts, axes * len(shifts) if len(axes) == 1 else axes)
    total: dict[int, object] = {}
    for s, ax in pairs: total[ax] = total.get(ax, 0) + s
    if t.size == 0: return t
    index = []
    for ax, n in enumerate(t.shape):
        i = _iota_on(n, ax, t.ndim)
        s = total.get(ax, 0)
        if isinstance(s, int) and s % n == 0:
            index.append(i)
            continue
        # result[i] = a[i - s] wrapped: i - s + n for the first s positions, i - s after them
        off = s % n if isinstance(s, int) else Tensor(T(s).uop.cast(dtypes.int64)) % n
        index.append(where_same_dtype(i < off, i - off + n, i - off))
    return gather(t, index)


# ---- padding --------------------------------------------------------------------------------------------------
_PAD_KEYWORDS = {"constant": {"constant_values"}, "edge": set(), "wrap": set(), "empty": set(),
                 "linear_ramp": {"end_values"}, "maximum": {"stat_length"}, "minimum": {"stat_length"},
                 "mean": {"stat_length"}, "median": {"stat_length"}, "reflect": {"reflect_type"},
                 "symmetric": {"reflect_type"}}


def _pairs(x, ndim: int, as_index: bool = False) -> list[tuple]:
    """A per-axis (before, after) pair from a scalar, a pair, or an (ndim, 2) array-like, as NumPy broadcasts it."""
    if x is None: return [(None, None)] * ndim
    if isinstance(x, Tensor):
        raise unsupported("numpy.pad with pad widths or values computed by the function",
                          "pass them as Python numbers")
    arr = np.array(x)
    if as_index: arr = np.round(arr).astype(np.intp)
    if arr.ndim < 3 and (arr.size == 1 or (arr.size == 2 and arr.shape != (2, 1))):
        flat = arr.ravel()
        pair = (flat[0], flat[0]) if arr.size == 1 else (flat[0], flat[1])
        if as_index and min(pair) < 0: raise ValueError("index can't contain negative values")
        return [pair] * ndim
    if as_index and arr.size and arr.min() < 0: raise ValueError("index can't contain negative values")
    return [tuple(p) for p in np.broadcast_to(arr, (ndim, 2)).tolist()]


def _along(t: Tensor, axis: int, start: int, stop: int) -> Tensor:
    """t[..., start:stop, ...] on `axis` (0 <= start <= stop <= length)."""
    return Tensor(t.uop.shrink(tuple((start, stop) if a == axis else (0, s) for a, s in enumerate(t.shape))))


def _flipped(t: Tensor, axis: int) -> Tensor: return Tensor(t.uop.flip((axis,)))


def _widen(t: Tensor, axis: int, n: int) -> Tensor:
    """A size-1 axis broadcast to n."""
    return t.broadcast_to(t.shape[:axis] + (n,) + t.shape[axis + 1:])


def _fill_value(value, dt) -> Tensor:
    """A pad value converted as assigning it into an array of `dt` converts it (NumPy raises for a Python int out of
    range, truncates floats into integers)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        check_scalar_fits(int(value), dt)
    box = np.zeros(1, dt.np)
    box[0] = value
    return Tensor(UOp.const(dt, box[0].item()))


def pad(array: ArrayLike, pad_width, mode: str = "constant", **kwargs) -> Tensor:
    """NumPy's pad for the modes constant, edge, reflect and symmetric (reflect_type even or odd), wrap, linear_ramp,
    maximum, minimum, mean, median and empty (zeros here). Axes are padded one after the other, each from the array
    padded along the axes before it, as NumPy does (which decides the corners)."""
    t = as_strong(array)
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * t.ndim
        for ax, width in pad_width.items():
            seq[ax] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = seq
    if isinstance(pad_width, Tensor):
        raise unsupported("numpy.pad with pad widths computed by the function", "pass them as Python ints")
    widths: np.ndarray | list[tuple[int, int]]
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu": raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(b), int(e)) for b, e in _pairs(widths, t.ndim, as_index=True)]
    if callable(mode): raise unsupported("numpy.pad with a function as mode")
    if mode not in _PAD_KEYWORDS: raise ValueError(f"mode '{mode}' is not supported")
    extra = set(kwargs) - _PAD_KEYWORDS[mode]
    if extra: raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    out_shape = tuple(b + n + e for n, (b, e) in zip(t.shape, widths))
    dt = t.uop.dtype
    if mode == "empty": mode, kwargs = "constant", {}   # NumPy leaves the padding undefined: zeros here
    if mode == "constant":
        return _pad_constant(t, widths, _pairs(kwargs.get("constant_values", 0), t.ndim), out_shape)
    if t.size == 0:
        for ax, (b, e) in enumerate(widths):
            if t.shape[ax] == 0 and (b or e):
                raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        return zeros(out_shape, dt)
    method = kwargs.get("reflect_type", "even")
    if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric") and method != "odd"):
        # each of these reads the array at a position that depends on the output position alone, axis by axis
        # (the same as NumPy's rounds of copies): one gather
        index = [_pad_source(n, b, e, mode).reshape(tuple(-1 if a == ax else 1 for a in range(t.ndim)))
                 for ax, (n, (b, e)) in enumerate(zip(t.shape, widths))]
        return gather(t, index)
    pad_one: Callable[..., Tensor]
    if mode == "linear_ramp":
        ends = _pairs(kwargs.get("end_values", 0), t.ndim)
        pad_one = lambda cur, ax, b, e, p=ends: _pad_ramp(cur, ax, b, e, p[ax])
    elif mode in ("maximum", "minimum", "mean", "median"):
        lengths = _pairs(kwargs.get("stat_length"), t.ndim, as_index=True)
        pad_one = lambda cur, ax, b, e, p=lengths: _pad_stat(cur, ax, b, e, p[ax], mode)
    else:
        pad_one = lambda cur, ax, b, e: _pad_odd(cur, ax, b, e, mode == "symmetric")
    cur = t
    for ax, (b, e) in enumerate(widths):
        if b or e: cur = pad_one(cur, ax, b, e)
    return Tensor(cur.uop)


def _pad_source(n: int, before: int, after: int, mode: str) -> Tensor:
    """The position of the input each output position of a padded axis reads (edge, wrap, even reflections)."""
    t = Tensor(UOp.iota(before + n + after)) - before
    if mode == "edge": return ufuncs.minimum(ufuncs.maximum(t, 0), n - 1)
    if mode == "wrap": return t % n
    if n == 1: return t * 0
    period = 2 * (n - 1) if mode == "reflect" else 2 * n
    u = t % period
    return where_same_dtype(u < n, u, period - u - (mode == "symmetric"))


def _join(cur: Tensor, axis: int, before: Tensor | None, after: Tensor | None) -> Tensor:
    parts = [p for p in (before, cur, after) if p is not None and p.shape[axis]]
    return parts[0] if len(parts) == 1 else concatenate(parts, axis)


def _pad_constant(t: Tensor, widths, values, out_shape) -> Tensor:
    """The array inside, each axis's (before, after) value outside; where a position lies outside along several
    axes the last of them decides, as NumPy fills axis after axis."""
    dt = t.uop.dtype
    out = Tensor(t.uop.pad(tuple(widths))) if t.size else zeros(out_shape, dt)
    for ax, ((b, e), (v0, v1)) in enumerate(zip(widths, values)):
        if not (b or e): continue
        j = _iota_on(out_shape[ax], ax, t.ndim)
        out = where_same_dtype(j < b, _fill_value(v0, dt),
                               where_same_dtype(j >= out_shape[ax] - e, _fill_value(v1, dt), out))
    return Tensor(out.uop)


def _pad_ramp(cur: Tensor, axis: int, b: int, e: int, pair) -> Tensor:
    """Linear ramps from the end values to the edges (NumPy's linspace in the array's dtype, endpoint excluded)."""
    n = cur.shape[axis]
    edges = (_along(cur, axis, 0, 1).squeeze(axis), _along(cur, axis, n - 1, n).squeeze(axis))
    left = linspace(pair[0], edges[0], num=b, endpoint=False, dtype=cur.dtype, axis=axis)
    right = _flipped(linspace(pair[1], edges[1], num=e, endpoint=False, dtype=cur.dtype, axis=axis), axis)
    return _join(cur, axis, left, right)


def _pad_stat(cur: Tensor, axis: int, b: int, e: int, lengths, mode: str) -> Tensor:
    """The maximum, minimum, mean or median of the first (last) stat_length elements, repeated over the pad (means
    and medians rounded half to even for integer arrays)."""
    n = cur.shape[axis]
    lo, hi = (n if v is None or v > n else int(v) for v in lengths)
    if (lo == 0 or hi == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")

    def stat(chunk: Tensor) -> Tensor:
        if mode == "maximum": return chunk.max(axis=axis, keepdims=True)
        if mode == "minimum": return chunk.min(axis=axis, keepdims=True)
        if mode == "median":
            median = implementation("median")
            m = median(chunk, axis=axis, keepdims=True)
        else:
            m = chunk.mean(axis=axis, keepdims=True)
        return _round_half_even(m).astype(cur.dtype) if cur.uop.dtype.is_int else m.astype(cur.dtype)

    left = stat(_along(cur, axis, 0, lo))
    right = left if lo == hi == n else stat(_along(cur, axis, n - hi, n))
    return _join(cur, axis, _widen(left, axis, b), _widen(right, axis, e))


def _round_half_even(x: Tensor) -> Tensor:
    """np.round of floats: to the nearest integer, ties to even."""
    f = Tensor(x.uop.alu(Ops.FLOOR))
    diff = x - f
    odd = f - Tensor((f * 0.5).uop.alu(Ops.FLOOR)) * 2 != 0
    return where_same_dtype((diff > 0.5) | ((diff == 0.5) & odd), f + 1, f)


def _pad_odd(cur: Tensor, axis: int, b: int, e: int, include_edge: bool) -> Tensor:
    """Odd reflections (2 * edge - mirror image) in rounds as NumPy pads: each round mirrors at most the part filled
    so far, rounded to whole periods of the original length; rounds after the first read the previous one from
    memory (each reads its source several times)."""
    period = cur.shape[axis]
    if period == 1:
        return _join(cur, axis, _widen(cur, axis, b), _widen(cur, axis, e))
    eo = 1 if include_edge else 0
    if axis: cur = cur.contiguous()   # padded along an earlier axis
    while b > 0 or e > 0:
        n = cur.shape[axis]
        usable = n // period * period if include_edge else (n - 1) // (period - 1) * (period - 1)
        left = right = None
        if b > 0:
            k = builtins.min(usable, b)
            left = _odd(_along(cur, axis, 0, 1), _flipped(_along(cur, axis, 1 - eo, k + 1 - eo), axis))
            b -= k
        if e > 0:
            k = builtins.min(usable, e)
            right = _odd(_along(cur, axis, n - 1, n), _flipped(_along(cur, axis, n - 1 + eo - k, n - 1 + eo), axis))
            e -= k
        cur = _join(cur, axis, left, right)
        if b > 0 or e > 0: cur = cur.contiguous()
    return cur


def _odd(edge: Tensor, chunk: Tensor) -> Tensor:
    """2 * edge - chunk, computed with NumPy's promotion and stored back in the array's dtype."""
    return (2 * edge - chunk).astype(chunk.dtype)


# ---- inserting and deleting -----------------------------------------------------------------------------------
def _static_positions(obj, what: str):
    if isinstance(obj, Tensor):
        known = obj.known()
        if known is not None: return known[()] if known.ndim == 0 else known
        raise unsupported(f"numpy.{what} at positions computed by the function (the result's shape would depend on "
                          "values)", "pass the positions as Python ints, slices or NumPy arrays")
    return obj


def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Tensor:
    """values joined to the end of arr along `axis` (both flattened for None)."""
    t = as_strong(arr)
    if axis is None:
        t = t.reshape(-1)
        return concatenate([t, as_strong(values).reshape(-1)], 0)
    return concatenate([t, values], axis)


def delete(arr: ArrayLike, obj, axis: int | None = None) -> Tensor:
    """arr without the positions `obj` (an int, a slice, a list or array of ints, or a boolean mask) along `axis`."""
    t = as_strong(arr)
    if axis is None: t, axis = t.reshape(-1), 0
    else: axis = _axis_index(axis, t.ndim)
    obj = _static_positions(obj, "delete")
    kept = np.delete(np.arange(t.shape[axis]), obj)   # NumPy decides the positions (and the errors)
    return Tensor(_take(t, kept, axis).uop)


def insert(arr: ArrayLike, obj, values: ArrayLike, axis: int | None = None) -> Tensor:
    """values inserted before the positions `obj` (an int, a slice, a list or array of ints) along `axis` (arr
    flattened for None), converted to arr's dtype."""
    t = as_strong(arr)
    if axis is None: t, axis = t.reshape(-1), 0
    else: axis = _axis_index(axis, t.ndim)
    n = t.shape[axis]
    obj = _static_positions(obj, "insert")
    positions = np.arange(*obj.indices(n)) if isinstance(obj, slice) else np.array(obj)
    if positions.dtype == bool:
        if positions.ndim != 1: raise ValueError("boolean array argument obj to insert must be one dimensional")
        obj = positions = np.flatnonzero(positions)
    elif positions.ndim > 1:
        raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    v = _fill_value(values, t.uop.dtype) if isinstance(values, (bool, int, float, np.generic)) \
        else Tensor(T(values).uop.cast(t.uop.dtype))
    v = v.reshape((1,) * (t.ndim - v.ndim) + v.shape)
    if positions.size == 1:   # one position: all of values goes there (a scalar position takes them along axis)
        if positions.ndim == 0: v = moveaxis(v, 0, axis)
        count = v.shape[axis]
    else:
        count = positions.size
    slot = t.shape[:axis] + (count,) + t.shape[axis + 1:]
    try:
        v = v.broadcast_to(slot)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {v.shape} could not be broadcast to indexing result "
                         f"of shape {slot}") from None
    # NumPy decides where each old element and each value lands, and raises for positions out of range: in the
    # source list, k >= 0 is arr's element k and -1 - k is value k
    source = np.insert(np.arange(n), obj, -1 - np.arange(count))
    from_values = source < 0
    old = _take(t, np.where(from_values, 0, source), axis)
    if not from_values.any(): return Tensor(old.uop)
    new = _take(v, np.where(from_values, -1 - source, 0), axis)
    mask = Tensor.lift(from_values).reshape(tuple(source.size if a == axis else 1 for a in range(t.ndim)))
    return where_same_dtype(mask, new, old)


# ---- ndarray methods ------------------------------------------------------------------------------------------
@tensor_method("copy")
def _copy_method(self, order: str = "C") -> Tensor:
    """A new array with the same values (sharing no memory with this one); a NumPy scalar's copy is a scalar."""
    out = Tensor(self.uop, self.weak)
    return out if self.is_scalar() else out.as_array()


@tensor_method("diagonal")
def _diagonal_method(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    return diagonal(self, offset, axis1, axis2)


@tensor_method("trace")
def _trace_method(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None) -> Tensor:
    return trace(self, offset, axis1, axis2, dtype, out)


@tensor_method("repeat")
def _repeat_method(self, repeats, axis=None) -> Tensor:
    return repeat(self, repeats, axis)


@tensor_method("dot")
def _dot_method(self, b, out=None) -> Tensor:
    refuse("ndarray.dot", out=out)
    dot = implementation("dot")
    return dot(self, b)


@tensor_method("clip")
def _clip_method(self, min=None, max=None, out=None, **kwargs) -> Tensor:  # noqa: A002 - NumPy's names
    from numfn.numpy.ufunc_functions import clip
    return clip(self, min, max, out, **kwargs)


@tensor_method("fill")
def _fill_method(self, value) -> None:
    """Every element set to `value` (cast as NumPy assigns it): written into the array's memory, as x[...] = value
    (the base of a view, and the caller's array for an input, change too)."""
    if self.weak: raise AttributeError(f"'{type(self.pyvalue).__name__}' object has no attribute 'fill'")
    if self.is_scalar():   # a NumPy scalar's fill does nothing
        return
    # (a traced value is written as it is: x[...] = v casts it, and checks a float scalar into integers as NumPy)
    v = _fill_value(value, self.uop.dtype) if not isinstance(value, Tensor) else value
    if v.ndim: raise ValueError("Input object to FillWithScalar is not a scalar")
    self[...] = v


if "round" not in Tensor.__dict__:   # numfn.numpy.ufuncs may define it (with np.round): then that one stays
    @tensor_method("round")
    def _round_method(self, decimals: int = 0, out=None) -> Tensor:
        from numfn.numpy._core import implementation
        return implementation("round")(self, decimals, out)   # (np.round: numfn.numpy.ufunc_functions, above)


def _matrix_transpose_property(self) -> Tensor:
    return matrix_transpose(self)


tensor_method("mT")(property(_matrix_transpose_property, doc="The last two axes swapped (a view)."))
