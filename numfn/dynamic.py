"""Arrays whose length is only known at run time: x[mask], np.nonzero, np.flatnonzero, np.argwhere, np.extract,
np.compress, the one-argument np.where.

A DynTensor's size along its first axis is a run-time value, `length` (a 0-d int64 graph), at most a static
`bound`. Its value (`uop`) is stored at the bound with its elements first, in order (the compacted form): a buffer
of the bound and a length, the symbolic sizes of the design. An array selected by a mask also keeps its elements
where they were: `source` (the values over the mask's index space, then the array's other axes) and `mask`.
Consumers to which order does not matter (sums, means, extrema, counts) read those, so `x[x > 0].mean()` compacts
nothing; consumers that need positions (indexing, a returned array) read the compacted form, computed only then.

What works on them:
  - elementwise operations (operators, ufuncs, where, clip, astype) keep the length;
  - reductions over the first axis see the elements before `length` only (or where the mask holds);
  - indexing (ints, integer arrays, slices, masks) checks indices against `length` when the program runs;
  - a returned one is cut to its length after the call; `x.shape[0]` and `x.size` are traced int64 values.
Everything else refuses a DynTensor with an error naming the function (`guard`).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from numfn.args import normalize_axes
from numfn.dtype import dtypes
from numfn.errors import TracerConversionError, unsupported, user_location
from numfn.tensor import Tensor, add_check, gather
from numfn.uop import Ops, UOp

I64 = dtypes.int64


def _i64(value) -> Tensor:
    return Tensor(UOp.const(I64, value))


def _where(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
    from numfn import numpy as fnp
    return fnp.where(c, a, b)


class Length(Tensor):
    """A size known only when the program runs (the length of x[mask]): a traced int64 0-d array. It computes like
    one (x.sum() / x.shape[0]); Python cannot use it as an int."""
    __slots__ = ()

    def __index__(self):
        raise TracerConversionError(
            f"the size of an array selected by values (x[mask], nonzero, ...) is only known when the compiled code "
            f"runs, so it cannot be used as a Python int (at {user_location()}). Use it as an array (x.sum() / "
            "x.size), or keep the mask and use where=/np.where instead")

    __int__ = __index__

    def __repr__(self) -> str:
        return "Length(run-time int64)"


class DynTensor(Tensor):
    """A traced array whose first axis has a run-time length (see the module docstring)."""
    __slots__ = ("length", "source", "mask")
    runtime_length = True

    def __init__(self, compact: UOp, length: UOp, source: UOp | None = None, mask: UOp | None = None,
                 weak: bool = False):
        super().__init__(compact, weak)
        self.length, self.source, self.mask = length, source, mask

    # ---- what it is -------------------------------------------------------------------------------------------
    @property
    def bound(self) -> int:
        return self.uop.shape[0]

    @property
    def shape(self) -> tuple:
        return (Length(self.length),) + self.uop.shape[1:]

    @property
    def size(self) -> Tensor:
        return Length(self.length.alu(Ops.MUL, UOp.const(I64, math.prod(self.uop.shape[1:]))))

    @property
    def ndim(self) -> int:
        return len(self.uop.shape)

    def __len__(self) -> int:
        Length(self.length).__index__()

    def __repr__(self) -> str:
        return f"DynTensor(shape=(run-time <= {self.bound}, {', '.join(map(str, self.uop.shape[1:]))}), " \
               f"dtype={self.uop.dtype.name})"

    def compact(self) -> Tensor:
        """The compacted value at the bound (elements past `length` are unspecified)."""
        return Tensor(self.uop)

    def valid_rows(self) -> Tensor:
        """True at the positions of the first axis (at its bound) that hold elements."""
        n = self.bound
        i = UOp.iota(n) if n else UOp.const_like(I64, 0, (0,))
        return Tensor(i.alu(Ops.CMPLT, self.length.reshape((1,)).expand((n,))))

    def valid(self) -> Tensor:
        """True at the positions (of the bound shape) that hold elements."""
        shape = self.uop.shape
        return Tensor(self.valid_rows().uop.reshape((self.bound,) + (1,) * (len(shape) - 1)).expand(shape))

    def selection(self) -> tuple[Tensor, Tensor, int]:
        """(values, where, k): the elements as values over an index space of k leading axes and a bool array of
        that space saying which are elements: the mask's space when the array came from a mask, else the bound."""
        if self.source is not None:
            k = len(self.mask.shape)
            src = Tensor(self.source)
            m = Tensor(self.mask.reshape(self.mask.shape + (1,) * (src.ndim - k)))
            return src, Tensor(m._broadcast(src.shape)), k
        return self.compact(), self.valid(), 1

    def astype(self, dtype, copy: bool = True) -> DynTensor:
        return _map(lambda t: t.astype(dtype, copy=copy), [self])

    def copy(self, order="C") -> DynTensor:
        return self

    def __getitem__(self, index):
        return getitem(self, index)

    def __setitem__(self, index, value):
        raise unsupported("assignment into an array selected by values (x[mask][...] = v)",
                          "assign through the mask instead: x[mask] = v")

    def _inplace(self, ufunc, symbol, compute, x):
        return NotImplemented   # a selection is a copy no other name sees: y += 1 rebinds y, as NumPy's result

    def __iter__(self):
        self.__len__()

    def __getattribute__(self, name: str):
        if name in _METHODS:
            return functools.partial(_METHODS[name], self)
        if not name.startswith("_") and name not in _OWN and hasattr(np.ndarray, name):
            raise unsupported(f"ndarray.{name} on an array selected by values (x[mask], nonzero, ...), whose length "
                              "is only known at run time", _HINT)
        return object.__getattribute__(self, name)


