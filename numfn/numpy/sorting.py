"""Sorting, searching and unique: sort, argsort, partition, argpartition, searchsorted, lexsort, unique and NumPy 2's
unique_values, unique_counts, unique_inverse, unique_all; the ndarray methods sort (in place), argsort, partition
(in place), argpartition and searchsorted.

Sorting is one native routine per dtype (numfn/runtime/csrc/sort.c, compiled into numfn's native extension), reached
through the extern-call mechanism (numfn/extern.py): the axis sorted is moved last, the rows are computed (by the
kernel of whatever produces them) into the routine's buffer, and the routine sorts every row, a batch of short rows
many at once, on numfn's threads. Fusion stops at the call: the work before and after it fuses as usual. Every sort
is NumPy's stable sort (kind= is accepted and only checked: the result is what kind='stable' gives, which any kind
may give): ascending, NaNs last, equal elements (-0.0 and 0.0 among them, and all NaNs) in their original order.
partition and argpartition sort fully, which fulfils their contract (NumPy guarantees nothing more).

searchsorted needs no sort: a branch-free binary search of ceil(log2(n + 1)) gathers, elementwise in the values
searched for, so it vectorizes and fuses with what surrounds it (digitize, histogram and interp use it).

unique sorts, marks the positions that differ from their predecessor and selects them: an array of run-time length
(numfn.trace.dynamic.DynTensor) whose returned value is cut to its length after the call. Sorting such an array (x[mask],
a window x[k:]) along an axis of run-time length sorts its bound with the positions past the length filled by the
dtype's last value in sort order: a stable sort keeps them after every element. Their methods sort and partition
work in place too (a window writes into the array it views); searchsorted searches the elements of such an `a` only.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np

from numfn.trace import dynamic
from numfn.args import normalize_axis
from numfn.dtype import DType, dtypes, result_type
from numfn.errors import unsupported
from numfn.trace.tensor import Tensor, add_check, gather, tensor_method
from numfn.ir.uop import Ops, UOp
from numfn.numpy._typing import ArrayLike
from numfn.numpy.ufuncs import where

T = Tensor.lift
I64 = dtypes.int64

__all__ = ['sort', 'argsort', 'partition', 'argpartition', 'searchsorted', 'lexsort', 'unique', 'unique_values',
           'unique_counts', 'unique_inverse', 'unique_all', 'sort_complex']

# numfn/runtime/csrc/sort.c sorts rows this long with sorting networks, without scratch memory
NETWORK_MAX = 64


# ---------------------------------------------------------------------------------------------------------------
# the native sort

def _require_native() -> None:
    from numfn.extern import native_routines
    if native_routines() is None:
        from numfn.runtime.extensions import problems
        why = "; ".join(problems())
        raise unsupported("sorting (numpy.sort, argsort, median, percentile, unique, ...) without numfn's native "
                          "extension", "reinstall numfn where a C compiler is available to build it" +
                          (f" ({why})" if why else ""))


def _scratch_row(n: int, dt: DType, arg: bool) -> int:
    """The scratch the native routine needs per row (sort: elements of the dtype; argsort: uint64 words)."""
    if n <= NETWORK_MAX: return 0
    if not arg: return n
    return 4 * n if dt.itemsize == 8 or n > 0xFFFFFFFF else 2 * n


def sort_last(t: Tensor, arg: bool) -> Tensor:
    """t sorted along its last axis (arg: the positions that sort it, int64), NumPy's stable order."""
    dt = t.uop.dtype
    shape = t.shape
    n, rows = shape[-1], math.prod(shape[:-1])
    if rows == 0 or n <= 1:
        if not arg: return Tensor(t.uop)
        return Tensor(UOp.const_like(I64, 0, shape))
    _require_native()
    if dt.is_complex:   # sorted by its keys, the last key first (a stable sort by each in turn: lexsort)
        order: Tensor | None = None
        for key in reversed(_complex_keys(t)):
            keyed = key if order is None else _take_along(key, order, t.ndim - 1)
            step = sort_last(keyed, True)
            order = step if order is None else _take_along(order, step, t.ndim - 1)
        assert order is not None
        return order if arg else _take_along(t, order, t.ndim - 1)
    from numfn.extern import extern
    room = _scratch_row(n, dt, arg)
    scratch = ((rows, room) if room else (1,), dtypes.uint64 if arg else dt, -1, False)
    flat = t.uop.reshape((rows, n))
    if arg:
        out, _ = extern("argsort", dt, (), (n, room), [flat], [((rows, n), I64, -1, False), scratch])
    else:
        out, _ = extern("sort", dt, (), (n, room), [flat], [((rows, n), dt, 0, False), scratch])
    return Tensor(out.reshape(shape))


