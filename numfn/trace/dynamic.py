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
  - a returned one is cut to its length after the call; `x.shape[0]`, `x.size` and (in converted code) len(x) are
    traced int64 values;
  - loops and branches carry them as their elements at the bound and their lengths (numfn.trace.shrinking).
Everything else refuses a DynTensor with an error naming the function (`guard`).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NoReturn, cast

import numpy as np

from numfn.args import normalize_axes
from numfn.dtype import dtypes
from numfn.errors import RunTimeLengthError, TracerConversionError, unsupported, user_location
from numfn.trace.tensor import Tensor, add_check, gather, numpy_function
from numfn.trace.value_sizes import requested_value
from numfn.trace.subscript import Item, RunTimeLength, assignable, gathered, normalize, setitem, static_slice, window
from numfn.ir.uop import Ops, UOp

I64 = dtypes.int64
_Shape = tuple[int, ...]   # an array's value (a tensor-level UOp) always has a shape: what cast() tells mypy


def _i64(value) -> Tensor:
    return Tensor(UOp.const(I64, value))


def _where(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return numpy_function("where")(c, a, b)


class Length(Tensor):
    """A size known only when the program runs (the length of x[mask]): a traced int64 0-d array. It computes like
    one (x.sum() / x.shape[0]); Python cannot use it as an int."""
    __slots__ = ()

    def __index__(self) -> NoReturn:
        raise TracerConversionError(
            f"the size of an array selected by values (x[mask], nonzero, ...) is only known when the compiled code "
            f"runs, so it cannot be used as a Python int (at {user_location()}). Use it as an array (x.sum() / "
            "x.size), or keep the mask and use where=/np.where instead")

    __int__ = __index__

    def __repr__(self) -> str:
        return "Length(run-time int64)"


class DynTensor(Tensor):
    """A traced array some of whose axes have a run-time length (see the module docstring): `lengths` holds one
    0-d int64 graph per axis of run-time length, None for the others; the value (`uop`) is stored at the bound
    shape with the elements first along each such axis. A window (a slice with traced bounds) is a view of the
    array it was sliced from (`base`, `chain`): writes into it write into that array."""
    __slots__ = ("lengths", "source", "mask")
    runtime_length = True

    def __init__(self, compact: UOp, length: UOp | None = None, source: UOp | None = None,
                 mask: UOp | None = None, weak: bool = False, *, lengths: tuple | None = None):
        super().__init__(compact, weak)
        self.lengths = tuple(lengths) if lengths is not None else \
            (length,) + (None,) * (len(cast(_Shape, compact.shape)) - 1)
        self.source, self.mask = source, mask

    # ---- what it is -------------------------------------------------------------------------------------------
    @property
    def length(self) -> UOp | None:
        """The run-time length of the first axis (None when that axis is static)."""
        return self.lengths[0]

    @property
    def bound(self) -> int:
        return cast(_Shape, self.uop.shape)[0]

    @property
    def shape(self) -> tuple:
        return tuple(n if ln is None else Length(ln) for n, ln in zip(cast(_Shape, self.uop.shape), self.lengths))

    @property
    def size(self) -> Tensor:   # type: ignore[override]  # a run-time value, not an int
        total = UOp.const(I64, math.prod(n for n, ln in zip(cast(_Shape, self.uop.shape), self.lengths) if ln is None))
        for ln in self.lengths:
            if ln is not None: total = total.alu(Ops.MUL, ln)
        return Length(total)

    @property
    def ndim(self) -> int:
        return len(cast(_Shape, self.uop.shape))

    def __len__(self) -> int:
        if self.lengths[0] is None: return cast(_Shape, self.uop.shape)[0]
        # Python's len() must give an int: computed from the arguments in a second pass (numfn.trace.value_sizes)
        return requested_value(Length(cast(UOp, self.length)), "len() of an array selected by values")

    def __repr__(self) -> str:
        dims = ", ".join(str(n) if ln is None else f"run-time <= {n}"
                         for n, ln in zip(cast(_Shape, self.uop.shape), self.lengths))
        return f"DynTensor(shape=({dims}), dtype={self.uop.dtype.name})"

    def compact(self) -> Tensor:
        """The value at the bound shape (elements past a run-time length are unspecified)."""
        return Tensor(self.uop)

    def valid_rows(self) -> Tensor:
        """True at the positions of the first axis (at its bound) that hold elements."""
        n = self.bound
        assert self.length is not None   # asked only of arrays whose first axis has a run-time length
        i = UOp.iota(n) if n else UOp.const_like(I64, 0, (0,))
        return Tensor(i.alu(Ops.CMPLT, self.length.reshape((1,)).expand((n,))))

    def valid(self) -> Tensor:
        """True at the positions (of the bound shape) that hold elements."""
        return valid_mask(cast(_Shape, self.uop.shape), dict(enumerate(self.lengths)))

    def selection(self) -> tuple[Tensor, Tensor, int]:
        """(values, where, k): the elements as values over an index space of k leading axes and a bool array of
        that space saying which are elements: the mask's space when the array came from a mask, else the bound."""
        if self.source is not None:
            assert self.mask is not None and self.mask.shape is not None   # a selection keeps its mask
            k = len(self.mask.shape)
            src = Tensor(self.source)
            m = Tensor(self.mask.reshape(self.mask.shape + (1,) * (src.ndim - k)))
            return src, Tensor(m._broadcast(src.shape)), k
        return self.compact(), self.valid(), 1

    def astype(self, dtype, copy: bool = True) -> Tensor:
        return _map(lambda t: t.astype(dtype, copy=copy), [self])

    def copy(self, order="C") -> DynTensor:
        return DynTensor(self.uop, source=self.source, mask=self.mask, weak=self.weak, lengths=self.lengths)

    def transpose(self, *axes) -> Tensor:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)): axes = tuple(axes[0])
        order = tuple(range(self.ndim))[::-1] if not axes else tuple(normalize_axes(a, self.ndim)[0] for a in axes)
        if sorted(order) != list(range(self.ndim)): raise ValueError("axes don't match array")
        return _made(self, Tensor(self.uop).transpose(order).uop, tuple(self.lengths[a] for a in order))

    @property
    def T(self) -> Tensor:
        return self.transpose()

    @staticmethod
    def runtime_length_elementwise(fn, operands) -> Tensor:
        return elementwise(fn, operands)

    @staticmethod
    def runtime_length_matmul(a, b) -> Tensor:
        return matmul(a, b)

    def __getitem__(self, index):
        return getitem(self, index)

    def __setitem__(self, index, value):
        if self.base is None:
            # an array of its own (x[mask], a window's copy): written in its compacted form, the elements it kept
            # where they were (source, mask) are no longer its value. (x[mask][i] = v writes into such a copy, as
            # in NumPy: x does not change.)
            self.source = self.mask = None
        setitem(self, index, value)

    def _inplace(self, ufunc, symbol, compute, x):
        # a selection is a copy no other name sees: y += 1 rebinds y, as NumPy's result; a window writes through
        return NotImplemented if self.base is None else Tensor._inplace(self, ufunc, symbol, compute, x)

    def __iter__(self):
        self.__len__()

    def __getattribute__(self, name: str):
        if name in METHODS:
            return functools.partial(METHODS[name], self)
        if not name.startswith("_") and name not in _OWN and hasattr(np.ndarray, name):
            raise unsupported(f"ndarray.{name} on an array whose length is only known at run time (x[mask], "
                              "nonzero, a slice with traced bounds)", HINT, RunTimeLengthError)
        return object.__getattribute__(self, name)