_HINT = "keep the mask and use where= or np.where(mask, x, 0) instead"
_OWN = {"shape", "size", "ndim", "dtype", "astype", "copy", "T", "itemsize", "nbytes", "compact", "valid",
        "valid_rows", "runtime_length",
        "selection", "bound", "length", "source", "mask", "uop", "weak", "memory", "base", "chain", "known",
        "pyvalue", "rebind", "flatten", "ravel"}


# ---------------------------------------------------------------------------------------------------------------
# making them

def select(values: Tensor, mask: Tensor) -> DynTensor:
    """values[mask] for a bool mask over the leading axes of values: the selected elements in row-major order."""
    k = mask.ndim
    shape = values.shape
    assert shape[:k] == mask.shape
    count = math.prod(mask.shape)
    rest = shape[k:]
    m = mask.uop.cast(dtypes.bool)
    flat_mask = m.reshape((count,))
    length = Tensor(flat_mask.cast(I64)).sum().uop if count else UOp.const(I64, 0)
    compact = _compacted(values.uop.reshape((count,) + rest), flat_mask, count, rest)
    return DynTensor(compact, length, values.uop, m)


def _compacted(flat: UOp, flat_mask: UOp, count: int, rest: tuple[int, ...]) -> UOp:
    """flat[flat_mask] at the bound `count`: each selected row written at its rank among the selected ones."""
    if count == 0: return UOp.const_like(flat.dtype, 0, (0,) + rest)
    ranks = UOp(Ops.SCAN, I64, (flat_mask.cast(I64),), (Ops.ADD, 0)).alu(Ops.SUB, UOp.const_like(I64, 1, (count,)))
    shape = (count,) + rest
    def spread(u: UOp) -> UOp: return u.reshape((count,) + (1,) * len(rest)).expand(shape)
    idx = [spread(ranks)] + [UOp.iota(n).reshape(tuple(n if b == a else 1 for b in range(len(shape)))).expand(shape)
                             if n else UOp.const_like(I64, 0, shape) for a, n in enumerate(rest, 1)]
    empty = UOp(Ops.EMPTY, flat.dtype, (), (shape, "compacted"))
    return UOp(Ops.SCATTER, flat.dtype, (empty, flat, *idx, spread(flat_mask)), (None, True, True))


# ---------------------------------------------------------------------------------------------------------------
# elementwise operations