def _complex_keys(t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Keys whose lexicographic order is NumPy's sort order of complex values: R + Rj, then R + nan j, nan + Rj and
    nan + nan j (R a number that is not NaN), each class ordered by the parts that are not NaN (the real part
    first). The class (int8), then the first part that is not NaN, then the imaginary part of R + Rj."""
    re, im = Tensor(t.real.uop), Tensor(t.imag.uop)
    nan_re, nan_im = re != re, im != im
    zero = UOp.const_like(re.uop.dtype, 0, re.shape)
    cls = nan_re.astype(np.int8) * 2 + nan_im.astype(np.int8)
    first = Tensor(nan_re.uop.alu(Ops.WHERE, nan_im.uop.alu(Ops.WHERE, zero, im.uop), re.uop))
    second = Tensor((nan_re | nan_im).uop.alu(Ops.WHERE, zero, im.uop))
    return cls, first, second


# partitions around at most this many positions use the native select; more sort
SELECT_MAX = 64


def select_last(t: Tensor, kth: list[int]) -> Tensor:
    """t partitioned along its last axis around the positions `kth` (in [0, n)): each holds what a sort puts there,
    smaller elements (in NumPy's order, NaNs last) before it and larger ones after (NumPy's partition)."""
    dt = t.uop.dtype
    shape = t.shape
    n, rows = shape[-1], math.prod(shape[:-1])
    ks = sorted(set(kth))
    if rows == 0 or n <= 1 or not ks: return Tensor(t.uop)
    if dt.is_complex: return sort_last(t, False)   # no native select of complex values: a sort does its work
    _require_native()
    from numfn.extern import extern
    positions = Tensor.lift(np.array(ks, np.int64)).uop
    out, = extern("select", dt, (), (n, len(ks)), [t.uop.reshape((rows, n)), positions], [((rows, n), dt, 0, False)])
    return Tensor(out.reshape(shape))


def _along(t: Tensor, axis: int, fn) -> Tensor:
    """fn (a function of the last axis) applied along `axis`."""
    last = t.ndim - 1
    if axis == last: return fn(t)
    return fn(t.swapaxes(axis, last)).swapaxes(axis, last)


def _sorted(t: Tensor, axis, arg: bool) -> Tensor:
    if axis is None:
        t, axis = t.reshape(-1), 0
    elif t.ndim == 0 and arg:   # NumPy: argsort and argpartition of a 0-d array are [0]
        normalize_axis(axis, 1)
        return Tensor(UOp.const_like(I64, 0, (1,)))
    axis = normalize_axis(axis, t.ndim)
    return _along(t, axis, lambda x: sort_last(x, arg))


_KINDS = {"q": "quicksort", "h": "heapsort", "m": "mergesort", "s": "stable"}


def _check_kind(kind, stable) -> None:
    if stable is not None and kind is not None:
        raise ValueError("`kind` and keyword parameters can't be provided at the same time. Use only one of them.")
    if kind is None: return
    if not isinstance(kind, str): raise TypeError(f"sort kind must be str, not {type(kind).__name__}")
    if kind[:1].lower() not in _KINDS:
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def _check_order(order) -> None:
    if order is not None: raise ValueError("Cannot specify order when the array has no fields.")


def sort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: str | Sequence[str] | None = None, *,
         stable: bool | None = None) -> Tensor:
    """A sorted copy of `a` along `axis` (None: flattened), in NumPy's stable order (NaNs last)."""
    _check_kind(kind, stable)
    _check_order(order)
    return _sorted(T(a), axis, False)


def sort_complex(a: ArrayLike) -> Tensor:
    """a sorted (along its last axis) as a complex array: complex64 for int8, uint8, int16 and uint16 (and complex
    arrays as they are), complex128 otherwise, as NumPy's."""
    t = T(a)
    out = _sorted(Tensor(t.uop), -1, False)   # a 0-d array: NumPy's AxisError
    dt = t.uop.dtype
    if dt.is_complex: return out
    small = dt in (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16)
    return out.astype(np.complex64 if small else np.complex128)


def argsort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: str | Sequence[str] | None = None, *,
            stable: bool | None = None) -> Tensor:
    """The positions that sort `a` along `axis` (None: flattened), stably (ties keep their order, NaNs last)."""
    _check_kind(kind, stable)
    _check_order(order)
    return _sorted(T(a), axis, True)