def valid_mask(shape: tuple[int, ...], lengths: dict) -> Tensor:
    """True at the positions of an array of bound `shape` inside the run-time `lengths` ({axis: length or None})."""
    out = None
    for a, ln in lengths.items():
        if ln is None: continue
        n = shape[a]
        i = UOp.iota(n) if n else UOp.const_like(I64, 0, (0,))
        here = Tensor(i.alu(Ops.CMPLT, ln.reshape((1,)).expand((n,)))).reshape(
            tuple(n if b == a else 1 for b in range(len(shape))))
        out = here if out is None else out & here
    if out is None: return Tensor(UOp.const_like(dtypes.bool, True, shape))
    return Tensor(out._broadcast(shape))


def _made(like: Tensor, uop: UOp, lengths: tuple, weak: bool | None = None) -> Tensor:
    """An array of value `uop` with these run-time lengths: a DynTensor (a view of `like`'s memory when `like` is a
    window and `uop` is built from it by movement ops), or a plain Tensor when every length is static."""
    weak = like.weak if weak is None else weak
    if all(ln is None for ln in lengths): return Tensor(uop, weak)
    if like.base is not None:
        return like._view(uop, lambda u: DynTensor(u, weak=weak, lengths=lengths))
    return DynTensor(uop, weak=weak, lengths=lengths)