def _map(fn, operands: list) -> Tensor:
    """fn (an elementwise computation on plain Tensors) over operands of which some are DynTensors: computed on
    the compacted forms (and on the mask's space when every selected operand shares one mask)."""
    dyns = [o for o in operands if isinstance(o, DynTensor)]
    ref = dyns[0]
    rank = ref.ndim
    compact, lazy = [], True
    for o in operands:
        if isinstance(o, DynTensor):
            if o.length is not ref.length or o.bound != ref.bound: o = _aligned(o, ref)
            if o.mask is not ref.mask or o.source is None: lazy = False
            compact.append(Tensor(o.uop, o.weak))
            continue
        t = Tensor.lift(o)
        if t.ndim > rank:
            raise unsupported("combining an array selected by values (x[mask]) with an array of more dimensions",
                              _HINT)
        if t.ndim == rank and t.shape[0] != 1:   # a full first axis: NumPy needs it to be exactly as long
            n = t.shape[0]
            add_check(Tensor(ref.length) != n, Tensor(ref.length),
                      lambda v, n=n, s=t.shape: ValueError(f"operands could not be broadcast together with shapes "
                                                           f"({v},) {s}"))
            lazy = False
            t = Tensor(t.uop.pad(((0, max(ref.bound - n, 0)),) + ((0, 0),) * (t.ndim - 1))
                       .shrink(((0, ref.bound),) + tuple((0, s) for s in t.shape[1:])))
        compact.append(t)
    out = fn(*compact)
    if out.shape[:1] != (ref.bound,) or out.ndim != rank:
        raise unsupported("this operation on an array selected by values (x[mask])", _HINT)
    source = None
    if lazy and ref.source is not None:
        k = len(ref.mask.shape)
        args = []
        for o in operands:
            if isinstance(o, DynTensor): args.append(Tensor(o.source, o.weak))
            else:
                t = Tensor.lift(o)
                t = t if t.ndim < rank else t.reshape(t.shape[1:])   # a size-1 first axis
                args.append(Tensor(t.uop, t.weak).reshape((1,) * k + t.shape) if t.ndim else t)
        source = fn(*args).uop
    return DynTensor(out.uop, ref.length, source, ref.mask if source is not None else None, out.weak)


def _aligned(o: DynTensor, ref: DynTensor) -> DynTensor:
    """o at ref's bound, its length checked equal to ref's when the program runs (NumPy's broadcast error)."""
    add_check(Tensor(o.length) != Tensor(ref.length), Tensor(o.length),
              lambda v: ValueError(f"operands could not be broadcast together with shapes of lengths {v} and another"))
    u = o.uop
    if o.bound < ref.bound: u = u.pad(((0, ref.bound - o.bound),) + ((0, 0),) * (o.ndim - 1))
    elif o.bound > ref.bound: u = u.shrink(((0, ref.bound),) + tuple((0, s) for s in u.shape[1:]))
    return DynTensor(u, ref.length)


def elementwise(fn, operands) -> Tensor:
    """The hook of Tensor's elementwise machinery for operands of which some are DynTensors."""
    return _map(fn, list(operands))


# ---------------------------------------------------------------------------------------------------------------
# reductions

def reduce(fn, y: DynTensor, axis=None, keepdims: bool = False, empty_error: str | None = None, **kw):
    """fn(array, axis=, keepdims=, where=, **kw), a reduction that takes where=, applied to y: over the first axis it
    sees y's elements only; `empty_error` names the reduction that raises for no elements (max, min)."""
    if kw.get("where") is not None:
        raise unsupported("where= on an array selected by values (x[mask])", "combine the two masks instead")
    kw.pop("where", None)
    axes = normalize_axes(axis, y.ndim)
    if 0 not in axes:   # the length stays: reduce the other axes of both forms
        compact = fn(y.compact(), axis=axes, keepdims=keepdims, **kw)
        if y.source is None: return DynTensor(compact.uop, y.length)
        k = len(y.mask.shape)
        source = fn(Tensor(y.source), axis=tuple(a + k - 1 for a in axes), keepdims=keepdims, **kw)
        return DynTensor(compact.uop, y.length, source.uop, y.mask)
    if empty_error is not None:
        add_check(Tensor(y.length) == 0, 0, lambda _: ValueError(f"zero-size array to reduction operation "
                                                                f"{empty_error} which has no identity"))
    values, where, k = y.selection()
    inner = tuple(range(k)) + tuple(a + k - 1 for a in axes if a)
    out = fn(values, axis=inner, keepdims=False, where=where, **kw)
    if keepdims: out = out.reshape(tuple(1 if a in axes else n for a, n in enumerate(y.uop.shape)))
    return out


def _extreme(name: str, op: Ops):
    def method(y: DynTensor, axis=None, out=None, keepdims=False, initial=None, where=None):
        dt = y.uop.dtype
        if dt.is_float: lowest = -math.inf if op is Ops.MAX else math.inf
        else: lowest = dt.min if op is Ops.MAX else dt.max
        empty = None if initial is not None else ("maximum" if op is Ops.MAX else "minimum")
        fn = getattr(Tensor, name)
        return reduce(lambda t, **k: fn(t, initial=lowest if initial is None else initial, **k), y, axis, keepdims,
                      empty, where=where)
    return method