def _kth(kth, n: int | None) -> list[int]:
    """NumPy's checks of partition's kth (ints or a sequence of them, each in [-n, n); n None: checked later), the
    kth values."""
    if isinstance(kth, Tensor):
        known = kth.known()
        if known is None:
            raise unsupported("a kth of partition computed from the inputs", "pass it as a static argument")
        kth = known
    k = np.asarray(kth)
    if k.ndim > 1: raise ValueError("kth array must have dimension <= 1")
    if k.dtype.kind not in "iu" or k.dtype == np.bool_: raise TypeError("Partition index must be integer")
    values = [int(v) for v in k.reshape(-1).tolist()]
    for v in values:
        if n is not None and not -n <= v < n: raise ValueError(f"kth(={v}) out of bounds ({n})")
    return values


def _partitioned(a, kth, axis, kind, order, arg: bool) -> Tensor:
    if kind != "introselect": raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    _check_order(order)
    t = T(a)
    if axis is None: t, axis = t.reshape(-1), 0
    if t.ndim == 0:
        normalize_axis(axis, 0)   # NumPy's AxisError for the default axis of a 0-d array
    ax = normalize_axis(axis, t.ndim)
    n = t.shape[ax]
    ks = _kth(kth, n)
    if arg or len(set(ks)) > SELECT_MAX:   # a full sort puts every element where partition may put it
        return _sorted(t, axis, arg)
    return _along(t, ax, lambda x: select_last(x, [k % n for k in ks]))


def partition(a: ArrayLike, kth: ArrayLike, axis: int | None = -1, kind: str = "introselect",
              order: str | Sequence[str] | None = None) -> Tensor:
    """A copy of `a` with the k-th element of every kth where it would be sorted, smaller ones before it and larger
    ones after (numfn sorts fully: NumPy's contract, and the kth elements, are what it guarantees)."""
    return _partitioned(a, kth, axis, kind, order, False)


def argpartition(a: ArrayLike, kth: ArrayLike, axis: int | None = -1, kind: str = "introselect",
                 order: str | Sequence[str] | None = None) -> Tensor:
    """The positions that partition `a` (see partition): numfn's are those of a stable sort."""
    t = T(a)
    if t.ndim == 0 and axis is not None:   # NumPy: [0], after checking kth against one element
        if kind != "introselect": raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
        _kth(kth, 1)
        return Tensor(UOp.const_like(I64, 0, (1,)))
    return _partitioned(t, kth, axis, kind, order, True)


# ---------------------------------------------------------------------------------------------------------------
# searching

def _before(x: Tensor, y: Tensor) -> Tensor:
    """x < y in NumPy's sort order: NaN after everything (and equal to NaN; complex values: see _complex_keys)."""
    if x.uop.dtype.is_complex:
        kx, ky = _complex_keys(x), _complex_keys(y)
        out = kx[2] < ky[2]
        for a, b in ((kx[1], ky[1]), (kx[0], ky[0])):   # the class decides, then the first part, then the second
            out = (a < b) | ((a == b) & out)
        return out
    if not x.uop.dtype.is_float: return x < y
    return (x < y) | ((y != y) & (x == x))