HINT = "keep the mask and use where= or np.where(mask, x, 0) instead"   # what to do instead, in errors
_OWN = {"shape", "size", "ndim", "dtype", "astype", "copy", "T", "transpose", "itemsize", "nbytes", "compact",
        "valid", "valid_rows", "runtime_length", "lengths",
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
    """fn (an elementwise computation on plain Tensors) over operands of which some are DynTensors, broadcasting
    as NumPy does: an axis of run-time length meets the same length (checked when the program runs, unless it is
    the same value), size 1 (broadcast) or a static size (checked equal). Computed at the bound shape (and on the
    mask's space when every operand of run-time length is a selection by one mask)."""
    ts = [o if isinstance(o, DynTensor) else Tensor.lift(o) for o in operands]
    rank = max(t.ndim for t in ts)
    static = _static_sizes(ts, rank)
    ts = [_against_static(t, rank, static) if isinstance(t, DynTensor) else t for t in ts]
    if not any(isinstance(t, DynTensor) for t in ts): return fn(*ts)
    # per result axis: the first operand's run-time length and bound on it
    ref: dict[int, tuple[UOp, int]] = {}
    for t in ts:
        if not isinstance(t, DynTensor): continue
        for a, ln in enumerate(t.lengths):
            if ln is not None: ref.setdefault(a + rank - t.ndim, (ln, cast(_Shape, t.uop.shape)[a]))
    compact = [_fitted(t, rank, ref) for t in ts]
    out = fn(*compact)
    lengths = tuple(ref[a][0] if a in ref else None for a in range(out.ndim)) if out.ndim == rank else None
    if lengths is None or any(out.uop.shape[a] != ref[a][1] for a in ref):
        raise unsupported("this operation on an array whose length is only known at run time", HINT, RunTimeLengthError)
    dyns = [t for t in ts if isinstance(t, DynTensor)]
    first = dyns[0]
    # the selection's lazy form: every run-time operand selected by one mask along its only run-time axis, 0
    lazy = first.source is not None and all(
        d.source is not None and d.mask is first.mask and d.ndim == rank and d.lengths[0] is first.length
        for d in dyns) and all(isinstance(t, DynTensor) or t.ndim < rank or t.shape[0] == 1 for t in ts) and \
        set(ref) == {0}
    if not lazy: return DynTensor(out.uop, weak=out.weak, lengths=lengths)
    assert first.mask is not None and first.mask.shape is not None   # a selection keeps its mask
    k = len(first.mask.shape)
    args = []
    for t in ts:
        if isinstance(t, DynTensor): args.append(Tensor(cast(UOp, t.source), t.weak))   # lazy: all selections
        else:
            t = t if t.ndim < rank else t.reshape(t.shape[1:])   # a size-1 first axis
            args.append(Tensor(t.uop, t.weak).reshape((1,) * k + t.shape) if t.ndim else t)
    source = fn(*args).uop
    return DynTensor(out.uop, first.length, source, first.mask, out.weak)


def _static_sizes(ts: list, rank: int) -> dict[int, int]:
    """The axes (of a result of `rank` axes) where some operand has a static size other than 1, with that size."""
    out: dict[int, int] = {}
    for t in ts:
        lengths = t.lengths if isinstance(t, DynTensor) else (None,) * t.ndim
        for a, (n, ln) in enumerate(zip(t.uop.shape, lengths)):
            if ln is None and n != 1: out.setdefault(a + rank - t.ndim, n)
    return out


def _against_static(t: DynTensor, rank: int, static: dict[int, int]) -> Tensor:
    """A run-time axis of t that meets a static size n (not 1) in another operand: NumPy's result has n elements
    there, so the run-time length must be n or 1 (then broadcast; checked when the program runs), and t becomes
    an operand of static size n along it."""
    u, off, lengths = t.uop, rank - t.ndim, list(t.lengths)
    if all(ln is None or a + off not in static for a, ln in enumerate(t.lengths)): return t
    for a, ln in enumerate(t.lengths):
        n = static.get(a + off)
        if ln is None or n is None: continue
        add_check((Tensor(ln) != 1) & (Tensor(ln) != n), Tensor(ln),
                  lambda v, n=n: ValueError(  # type: ignore[misc]  # mypy infers no lambda with defaults
                      f"operands could not be broadcast together (an axis of length {n} against one of run-time "
                      f"length {v})"))
        shape = cast(_Shape, u.shape)
        bound = shape[a]
        sized = tuple(n if b == a else m for b, m in enumerate(shape))
        if bound == 0:   # always a broadcast error when it runs
            u = UOp.const_like(u.dtype, 0, sized)
        else:
            first = u.shrink(tuple((0, 1) if b == a else (0, m) for b, m in enumerate(shape))).expand(sized)
            same = u.pad(tuple((0, n - bound) if b == a else (0, 0) for b in range(len(shape)))) if bound < n else \
                u.shrink(tuple((0, n) if b == a else (0, m) for b, m in enumerate(shape)))
            one = ln.eq(UOp.const(ln.dtype, 1)).reshape((1,) * len(shape)).expand(sized)
            u = one.where(first, same)
        lengths[a] = None
    return _plain(u, tuple(lengths), t.weak)


def _fitted(t: Tensor, rank: int, ref: dict) -> Tensor:
    """Operand t of an elementwise operation of `rank` axes whose run-time axes are `ref` ({axis: (length,
    bound)}): its value at the bounds, with NumPy's broadcast error (when the program runs) where its size there
    differs from the run-time length."""
    u, off = t.uop, rank - t.ndim
    lengths = t.lengths if isinstance(t, DynTensor) else (None,) * t.ndim
    for a in range(t.ndim):
        if a + off not in ref: continue
        length, bound = ref[a + off]
        n, mine = cast(_Shape, u.shape)[a], lengths[a]
        if mine is None and n == 1: continue   # broadcast
        if mine is not length:
            have = Tensor(mine) if mine is not None else _i64(n)
            add_check(have != Tensor(length), have,
                      lambda v, b=bound: ValueError(  # type: ignore[misc]  # mypy infers no lambda with defaults
                          f"operands could not be broadcast together (an axis of length {v} against one of "
                          "run-time length)"))
        if n < bound: u = u.pad(tuple((0, bound - n) if b == a else (0, 0) for b in range(t.ndim)))
        elif n > bound:
            u = u.shrink(tuple((0, bound) if b == a else (0, m) for b, m in enumerate(cast(_Shape, u.shape))))
    return Tensor(u, t.weak)


def _aligned(o: DynTensor, ref: DynTensor) -> DynTensor:
    """o at ref's bound, its length checked equal to ref's when the program runs (NumPy's broadcast error)."""
    u = _fitted(o, o.ndim, {0: (ref.length, ref.bound)}).uop
    return DynTensor(u, ref.length)


def elementwise(fn, operands) -> Tensor:
    """The hook of Tensor's elementwise machinery for operands of which some are DynTensors."""
    return _map(fn, list(operands))


# ---------------------------------------------------------------------------------------------------------------
# reductions

def _selection(y: DynTensor) -> bool:
    """Whether y is a selection by a mask with its lazy form (only its first axis has a run-time length)."""
    return y.source is not None and all(ln is None for ln in y.lengths[1:])


def _plain(uop: UOp, lengths: tuple, weak: bool = False) -> Tensor:
    """A computed array (no view) of value `uop` with these run-time lengths (a Tensor when all are static)."""
    return Tensor(uop, weak) if all(ln is None for ln in lengths) else DynTensor(uop, weak=weak, lengths=lengths)


def _left(y: DynTensor, axes: tuple, keepdims: bool) -> tuple:
    """The run-time lengths of y's axes that a reduction over `axes` leaves."""
    if keepdims: return tuple(None if a in axes else ln for a, ln in enumerate(y.lengths))
    return tuple(ln for a, ln in enumerate(y.lengths) if a not in axes)


def reduce(fn, y: DynTensor, axis=None, keepdims: bool = False, empty_error: str | None = None, **kw) -> Tensor:
    """fn(array, axis=, keepdims=, where=, **kw), a reduction that takes where=, applied to y: along axes of
    run-time length it sees y's elements only; `empty_error` names the reduction that raises for no elements (max,
    min). Axes of run-time length it does not reduce keep their lengths."""
    if kw.get("where") is not None:
        raise unsupported("where= on an array whose length is only known at run time", "combine the two masks instead")
    kw.pop("where", None)
    assert y.uop.shape is not None   # an array's value is a tensor-level node
    axes = normalize_axes(axis, y.ndim)
    left = _left(y, axes, keepdims)
    if not any(y.lengths[a] is not None for a in axes):   # the lengths stay: reduce the other axes of both forms
        compact = fn(y.compact(), axis=axes, keepdims=keepdims, **kw)
        if not _selection(y): return _plain(compact.uop, left)
        assert y.source is not None and y.mask is not None and y.mask.shape is not None   # a selection
        k = len(y.mask.shape)
        source = fn(Tensor(y.source), axis=tuple(a + k - 1 for a in axes), keepdims=keepdims, **kw)
        return DynTensor(compact.uop, y.length, source.uop, y.mask)
    if empty_error is not None:
        count = _i64(math.prod(y.uop.shape[a] for a in axes if y.lengths[a] is None))
        for a in axes:
            if y.lengths[a] is not None: count = count * Tensor(cast(UOp, y.lengths[a]))
        add_check(count == 0, 0, lambda _: ValueError(f"zero-size array to reduction operation {empty_error} which "
                                                      "has no identity"))
    if not _selection(y):
        out = fn(y.compact(), axis=axes, keepdims=keepdims, where=y.valid(), **kw)
        return _plain(out.uop, left)
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
    """argmax/argmin, and nanargmax/nanargmin (NaN skipped: an all-NaN slice is NumPy's ValueError, raised by the
    call; an empty one is argmax's, as NumPy checks)."""
    def method(y: DynTensor, axis=None, out=None, *, keepdims=False):
        if axis is None and keepdims and y.ndim > 1:   # NumPy keeps every axis, with size 1
            return method(y, None, out).reshape((1,) * y.ndim)
        if axis is None and y.ndim > 1: y = _flat(y, name)
        ax = 0 if axis is None else normalize_axes(axis, y.ndim)[0]
        left = _left(y, (ax,), keepdims)
        if y.lengths[ax] is None:
            return _plain(numpy_function(name)(y.compact(), axis=ax, keepdims=keepdims).uop, left)
        plain = name.removeprefix("nan")
        add_check(Tensor(cast(UOp, y.lengths[ax])) == 0, 0,
                  lambda _: ValueError(f"attempt to get {plain} of an empty sequence"))
        dt = y.uop.dtype
        if name != plain and dt.is_inexact: fill: Any = math.nan   # skipped like the NaNs
        elif dt.is_inexact:   # -inf - inf j is the first complex value in the lexicographic order
            fill = -math.inf if plain == "argmax" else math.inf
            if dt.is_complex: fill = complex(fill, fill)
        else: fill = dt.min if plain == "argmax" else dt.max
        filled = Tensor(y.valid().uop.alu(Ops.WHERE, y.uop, UOp.const_like(dt, fill, cast(_Shape, y.uop.shape))))
        # positions past the length hold the fill, after every element: ties go to the first element anyway
        return _plain(numpy_function(name)(filled, axis=ax, keepdims=keepdims).uop, left)
    return method


def _sum_like(name: str):
    def method(y: DynTensor, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, **kw):
        fn = getattr(Tensor, name)
        extra = {"dtype": dtype, **({"initial": initial} if initial is not None else {}), **kw}
        return reduce(lambda t, **k: fn(t, **k, **extra), y, axis, keepdims, where=where)
    return method


def _numpy_reduction(name: str, empty_error: str | None = None):
    def method(y: DynTensor, axis=None, *args, keepdims=False, where=None, **kw):
        fn = numpy_function(name)
        return reduce(lambda t, **k: fn(t, *args, **k, **kw), y, axis, keepdims, empty_error, where=where)
    return method


def _cumulative(name: str):
    def method(y: DynTensor, axis=None, dtype=None, out=None):
        if axis is None and y.ndim > 1: y = _flat(y, name)
        fn = numpy_function(name)
        # along an axis the prefix before a run-time length is exactly NumPy's result; past it nothing matters
        out_ = fn(y.compact(), axis=0 if axis is None else axis, dtype=dtype)
        return DynTensor(out_.uop, lengths=y.lengths)
    return method


def _count_nonzero(y: DynTensor, axis=None, *, keepdims=False):
    return (y != 0).sum(axis=axis, dtype=np.int64, keepdims=keepdims)


def _ptp(y: DynTensor, axis=None, out=None, keepdims=False):
    return y.max(axis=axis, keepdims=keepdims) - y.min(axis=axis, keepdims=keepdims)


def _flat(y: DynTensor, name: str = "flattening") -> DynTensor:
    """y flattened: its rows' elements in order, which are the first ones of its compacted form when only the first
    axis has a run-time length (a selection of rows)."""
    if y.ndim <= 1: return y
    if any(ln is not None for ln in y.lengths[1:]):
        raise unsupported(f"{name} of a multi-dimensional array whose length along an axis after the first is only "
                          "known at run time", HINT)
    shape = cast(_Shape, y.uop.shape)
    rest = math.prod(shape[1:])
    return DynTensor(y.uop.reshape((math.prod(shape),)), (Tensor(cast(UOp, y.length)) * rest).uop)


METHODS = {
    "sum": _sum_like("sum"), "prod": _sum_like("prod"), "mean": _sum_like("mean"),
    "max": _extreme("max", Ops.MAX), "min": _extreme("min", Ops.MIN),
    "argmax": _arg_extreme("argmax"), "argmin": _arg_extreme("argmin"),
    "any": _numpy_reduction("any"), "all": _numpy_reduction("all"), "std": _numpy_reduction("std"),
    "var": _numpy_reduction("var"), "cumsum": _cumulative("cumsum"), "cumprod": _cumulative("cumprod"),
    "flatten": lambda y, order="C": _flat(y), "ravel": lambda y, order="C": _flat(y),
}


# numfn.numpy functions that take DynTensors, by name: reductions route to the methods above, the rest are
# elementwise (they reach Tensor._elementwise, which routes to `elementwise`) or handle them themselves; numfn.numpy
# adds its own (nanmax and nanmin: numfn.numpy.reductions)
NUMPY = {
    "sum": METHODS["sum"], "prod": METHODS["prod"], "mean": METHODS["mean"], "max": METHODS["max"],
    "min": METHODS["min"], "amax": METHODS["max"], "amin": METHODS["min"], "argmax": METHODS["argmax"],
    "argmin": METHODS["argmin"], "any": METHODS["any"], "all": METHODS["all"], "std": METHODS["std"],
    "var": METHODS["var"], "cumsum": METHODS["cumsum"], "cumprod": METHODS["cumprod"],
    "count_nonzero": _count_nonzero, "ptp": _ptp, "nansum": _numpy_reduction("nansum"),
    "nanprod": _numpy_reduction("nanprod"), "nanmean": _numpy_reduction("nanmean"),
    "nanargmax": _arg_extreme("nanargmax"),
    "nanargmin": _arg_extreme("nanargmin"), "nancumsum": _cumulative("nancumsum"),
    "nancumprod": _cumulative("nancumprod"),
    "nanstd": _numpy_reduction("nanstd"), "nanvar": _numpy_reduction("nanvar"),
    "ravel": lambda y, order="C": _flat(y), "shape": lambda y: y.shape, "ndim": lambda y: y.ndim,
    "size": lambda y, axis=None: y.size if axis is None else y.shape[axis],
    "asarray": lambda y, dtype=None, **kw: y if dtype is None else y.astype(dtype),
    "copy": lambda y, *a, **kw: y.copy(), "transpose": lambda y, axes=None: y.transpose(axes or ()),
}
ELEMENTWISE_OK = {"where", "clip", "astype", "array"}


def matmul(a, b) -> Tensor:
    """NumPy's matmul (and dot) of 1-D and 2-D operands of which some have run-time lengths: a multiply and a sum
    over the shared axis that sees its elements only (the scheduler fuses them)."""
    from numfn.dtype import resolve_ufunc
    a = a if isinstance(a, DynTensor) else Tensor.lift(a)
    b = b if isinstance(b, DynTensor) else Tensor.lift(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (a 0-d array; use * instead)")
    if a.ndim > 2 or b.ndim > 2:
        raise unsupported("a product of arrays of more than two dimensions whose length is only known at run time",
                          HINT)
    _, out = resolve_ufunc("matmul", (a.uop.dtype, b.uop.dtype))
    a, b = a.astype(out.np), b.astype(out.np)
    # a 1-D operand takes no added axis (indexing the result to drop it would be a gather of the window, which
    # hides from the scheduler that the product is needed only over the window: versions.readers_gate)
    if a.ndim == 1 and b.ndim == 1: return (a * b).sum(dtype=out.np)
    if a.ndim == 1: return (a[:, None] * b).sum(axis=0, dtype=out.np)
    if b.ndim == 1: return (a * b[None, :]).sum(axis=1, dtype=out.np)
    return (a[:, :, None] * b[None, :, :]).sum(axis=1, dtype=out.np)


def _outer(a, b, out=None):
    for x in (a, b):
        if x.ndim != 1: raise unsupported("numpy.outer of arrays of several dimensions of run-time length", HINT)
    return a[:, None] * b[None, :]


def _dot(a, b, out=None):
    a = a if isinstance(a, DynTensor) else Tensor.lift(a)
    b = b if isinstance(b, DynTensor) else Tensor.lift(b)
    if a.ndim == 0 or b.ndim == 0: return a * b
    return matmul(a, b)


# products: any of their arguments may have run-time lengths
PRODUCTS = {"matmul": lambda a, b, **kw: matmul(a, b), "dot": _dot, "outer": _outer,
            "inner": lambda a, b: _dot(a, b) if a.ndim <= 1 and b.ndim <= 1 else _dot(a, b.T),
            "vdot": lambda a, b: _dot(a, b), "linalg.matmul": lambda a, b: matmul(a, b), "linalg.outer": _outer}


def guard(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """numfn.numpy's function `fn`, refusing DynTensor arguments unless it knows them (NUMPY, or elementwise)."""
    special = NUMPY.get(name)
    product = PRODUCTS.get(name)

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        if any(isinstance(a, DynTensor) or (isinstance(a, (list, tuple)) and any(isinstance(e, DynTensor) for e in a))
               for a in (*args, *kwargs.values())):
            if special is not None and args and isinstance(args[0], DynTensor): return special(*args, **kwargs)
            if product is not None: return product(*args, **kwargs)
            if name not in ELEMENTWISE_OK:
                raise unsupported(f"numpy.{name} on an array whose length is only known at run time (x[mask], "
                                  "nonzero, a slice with traced bounds)", HINT, RunTimeLengthError)
        return fn(*args, **kwargs)
    guarded.__wrapped__ = fn
    return guarded


# ---------------------------------------------------------------------------------------------------------------
# indexing

def getitem(y: DynTensor, index) -> Tensor:
    """y[index]. Along an axis of run-time length an integer is checked against the length when the program runs,
    and a slice is clamped to it (a window of run-time length); a boolean or integer array indexes the first axis
    of a selection (a selection of it, or gathered elements). The result of a window is a view of its memory."""
    index = index if isinstance(index, tuple) else (index,)
    first = index[0] if index else None
    if y.length is not None and isinstance(first, (Tensor, np.ndarray, list)) and not (
            isinstance(first, Tensor) and first.ndim == 0 and first.uop.dtype.is_int):
        return _select_rows(y, first, index[1:])
    return gathered(y, items(y, index), not any(i is Ellipsis for i in index))


def _select_rows(y: DynTensor, first, rest: tuple):
    """y[first, *rest] for an array `first` along the run-time first axis."""
    if rest: y = cast(DynTensor, getitem(y, (slice(None),) + rest))   # its first axis keeps the run-time length
    if y.ndim > 1 and any(ln is not None for ln in y.lengths[1:]):
        raise unsupported("an index array into an array with several axes of run-time length", HINT)
    t = Tensor.lift(first)
    if isinstance(first, DynTensor) or t.uop.dtype.is_bool:   # y[y > 0]: a selection of the selection
        if not isinstance(first, DynTensor) or first.ndim != 1:
            raise unsupported("this boolean index of an array selected by values", HINT)
        if first.length is y.length: m, valid = first, y.valid_rows()
        elif first.uop.dtype.is_bool and first.bound == y.bound:
            # a mask of another run-time length (c[m] with m from z, both shrunk by a loop): NumPy's IndexError
            # unless the lengths are equal, and then the rows valid in y are those valid in the mask, so the
            # selection is the mask's own (c[m] and z[m] share one running count)
            _check_mask_length(first, Tensor(cast(UOp, y.length)))
            m, valid = first, first.valid_rows()
        else: m, valid = _aligned(first, y), y.valid_rows()
        return select(y.compact(), Tensor(m.uop.cast(dtypes.bool)) & valid)
    if not t.uop.dtype.is_int: raise IndexError("arrays used as indices must be of integer (or boolean) type")
    assert y.length is not None and y.uop.shape is not None   # called for a run-time first axis
    n = Tensor(y.length)
    i = Tensor(t.uop.cast(I64))
    add_check((i < -n) | (i >= n), i, lambda v: IndexError(f"index {v} is out of bounds for axis 0"))
    i = Tensor((i < 0).uop.alu(Ops.WHERE, (i + n).uop, i.uop))
    idx = [i.reshape(i.shape + (1,) * (y.ndim - 1))]
    idx += [Tensor(UOp.iota(s).reshape((1,) * (i.ndim + a) + (s,) + (1,) * (y.ndim - 2 - a))) for a, s in
            enumerate(y.uop.shape[1:])]
    return gather(y.compact(), idx)


def _check_mask_length(mask: DynTensor, n: Tensor) -> None:
    """NumPy's IndexError, when the program runs, for a boolean index of run-time length that is not `n` long."""
    length, k = Tensor(cast(UOp, mask.length)), mask.bound + 1
    add_check(length != n, n * k + length, lambda p: IndexError(
        f"boolean index did not match indexed array along axis 0; size of axis is {p // k} but size of "
        f"corresponding boolean axis is {p % k}"))


def items(y: DynTensor, index) -> list:
    """The index items (numfn.trace.subscript.Item) of `index` over y's bound shape: an axis of run-time length becomes a
    window (a slice clamped to the length, or all of it) or a traced integer checked against the length."""
    index = index if isinstance(index, tuple) else (index,)
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > y.ndim:
        raise IndexError(f"too many indices for array: array is {y.ndim}-dimensional, but {used} were indexed")
    if sum(i is Ellipsis for i in index) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    expanded: list = []
    for i in index:
        if i is Ellipsis: expanded += [slice(None)] * (y.ndim - used)
        else: expanded.append(i)
    if not any(i is Ellipsis for i in index): expanded += [slice(None)] * (y.ndim - used)
    out, axis = [], 0
    assert y.uop.shape is not None   # an array's value is a tensor-level node
    for i in expanded:
        if i is None:
            out.append(Item("none"))
            continue
        n, ln = y.uop.shape[axis], y.lengths[axis]
        if ln is None:
            it = normalize((n,), (i,))[0]
            out.append(Item(it.kind, axis, it.start, it.step, it.count, it.value))
        elif isinstance(i, slice):
            out.append(window(static_slice(i), DynLength(ln, n), axis))
        elif isinstance(i, (int, np.integer)) or (isinstance(i, Tensor) and i.ndim == 0 and i.uop.dtype.is_int):
            k, length = Tensor(Tensor.lift(i).uop.cast(I64)), Tensor(ln)
            add_check((k < -length) | (k >= length), k,
                      lambda v, a=axis: IndexError(  # type: ignore[misc]  # mypy infers no lambda with defaults
                          f"index {v} is out of bounds for axis {a}"))
            out.append(Item("int", axis, value=_where(k < 0, k + length, k)))
        else:
            raise unsupported("this index along an axis whose length is only known at run time",
                              "index it with integers or slices")
        axis += 1
    return out


class DynLength(Tensor):
    """A run-time length with its static bound (what a slice of an axis of run-time length is clamped to)."""
    __slots__ = ("bound",)

    def __init__(self, length: UOp, bound: int):
        super().__init__(length)
        self.bound = bound


def slice_span(start, stop, step, n) -> tuple[Tensor, Tensor]:
    """(first element, count) of slice(start, stop, step) of an axis of n elements (n an int or a 0-d int64 Tensor)
    with Python's clamping of the bounds, as 0-d int64 Tensors computed when the program runs. A traced step (a
    0-d int64 Tensor, never 0: the caller checks) takes the clamping of its sign when the program runs."""
    n = Tensor(n.uop) if isinstance(n, Tensor) else _i64(n)

    def span(step, positive: bool) -> tuple[Tensor, Tensor]:
        def bound(v, default: Tensor) -> Tensor:
            if v is None: return default
            v = Tensor(Tensor.lift(v).uop.cast(I64))
            v = _where(v < 0, v + n, v)
            lo, hi = (_i64(0), n) if positive else (_i64(-1), n - 1)
            return _where(v < lo, lo, _where(v > hi, hi, v))

        first = bound(start, _i64(0) if positive else n - 1)
        last = bound(stop, n if positive else _i64(-1))
        count = (last - first + (step - 1 if positive else step + 1)) // step
        return first, _where(count < 0, _i64(0), count)
    if not isinstance(step, Tensor): return span(step, step > 0)
    (up_first, up_count), (down_first, down_count) = span(step, True), span(step, False)
    return _where(step > 0, up_first, down_first), _where(step > 0, up_count, down_count)


def fit(value, dt, shape: tuple[int, ...], lengths: dict) -> Tensor:
    """`value` as assigned into a region of bound `shape` whose axes in `lengths` have run-time lengths: cast to dt
    and broadcast, an axis of it meeting a run-time length either size 1 or that length (checked when the program
    runs, NumPy's ValueError otherwise); the result at the bound shape."""
    if not isinstance(value, Tensor) and np.ndim(value) == 0: return assignable(value, dt, shape)
    v = value if isinstance(value, DynTensor) else Tensor.lift(value)
    rank = len(shape)
    while v.ndim > rank and cast(_Shape, v.uop.shape)[0] == 1 and (
            not isinstance(v, DynTensor) or v.lengths[0] is None):
        v = _plain(v.uop.reshape(cast(_Shape, v.uop.shape)[1:]), v.lengths[1:] if isinstance(v, DynTensor) else (),
                   v.weak)
    if v.ndim > rank:
        raise ValueError(f"could not broadcast input array from {v.ndim} dimensions into {rank} dimensions")
    off = rank - v.ndim
    ref = {a: (lengths[a], shape[a]) for a in lengths}
    mine = v.lengths if isinstance(v, DynTensor) else (None,) * v.ndim
    for a, ln in enumerate(mine):   # a run-time length of the value where the region's axis is static
        if ln is not None and a + off not in ref: ref[a + off] = (_i64(shape[a + off]).uop, shape[a + off])
    return assignable(_fitted(v, rank, ref), dt, shape)


def take(x: Tensor, indices: list) -> DynTensor:
    """x[i_0, ..., i_{j-1}] for integer index arrays of run-time length (one length) over x's leading j axes
    (x[np.nonzero(m)], A[rows, cols]): gathered from the compacted indices, and from the mask's space when the
    indices share a mask (then nothing is compacted unless positions are needed)."""
    ref = indices[0]
    if len(indices) == 1 and isinstance(ref, DynTensor) and ref.uop.dtype.is_bool and ref.ndim == 1 and x.ndim:
        # a mask of run-time length (z[m] then c[m] in a loop that shrinks both): its length must be x's
        _check_mask_length(ref, _i64(x.shape[0]))
        return cast(DynTensor, _select_rows(DynTensor(x.uop, UOp.const(I64, x.shape[0])), ref, ()))
    rest = x.shape[len(indices):]
    lazy = all(isinstance(i, DynTensor) and i.source is not None and i.mask is ref.mask for i in indices)
    compact_idx, source_idx = [], []
    for a, i in enumerate(indices):
        if not isinstance(i, DynTensor) or i.ndim != 1:
            raise unsupported("this index of run-time length", "index with one-dimensional integer arrays",
                              RunTimeLengthError)
        if not i.uop.dtype.is_int: raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if i.length is not ref.length or i.bound != ref.bound: i = _aligned(i, ref)
        n = x.shape[a]
        c = Tensor(i.uop.cast(I64))
        lo, hi = (i.source.bounds if i.source is not None else c.uop.bounds)   # nonzero's are in range
        if lo < 0 or hi >= n:
            add_check(ref.valid_rows() & ((c < -n) | (c >= n)), c,
                      lambda v, a=a, n=n: IndexError(  # type: ignore[misc]  # mypy infers no lambda with defaults
                          f"index {v} is out of bounds for axis {a} with size {n}"))
        if lo < 0: c = _where(c < 0, c + n, c)
        compact_idx.append(c.reshape((ref.bound,) + (1,) * len(rest)))
        if lazy:
            assert i.source is not None   # a selection by ref's mask (so of ref's length: never realigned)
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
    if isinstance(v, DynTensor) and any(ln is not None for ln in v.lengths[1:]):
        raise unsupported("assigning through a mask an array with a run-time length past its first axis", HINT)
    given = Tensor(v.length) if isinstance(v, DynTensor) and v.length is not None else _i64(v.shape[0])
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


# what indexing (numfn.trace.subscript, below this module) needs of arrays of run-time length
RunTimeLength.array, RunTimeLength.select, RunTimeLength.take = DynTensor, select, take
RunTimeLength.items, RunTimeLength.valid_mask, RunTimeLength.fit = items, valid_mask, fit
RunTimeLength.spread, RunTimeLength.slice_span = spread, slice_span