def _arg_extreme(name: str):
    def method(y: DynTensor, axis=None, out=None, *, keepdims=False):
        from numfn.numpy import reductions
        if axis is not None and 0 not in normalize_axes(axis, y.ndim):
            return DynTensor(getattr(reductions, name)(y.compact(), axis=axis, keepdims=keepdims).uop, y.length)
        if y.ndim > 1 and axis is None:
            raise unsupported(f"{name} of a multi-dimensional array selected by values over every axis", _HINT)
        add_check(Tensor(y.length) == 0, 0, lambda _: ValueError(f"attempt to get {name} of an empty sequence"))
        dt = y.uop.dtype
        if dt.is_float: fill = -math.inf if name == "argmax" else math.inf
        else: fill = dt.min if name == "argmax" else dt.max
        filled = Tensor(y.valid().uop.alu(Ops.WHERE, y.uop, UOp.const_like(dt, fill, y.uop.shape)))
        # positions past the length hold the fill, after every element: ties go to the first element anyway
        return getattr(reductions, name)(filled, axis=0, keepdims=keepdims)
    return method


def _sum_like(name: str):
    def method(y: DynTensor, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, **kw):
        fn = getattr(Tensor, name)
        extra = {"dtype": dtype, **({"initial": initial} if initial is not None else {}), **kw}
        return reduce(lambda t, **k: fn(t, **k, **extra), y, axis, keepdims, where=where)
    return method


def _numpy_reduction(name: str, empty_error: str | None = None):
    def method(y: DynTensor, axis=None, *args, keepdims=False, where=None, **kw):
        from numfn import numpy as fnp
        fn = getattr(fnp, name)
        return reduce(lambda t, **k: fn(t, *args, **k, **kw), y, axis, keepdims, empty_error, where=where)
    return method


def _cumulative(name: str):
    def method(y: DynTensor, axis=None, dtype=None, out=None):
        if y.ndim > 1 and axis is None:
            raise unsupported(f"{name} of a multi-dimensional array selected by values over every axis", _HINT)
        fn = getattr(Tensor, name)
        # along the first axis the compacted prefix is exactly NumPy's result; past the length nothing matters
        out_ = fn(y.compact(), axis=0 if axis is None else axis, dtype=dtype)
        return DynTensor(out_.uop, y.length)
    return method


def _count_nonzero(y: DynTensor, axis=None, *, keepdims=False):
    return (y != 0).sum(axis=axis, dtype=np.int64, keepdims=keepdims)


def _ptp(y: DynTensor, axis=None, out=None, keepdims=False):
    return y.max(axis=axis, keepdims=keepdims) - y.min(axis=axis, keepdims=keepdims)


def _flat(y: DynTensor) -> DynTensor:
    if y.ndim > 1: raise unsupported("flattening a multi-dimensional array selected by values", _HINT)
    return y


_METHODS = {
    "sum": _sum_like("sum"), "prod": _sum_like("prod"), "mean": _sum_like("mean"),
    "max": _extreme("max", Ops.MAX), "min": _extreme("min", Ops.MIN),
    "argmax": _arg_extreme("argmax"), "argmin": _arg_extreme("argmin"),
    "any": _numpy_reduction("any"), "all": _numpy_reduction("all"), "std": _numpy_reduction("std"),
    "var": _numpy_reduction("var"), "cumsum": _cumulative("cumsum"), "cumprod": _cumulative("cumprod"),
    "flatten": lambda y, order="C": _flat(y), "ravel": lambda y, order="C": _flat(y),
}

# numfn.numpy functions that take DynTensors, by name: reductions route to the methods above, the rest are
# elementwise (they reach Tensor._elementwise, which routes to `elementwise`) or handle them themselves
NUMPY = {
    "sum": _METHODS["sum"], "prod": _METHODS["prod"], "mean": _METHODS["mean"], "max": _METHODS["max"],
    "min": _METHODS["min"], "amax": _METHODS["max"], "amin": _METHODS["min"], "argmax": _METHODS["argmax"],
    "argmin": _METHODS["argmin"], "any": _METHODS["any"], "all": _METHODS["all"], "std": _METHODS["std"],
    "var": _METHODS["var"], "cumsum": _METHODS["cumsum"], "cumprod": _METHODS["cumprod"],
    "count_nonzero": _count_nonzero, "ptp": _ptp, "nansum": _numpy_reduction("nansum"),
    "nanprod": _numpy_reduction("nanprod"), "nanmean": _numpy_reduction("nanmean"),
    "nanmax": _numpy_reduction("nanmax", "fmax"), "nanmin": _numpy_reduction("nanmin", "fmin"),
    "nanstd": _numpy_reduction("nanstd"), "nanvar": _numpy_reduction("nanvar"),
    "ravel": lambda y, order="C": _flat(y), "shape": lambda y: y.shape, "ndim": lambda y: y.ndim,
    "size": lambda y, axis=None: y.size if axis is None else y.shape[axis],
    "asarray": lambda y, dtype=None, **kw: y if dtype is None else y.astype(dtype),
    "copy": lambda y, *a, **kw: y,
}
ELEMENTWISE_OK = {"where", "clip", "astype", "array"}