def _count_prefix(probe, n: int, shape: tuple[int, ...], take, limit=None) -> Tensor:
    """For each position of `shape`: the length of the longest prefix of a sorted array of n elements whose every
    element satisfies `take(element)` (a predicate that holds on a prefix), found by a branch-free binary search:
    ceil(log2(n + 1)) steps of one gather (`probe(positions)`) each. `limit`: the array's run-time length (<= n)."""
    pos = Tensor(UOp.const_like(I64, 0, shape))
    limit = n if limit is None else limit
    step = 1 << max(n.bit_length() - 1, 0)   # the largest power of two <= n; the steps reach 2 * step - 1 >= n
    while step and n:
        cand = pos + step
        at = Tensor(cand.uop.alu(Ops.MIN, UOp.const_like(I64, n, shape))) - 1
        ok = (cand <= limit) & take(probe(at))
        pos = Tensor(ok.uop.alu(Ops.WHERE, cand.uop, pos.uop))
        step >>= 1
    return pos


def _search(a: Tensor, v: Tensor, right: bool, sorter: Tensor | None = None, limit=None) -> Tensor:
    """searchsorted on Tensors of one dtype: a 1-D, ascending in NumPy's order (through `sorter` if given), its first
    `limit` elements (a run-time length) if given."""
    n = a.shape[0]
    if sorter is None: probe = lambda i: gather(a, [i])  # noqa: E731
    else: probe = lambda i: gather(a, [gather(sorter, [i])])  # noqa: E731
    if right: take = lambda e: ~_before(v, e)  # noqa: E731 - the elements <= v
    else: take = lambda e: _before(e, v)  # noqa: E731 - the elements < v
    return _count_prefix(probe, n, v.shape, take, limit)


def _side(side) -> bool:
    """Whether side= is 'right', with NumPy's errors for anything but 'left' and 'right'."""
    if isinstance(side, bytes): side = side.decode("latin-1")
    if not isinstance(side, str): raise TypeError(f"search side must be str, not {type(side).__name__}")
    if side in ("left", "right"): return side == "right"
    if side[:1].lower() in ("l", "r"): raise ValueError("search side must be one of 'left' or 'right'")
    raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")


def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: ArrayLike | None = None) -> Tensor:
    """Where each of v would be inserted into the ascending 1-D `a` to keep it sorted: before equal elements
    (side='left') or after them ('right'); `sorter` sorts `a` (a[sorter] is ascending). Compared in the common dtype
    of a and v, in NumPy's order (NaN last). A sorter entry outside [0, len(a)) is NumPy's ValueError, raised after
    the call (NumPy raises it only where its search reads that entry; numfn checks them all). `a` and `v` may have
    run-time lengths (x[mask], windows): the search sees a's elements, the result has v's lengths."""
    right = _side(side)
    limit = v_lengths = None
    if isinstance(a, dynamic.DynTensor):
        if a.ndim == 1: limit = Tensor(cast(UOp, a.length))   # a 1-D one: its axis has the run-time length
        a = a.compact()
    if isinstance(v, dynamic.DynTensor): v, v_lengths = v.compact(), v.lengths
    at, vt = T(a), T(v)
    at, vt = Tensor(at.uop), Tensor(vt.uop)   # NumPy converts both to arrays: no weak scalars here
    if at.ndim != 1:
        raise ValueError("object too deep for desired array" if at.ndim > 1 else
                         "object of too small depth for desired array")
    dt = result_type(at.uop.dtype, vt.uop.dtype)
    at, vt = at.astype(dt), vt.astype(dt)
    s = None
    if sorter is not None:
        if limit is not None or isinstance(sorter, dynamic.DynTensor):
            raise unsupported("numpy.searchsorted with sorter= and an array of run-time length",
                              "search a[sorter] (np.take(a, sorter)) instead")
        s = Tensor(T(sorter).uop)
        if s.ndim != 1: raise TypeError("could not parse sorter argument")
        if not s.uop.dtype.is_int: raise TypeError("sorter must only contain integers")
        if s.shape[0] != at.shape[0]: raise ValueError("sorter.size must equal a.size")
        s = s.astype(np.int64)
        if s.size:
            lo, hi = s.uop.bounds
            if lo < 0 or hi >= at.shape[0]:
                add_check(((s < 0) | (s >= at.shape[0])).any(), 0,
                          lambda _: ValueError("Sorter index out of range."))
    out = _search(at, vt, right, s, limit)
    return out if v_lengths is None else dynamic.DynTensor(out.uop, lengths=v_lengths)