def guard(name: str, fn):
    """numfn.numpy's function `fn`, refusing DynTensor arguments unless it knows them (NUMPY, or elementwise)."""
    special = NUMPY.get(name)

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        if any(isinstance(a, DynTensor) or (isinstance(a, (list, tuple)) and any(isinstance(e, DynTensor) for e in a))
               for a in (*args, *kwargs.values())):
            if special is not None and args and isinstance(args[0], DynTensor): return special(*args, **kwargs)
            if name not in ELEMENTWISE_OK:
                raise unsupported(f"numpy.{name} on an array selected by values (x[mask], nonzero, ...), whose "
                                  "length is only known at run time", _HINT)
        return fn(*args, **kwargs)
    guarded.__wrapped__ = fn
    return guarded


# ---------------------------------------------------------------------------------------------------------------
# indexing

def getitem(y: DynTensor, index):
    """y[index]: the first index element applies to the run-time-length axis (checked against the length when
    the program runs), the rest to the static axes."""
    if not isinstance(index, tuple): index = (index,)
    if not index: return y
    first, rest = index[0], index[1:]
    if first is Ellipsis:
        if rest and not any(i is Ellipsis for i in rest): return _map(lambda t: t[(slice(None),) + rest], [y])
        return y
    if rest: y = _map(lambda t: t[(slice(None),) + rest], [y])
    if isinstance(first, slice): return _slice(y, first)
    t = Tensor.lift(first)
    if isinstance(first, DynTensor) or t.uop.dtype.is_bool:   # y[y > 0]: a selection of the selection
        if not isinstance(first, DynTensor) or first.ndim != 1:
            raise unsupported("this boolean index of an array selected by values", _HINT)
        m = _aligned(first, y) if first.length is not y.length else first
        return select(y.compact(), Tensor(m.uop.cast(dtypes.bool)) & y.valid_rows())
    if not t.uop.dtype.is_int: raise IndexError("arrays used as indices must be of integer (or boolean) type")
    n = Tensor(y.length)
    i = Tensor(t.uop.cast(I64))
    add_check((i < -n) | (i >= n), i, lambda v, ln=n: IndexError(f"index {v} is out of bounds for axis 0"))
    i = Tensor((i < 0).uop.alu(Ops.WHERE, (i + n).uop, i.uop))
    idx = [i.reshape(i.shape + (1,) * (y.ndim - 1))]
    idx += [Tensor(UOp.iota(s).reshape((1,) * (i.ndim + a) + (s,) + (1,) * (y.ndim - 2 - a))) for a, s in
            enumerate(y.uop.shape[1:])]
    return gather(y.compact(), idx)


def _slice(y: DynTensor, s: slice) -> DynTensor:
    """y[start:stop:step] with NumPy's clamping of the bounds to the run-time length."""
    step = 1 if s.step is None else int(s.step)
    if step == 0: raise ValueError("slice step cannot be zero")
    n = Tensor(y.length)

    def bound(v, default: Tensor) -> Tensor:
        if v is None: return default
        v = Tensor.lift(v).astype(np.int64)
        v = _where(v < 0, v + n, v)
        lo, hi = (_i64(0), n) if step > 0 else (_i64(-1), n - 1)
        return _where(v < lo, lo, _where(v > hi, hi, v))

    start = bound(s.start, _i64(0) if step > 0 else n - 1)
    stop = bound(s.stop, n if step > 0 else _i64(-1))
    span = stop - start
    count = (span + (step - 1 if step > 0 else step + 1)) // step
    count = _where(count < 0, _i64(0), count)
    limit = len(range(0, y.bound, abs(step)))
    i = Tensor(UOp.iota(limit)) if limit else Tensor(UOp.const_like(I64, 0, (0,)))
    pos = start + i * step
    pos = _where(pos < 0, _i64(0), pos)   # positions past the count are never read: any in-range one will do
    idx = [pos.reshape((limit,) + (1,) * (y.ndim - 1))]
    idx += [Tensor(UOp.iota(m).reshape((1,) * (a + 1) + (m,) + (1,) * (y.ndim - 2 - a)))
            for a, m in enumerate(y.uop.shape[1:])]
    return DynTensor(gather(y.compact(), idx).uop, count.uop)