def lexsort(keys: Tensor | np.ndarray | Sequence[ArrayLike], axis: int = -1) -> Tensor:
    """The positions that sort by several keys: by the last key, ties by the one before it, and so on (a stable
    sort by each key in turn, from the first to the last)."""
    if isinstance(keys, Tensor) or isinstance(keys, np.ndarray):
        kt = T(keys)
        if kt.ndim == 0: raise TypeError("need sequence of keys with len > 0 in lexsort")
        ks = [kt[i] for i in range(kt.shape[0])]
    else:
        ks = [T(k) for k in keys]
    if not ks: raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = ks[0].shape
    if any(k.shape != shape for k in ks): raise ValueError("all keys need to be the same shape")
    if axis is None: raise TypeError("'NoneType' object cannot be interpreted as an integer")
    if len(shape) == 0:
        normalize_axis(axis, 1)
        return Tensor(UOp.const_like(I64, 0, ()))
    ax = normalize_axis(axis, ks[0].ndim)
    order = argsort(ks[0], axis=ax)
    for k in ks[1:]:
        order = _take_along(order, argsort(_take_along(k, order, ax), axis=ax), ax)
    return order


def _take_along(x: Tensor, idx: Tensor, axis: int) -> Tensor:
    """take_along_axis for indices in range by construction (positions from a sort): a gather, no checks."""
    if x.size == 0: return Tensor(UOp.const_like(x.uop.dtype, 0, idx.shape))
    coords = [Tensor(UOp.iota(n).reshape(tuple(n if b == a else 1 for b in range(x.ndim)))) if a != axis else idx
              for a, n in enumerate(x.shape)]
    return gather(x, coords)


# ---------------------------------------------------------------------------------------------------------------
# unique: results of run-time length

def _iota(n: int) -> Tensor:
    return Tensor(UOp.iota(n)) if n else Tensor(UOp.const_like(I64, 0, (0,)))


def _shifted_differs(s: Tensor, equal_nan: bool) -> Tensor:
    """Per position of the sorted rows s (first axis): whether it starts a new group (differs from the one before;
    NaNs equal to each other with equal_nan); rows of several elements differ where any element does."""
    cur, prev = s[1:], s[:-1]
    differs = cur != prev
    # NumPy: all NaNs one value (complex ones too, whichever part is NaN), the first in sort order kept
    if equal_nan and s.uop.dtype.is_inexact: differs = differs & ~((cur != cur) & (prev != prev))
    if s.ndim > 1: differs = differs.any(axis=tuple(range(1, s.ndim)))
    from numfn.numpy.manipulation import concatenate
    return concatenate([Tensor(UOp.const_like(dtypes.bool, True, (1,))), differs])


def _group_parts(s: Tensor, perm: Tensor | None, first: Tensor, total, want_index: bool, want_inverse: bool,
                 want_counts: bool) -> tuple:
    """From sorted values s (n rows), the permutation that sorted them and the mask of group starts: the unique
    values and, as asked, each group's first position, each element's group (by original position) and each group's
    size. `total` is the number of elements that count (an int, or the run-time length)."""
    n = s.shape[0]
    values = dynamic.select(s, first)
    index = dynamic.select(cast(Tensor, perm), first) if want_index else None   # sorted with a permutation
    inverse = counts = None
    if want_inverse:
        group = Tensor(UOp(Ops.SCAN, I64, (first.uop.cast(I64),), (Ops.ADD, 0))) - 1
        empty = UOp(Ops.EMPTY, I64, (), ((n,), "inverse"))
        inverse = Tensor(UOp(Ops.SCATTER, I64, (empty, group.uop, cast(Tensor, perm).uop), (None, True, False)))
    if want_counts:
        starts = dynamic.select(_iota(n), first)
        k = Tensor(cast(UOp, starts.length))   # a selection has its length
        start = starts.compact()
        from numfn.numpy.manipulation import concatenate
        end = concatenate([start[1:], Tensor.lift(total).astype(np.int64).reshape(1)])
        end = Tensor((_iota(n) + 1 < k).uop.alu(Ops.WHERE, end.uop, Tensor.lift(total).astype(np.int64)
                                                ._broadcast((n,))))
        counts = dynamic.DynTensor((end - start).uop, starts.length)
    return values, index, inverse, counts


def _unique_flat(t, want_index: bool, want_inverse: bool, want_counts: bool, equal_nan: bool) -> tuple:
    if isinstance(t, dynamic.DynTensor):
        if t.ndim != 1: raise unsupported("numpy.unique of a multi-dimensional array selected by values", dynamic.HINT)
        dt = t.uop.dtype
        assert t.uop.shape is not None   # an array's value is a tensor-level node
        flat = Tensor(t.valid().uop.alu(Ops.WHERE, t.uop, UOp.const_like(dt, _largest(dt), t.uop.shape)))
        total = Tensor(cast(UOp, t.length))   # 1-D: its axis has the run-time length
    else:
        flat = t.reshape(-1)
        total = flat.shape[0]
    n = flat.shape[0]
    if n == 0:
        empty = lambda dt: Tensor(UOp.const_like(dt, 0, (0,)))  # noqa: E731
        inverse = Tensor(UOp.const_like(I64, 0, t.shape))
        return empty(flat.uop.dtype), empty(I64), inverse, empty(I64)
    perm = sort_last(flat, True) if want_index or want_inverse else None
    s = gather(flat, [perm]) if perm is not None else sort_last(flat, False)
    first = _shifted_differs(s, equal_nan)
    if not isinstance(total, int): first = first & (_iota(n) < total)
    values, index, inverse, counts = _group_parts(s, perm, first, total, want_index, want_inverse, want_counts)
    if equal_nan and flat.uop.dtype.is_complex and not (want_index or want_inverse or want_counts):
        # NumPy finds the values alone with a hash table: the NaN it keeps is the first in the array's order
        nan = flat != flat
        first_nan = gather(flat, [Tensor(nan.uop.alu(Ops.WHERE, UOp.iota(n), UOp.const_like(I64, n, (n,)))).min()])
        values = where(values != values, first_nan, values)
    if inverse is not None:
        inverse = dynamic.DynTensor(inverse.uop, t.length) if isinstance(t, dynamic.DynTensor) else \
            inverse.reshape(t.shape)
    return values, index, inverse, counts


def _unique_rows(t: Tensor, axis: int, want_index: bool, want_inverse: bool, want_counts: bool) -> tuple:
    """unique(axis=0): the distinct slices along the first axis, ordered lexicographically (NumPy compares them as
    records: element by element in their sort order, so -0.0 equals 0.0 and a NaN makes a slice unlike any other)."""
    if axis != 0:
        raise unsupported(f"numpy.unique along axis {axis} of a {t.ndim}-d array",
                          "the unique count is only known at run time, and numfn's arrays of run-time length have it "
                          "on their first axis: use axis=0 (np.unique(np.moveaxis(x, axis, 0), axis=0))")
    n, rest = t.shape[0], t.shape[1:]
    m = math.prod(rest)
    rows = t.reshape((n, m))
    if n == 0:
        zeros = lambda shape, dt=I64: Tensor(UOp.const_like(dt, 0, shape))  # noqa: E731
        return zeros((0,) + rest, t.uop.dtype), zeros((0,)), zeros((0,)), zeros((0,))
    if m == 0: order = _iota(n)
    else: order = lexsort([rows[:, j] for j in reversed(range(m))])
    srows = gather(rows, [order.reshape(n, 1), _iota(m).reshape(1, m)]) if m else rows
    first = _shifted_differs(srows, False) if m else _iota(n) == 0   # slices of no elements are all equal
    values, index, inverse, counts = _group_parts(srows.reshape((n,) + rest), order, first, n, want_index,
                                                  want_inverse, want_counts)
    return values, index, inverse, counts