def take(x: Tensor, indices: list) -> DynTensor:
    """x[i_0, ..., i_{j-1}] for integer index arrays of run-time length (one length) over x's leading j axes
    (x[np.nonzero(m)], A[rows, cols]): gathered from the compacted indices, and from the mask's space when the
    indices share a mask (then nothing is compacted unless positions are needed)."""
    ref = indices[0]
    rest = x.shape[len(indices):]
    lazy = all(isinstance(i, DynTensor) and i.source is not None and i.mask is ref.mask for i in indices)
    compact_idx, source_idx = [], []
    for a, i in enumerate(indices):
        if not isinstance(i, DynTensor) or i.ndim != 1:
            raise unsupported("this index of run-time length", "index with one-dimensional integer arrays")
        if not i.uop.dtype.is_int: raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if i.length is not ref.length or i.bound != ref.bound: i = _aligned(i, ref)
        n = x.shape[a]
        c = Tensor(i.uop.cast(I64))
        lo, hi = (i.source.bounds if i.source is not None else c.uop.bounds)   # nonzero's are in range
        if lo < 0 or hi >= n:
            add_check(ref.valid_rows() & ((c < -n) | (c >= n)), c,
                      lambda v, a=a, n=n: IndexError(f"index {v} is out of bounds for axis {a} with size {n}"))
        if lo < 0: c = _where(c < 0, c + n, c)
        compact_idx.append(c.reshape((ref.bound,) + (1,) * len(rest)))
        if lazy:
            s = Tensor(i.source.cast(I64))
            if lo < 0: s = _where(s < 0, s + n, s)
            source_idx.append(s.reshape(s.shape + (1,) * len(rest)))
    def trailing(lead: int) -> list:
        return [Tensor(UOp.iota(m).reshape((1,) * (lead + b) + (m,) + (1,) * (len(rest) - 1 - b)))
                for b, m in enumerate(rest)]
    if lazy:   # the gathered elements where the mask holds, compacted once (not the indices and then the values)
        return select(gather(x, source_idx + trailing(len(ref.mask.shape))), Tensor(ref.mask))
    return DynTensor(gather(x, compact_idx + trailing(1)).uop, ref.length)


def spread(v: Tensor, mask: Tensor, dtype) -> Tensor:
    """What x[mask] = v stores: v's elements (along its first axis) at the true positions of the mask, in order, as
    an array of the mask's shape and v's other axes (unspecified where the mask is false). v's length must be the
    number of true positions: NumPy's ValueError otherwise, when the program runs."""
    count = math.prod(mask.shape)
    flat = Tensor(mask.uop.cast(dtypes.bool).reshape((count,)))
    n = flat.astype(np.int64).sum()
    given = Tensor(v.length) if isinstance(v, DynTensor) else _i64(v.shape[0])
    add_check(given != n, given * (count + 1) + n,
              lambda p: ValueError(f"NumPy boolean array indexing assignment cannot assign {p // (count + 1)} input "
                                   f"values to the {p % (count + 1)} output values where the mask is true"))
    values = v.compact() if isinstance(v, DynTensor) else v
    if count == 0 or values.shape[0] == 0:
        return Tensor(UOp.const_like(values.uop.dtype, 0, mask.shape + values.shape[1:]))
    rest = values.shape[1:]
    ranks = Tensor(UOp(Ops.SCAN, I64, (flat.uop.cast(I64),), (Ops.ADD, 0))) - 1
    ranks = _where(ranks < 0, _i64(0), _where(ranks >= values.shape[0], _i64(values.shape[0] - 1), ranks))
    idx = [ranks.reshape((count,) + (1,) * len(rest))]
    idx += [Tensor(UOp.iota(m).reshape((1,) * (1 + b) + (m,) + (1,) * (len(rest) - 1 - b))) for b, m in enumerate(rest)]
    return gather(values, idx).reshape(mask.shape + rest)