def unique(ar: ArrayLike, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True,
           sorted: bool = True) -> Tensor | tuple[Tensor, ...]:  # noqa: A002 - NumPy's name
    """The sorted unique elements of `ar` (flattened; with axis=0, its distinct slices along the first axis), and as
    asked the first position of each, the group of every element (shaped like `ar`; per slice with axis=0) and
    each one's count. The unique values, positions and counts are arrays of run-time length (returned cut to it).
    equal_nan: all NaNs are one value (else each NaN is its own); sorted=False is accepted (the result is sorted)."""
    t = ar if isinstance(ar, dynamic.DynTensor) else T(ar)
    if axis is None:
        values, index, inverse, counts = _unique_flat(t, return_index, return_inverse, return_counts, equal_nan)
    else:
        if isinstance(t, dynamic.DynTensor):
            raise unsupported("numpy.unique with axis= of an array selected by values", dynamic.HINT)
        axis = normalize_axis(axis, t.ndim)
        values, index, inverse, counts = _unique_rows(t, axis, return_index, return_inverse, return_counts)
    extra = [x for x, want in ((index, return_index), (inverse, return_inverse), (counts, return_counts)) if want]
    return (values, *extra) if extra else values


def unique_values(x: ArrayLike) -> Tensor:
    """The unique elements of x (NumPy 2; numfn's are sorted), every NaN distinct."""
    return cast(Tensor, unique(x, equal_nan=False))   # no return_* flags: the values alone


def unique_counts(x: ArrayLike) -> tuple[Tensor, Tensor]:
    """(values, counts) of the unique elements of x, every NaN distinct."""
    from numpy.lib._arraysetops_impl import UniqueCountsResult
    return UniqueCountsResult(   # type: ignore[return-value]  # NumPy's named tuple, of traced arrays
        *unique(x, return_counts=True, equal_nan=False))


def unique_inverse(x: ArrayLike) -> tuple[Tensor, Tensor]:
    """(values, inverse_indices): the unique elements and the group of each element of x (shaped like x)."""
    from numpy.lib._arraysetops_impl import UniqueInverseResult
    return UniqueInverseResult(   # type: ignore[return-value]  # NumPy's named tuple, of traced arrays
        *unique(x, return_inverse=True, equal_nan=False))


def unique_all(x: ArrayLike) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(values, indices, inverse_indices, counts) of the unique elements of x, every NaN distinct."""
    from numpy.lib._arraysetops_impl import UniqueAllResult
    return UniqueAllResult(   # type: ignore[return-value]  # NumPy's named tuple, of traced arrays
        *unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False))


# ---------------------------------------------------------------------------------------------------------------
# ndarray methods

@tensor_method("sort")
def _sort_method(self, axis=-1, kind=None, order=None, *, stable=None) -> None:
    """In place: the array (or the caller's array, for an argument) becomes its sorted self."""
    if axis is None: raise TypeError("'NoneType' object cannot be interpreted as an integer")
    self[...] = sort(self, axis, kind, order, stable=stable)


@tensor_method("argsort")
def _argsort_method(self, axis=-1, kind=None, order=None, *, stable=None) -> Tensor:
    return argsort(self, axis, kind, order, stable=stable)


@tensor_method("partition")
def _partition_method(self, kth, axis=-1, kind="introselect", order=None) -> None:
    if axis is None: raise TypeError("'NoneType' object cannot be interpreted as an integer")
    self[...] = partition(self, kth, axis, kind, order)


@tensor_method("argpartition")
def _argpartition_method(self, kth, axis=-1, kind="introselect", order=None) -> Tensor:
    return argpartition(self, kth, axis, kind, order)


@tensor_method("searchsorted")
def _searchsorted_method(self, v, side="left", sorter=None) -> Tensor:
    return searchsorted(self, v, side, sorter)


# ---------------------------------------------------------------------------------------------------------------
# arrays of run-time length (x[mask], windows x[k:]): sorted at their bound, the positions past a length last

def _largest(dt: DType):
    if dt.is_complex: return complex(math.nan, math.nan)
    if dt.is_float: return math.nan
    return dt.max


def filled(y: dynamic.DynTensor) -> Tensor:
    """y's value at its bound shape with every position past a run-time length holding the dtype's last value in
    NumPy's sort order (NaN for floats, the maximum for integers): a stable sort keeps them after y's elements, and a
    sort of values cannot tell an equal element from them."""
    dt = y.uop.dtype
    assert y.uop.shape is not None   # an array's value is a tensor-level node
    return Tensor(y.valid().uop.alu(Ops.WHERE, y.uop, UOp.const_like(dt, _largest(dt), y.uop.shape)))


def _dyn_sorted(y: dynamic.DynTensor, axis, arg: bool) -> dynamic.DynTensor:
    if axis is None:
        if y.ndim > 1: raise unsupported("sorting a multi-dimensional array of run-time length, flattened",
                                         dynamic.HINT)
        axis = 0
    axis = normalize_axis(axis, y.ndim)
    t = filled(y) if y.lengths[axis] is not None else y.compact()
    return dynamic.DynTensor(_sorted(t, axis, arg).uop, lengths=y.lengths)


def _dyn_sort(y, axis=-1, kind=None, order=None, *, stable=None):
    _check_kind(kind, stable)
    _check_order(order)
    return _dyn_sorted(y, axis, False)


def _dyn_argsort(y, axis=-1, kind=None, order=None, *, stable=None):
    _check_kind(kind, stable)
    _check_order(order)
    return _dyn_sorted(y, axis, True)


def _dyn_partition(y, kth, axis=-1, kind="introselect", order=None, arg: bool = False):
    if kind != "introselect": raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    _check_order(order)
    ax = 0 if axis is None else normalize_axis(axis, y.ndim)
    length = y.lengths[ax] if axis is not None or y.ndim == 1 else None
    if length is None: _kth(kth, y.uop.shape[ax])
    else:   # NumPy checks kth against the length, known when the program runs
        ks = _kth(kth, None)
        if ks:
            k, n = T(np.array(ks, np.int64)), Tensor(length)
            add_check((k < -n) | (k >= n), k, lambda v: ValueError(f"kth(={v}) out of bounds"))
    return _dyn_sorted(y, axis, arg)


def _dyn_in_place(y: dynamic.DynTensor, value: dynamic.DynTensor) -> None:
    """y becomes `value` (of y's shape and lengths): a window writes into the array it views; a selection (x[mask])
    is a copy no other name sees, so it takes the new value and forgets its lazy form."""
    if y.base is not None:
        y[...] = value
        return
    y.rebind(value.uop)
    y.source = y.mask = None


def _dyn_sort_method(y, axis=-1, kind=None, order=None, *, stable=None) -> None:
    if axis is None: raise TypeError("'NoneType' object cannot be interpreted as an integer")
    _dyn_in_place(y, _dyn_sort(y, axis, kind, order, stable=stable))


def _dyn_partition_method(y, kth, axis=-1, kind="introselect", order=None) -> None:
    if axis is None: raise TypeError("'NoneType' object cannot be interpreted as an integer")
    _dyn_in_place(y, _dyn_partition(y, kth, axis, kind, order))


dynamic.NUMPY.update({"sort": _dyn_sort, "argsort": _dyn_argsort, "partition": _dyn_partition,
                      "argpartition": lambda y, kth, axis=-1, kind="introselect", order=None:
                          _dyn_partition(y, kth, axis, kind, order, True),
                      "unique": unique, "unique_values": unique_values, "unique_counts": unique_counts,
                      "unique_inverse": unique_inverse, "unique_all": unique_all})
# searchsorted takes arrays of run-time length as `a` or `v` itself (see there)
dynamic.ELEMENTWISE_OK.add("searchsorted")
# their ndarray methods (numfn.trace.dynamic refuses the others)
dynamic.METHODS.update({"sort": _dyn_sort_method, "argsort": _dyn_argsort, "partition": _dyn_partition_method,
                         "argpartition": dynamic.NUMPY["argpartition"],
                         "searchsorted": lambda y, v, side="left", sorter=None: searchsorted(y, v, side, sorter)})
