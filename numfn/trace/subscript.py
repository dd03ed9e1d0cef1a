"""Indexing: `x[index]` and `x[index] = value` with NumPy's rules.

An index is normalized into one item per index element (Ellipsis expanded): `none` (np.newaxis), `slice`, `int`,
`array` (an integer array: traced or known while tracing) and `bool` (a Python or NumPy bool scalar). Reading
builds
  - a view (movement ops, no data moves) when the index is basic: ints, slices, None, Ellipsis;
  - a GATHER otherwise: one index tensor per axis of x, slices as ranges (start + step * IOTA, so loads along them
    stay contiguous), integer arrays broadcast together and placed as NumPy places them (where the first of them
    stands when they are adjacent in the index, else in front).
Assignment writes into the array's memory: the index tensors of the assigned region are mapped through the view
chain of `x` to indices of its base array, and the base gets a new version, SCATTER(old, value, *indices); every
view of the base then reads the new version. An assignment into a function input changes the caller's array.

Integer arrays known while tracing are checked and wrapped then (IndexError as NumPy raises it); traced ones are
wrapped in the program and checked by a Check (numfn.trace.tensor.add_check), raised after the call.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast
from collections.abc import Callable

import numpy as np

from numfn.dtype import DType, check_scalar_fits, dtypes, float_assignment_error
from numfn.errors import unsupported
from numfn.trace.known import known_value
from numfn.trace.tensor import Links, Tensor, add_check, broadcast_shapes, gather, numpy_function, tensor_method, \
    weak_fits
from numfn.trace.branch_layout import is_window
from numfn.ir.uop import Ops, UOp


@dataclass(frozen=True)
class Item:
    """One normalized index element. `axis` is the axis of x it consumes (None for `none` and `bool`)."""
    kind: str                 # "none", "slice", "window", "int", "array", "bool"
    axis: int | None = None
    start: int = 0            # slice: first element, step (never 0) and count; window: step (an int, or a 0-d
    step: Any = 1             # int64 Tensor when traced) and bound (count)
    count: int = 0
    value: Any = None         # int: the index (wrapped; a 0-d int64 Tensor when traced); array: a Tensor of int64
    #                           (wrapped); bool: True/False; window: (first element, run-time count), 0-d Tensors


class RunTimeLength:
    """What indexing needs of arrays whose length is known only at run time (x[mask], nonzero, a slice with traced
    bounds): numfn.trace.dynamic, above this module, registers them here when it is imported."""
    array: Any = type("NoRunTimeLengthYet", (), {})   # numfn.trace.dynamic.DynTensor(uop, weak=, lengths=)
    select: Callable[..., Tensor]        # x[mask] of the leading axes of x
    take: Callable[..., Tensor]          # x[i] for integer arrays i of run-time length
    items: Callable[..., list[Item]]     # an index of a DynTensor, normalized
    valid_mask: Callable[..., Tensor]    # True inside run-time lengths
    fit: Callable[..., Tensor]           # a value as assigned into a region of run-time lengths
    spread: Callable[..., Tensor]        # x[mask] = v: v's elements at the mask's true positions
    slice_span: Callable[..., tuple]     # the first element and count of a slice with traced bounds


_VALID = "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are " \
         "valid indices"


def _is_array(i) -> bool:
    return isinstance(i, (Tensor, np.ndarray, list)) and not (isinstance(i, np.ndarray) and i.ndim == 0
                                                                and i.dtype.kind in "iub")


def normalize(shape: tuple[int, ...], index) -> list[Item]:
    """The items of `index` for an array of `shape`, with NumPy's errors for invalid indices."""
    if not isinstance(index, tuple): index = (index,)
    raw = []
    for i in index:
        if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu": i = int(i)    # a 0-d array is an int
        elif isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind == "b": i = bool(i)
        if i is None or i is Ellipsis or isinstance(i, (slice, bool, np.bool_)) or _is_array(i): raw.append(i)
        elif isinstance(i, (int, np.integer)): raw.append(int(i))
        else: raise IndexError(_VALID)
    if sum(i is Ellipsis for i in raw) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    arrays = [_index_array(i) if _is_array(i) else None for i in raw]
    for a in arrays:
        if a is not None and a.uop.dtype.is_bool and a.ndim > 0:
            raise unsupported("a boolean mask array after other indices (numfn takes masks over the leading axes: "
                              "x[mask], x[mask, 1:])", "move the mask's axes first (np.moveaxis)")
    used = sum(1 if i is not None and i is not Ellipsis and not isinstance(i, (bool, np.bool_)) else 0 for i in raw)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
    items: list[Item] = []
    axis = 0
    for i, arr in zip(raw, arrays):
        if i is Ellipsis:
            for _ in range(len(shape) - used):
                items.append(Item("slice", axis, 0, 1, shape[axis]))
                axis += 1
        elif i is None: items.append(Item("none"))
        elif isinstance(i, (bool, np.bool_)): items.append(Item("bool", value=bool(i)))
        elif isinstance(i, slice):
            i = static_slice(i)
            if any(isinstance(v, Tensor) for v in (i.start, i.stop, i.step)): items.append(window(i, shape[axis], axis))
            else:
                start, stop, step = i.indices(shape[axis])
                items.append(Item("slice", axis, start, step, len(range(start, stop, step))))
            axis += 1
        elif arr is not None:
            if arr.ndim == 0 and arr.uop.dtype.is_int:   # a traced integer: an integer index, as NumPy's 0-d arrays
                items.append(Item("int", axis, value=_wrap(arr, shape[axis], axis)))
            else: items.append(Item("array", axis, value=_wrap(arr, shape[axis], axis)))
            axis += 1
        else:
            n = shape[axis]
            if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            items.append(Item("int", axis, value=i % n))
            axis += 1
    while axis < len(shape):   # trailing axes not indexed: whole
        items.append(Item("slice", axis, 0, 1, shape[axis]))
        axis += 1
    return items


def static_slice(s: slice) -> slice:
    """The slice with bounds known while tracing as Python ints; traced ones stay Tensors (0-d integers)."""
    parts = []
    for v in (s.start, s.stop, s.step):
        if isinstance(v, Tensor):
            if v.ndim or not (v.uop.dtype.is_int or v.uop.dtype.is_bool):
                raise TypeError("slice indices must be integers or None or have an __index__ method")
            known = _known(v.uop)
            if known is not None: v = int(known)
        elif v is not None and not isinstance(v, (int, np.integer)):
            raise TypeError("slice indices must be integers or None or have an __index__ method")
        parts.append(v)
    return slice(*parts)


def window(s: slice, n, axis: int) -> Item:
    """The item of a slice with traced bounds or step of an axis of size n (an int, or a 0-d int64 Tensor: a
    run-time length): a window of run-time count, at most `count` (the bound) long. A traced step is checked
    nonzero when the program runs (NumPy's ValueError); the window's bound is then the whole axis."""
    bound = n if isinstance(n, int) else n.bound
    if isinstance(s.step, Tensor):
        traced = Tensor(s.step.uop.cast(dtypes.int64))
        add_check(traced == 0, traced, lambda _: ValueError("slice step cannot be zero"))
        safe = Tensor((traced == 0).uop.alu(Ops.WHERE, UOp.const(dtypes.int64, 1), traced.uop))   # (no division by 0)
        start, count = RunTimeLength.slice_span(s.start, s.stop, safe, n)
        return Item("window", axis, 0, safe, bound, (start, count))
    step = 1 if s.step is None else int(s.step)
    if step == 0: raise ValueError("slice step cannot be zero")
    start, count = RunTimeLength.slice_span(s.start, s.stop, step, n)
    return Item("window", axis, 0, step, len(range(0, bound, abs(step))), (start, count))


def _as_tuple(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _leading_mask(shape: tuple[int, ...], index) -> tuple[Tensor, tuple] | None:
    """(mask, the rest of the index) when the index starts with a boolean array (x[mask], x[mask, 1:]), else None.
    A boolean array elsewhere is refused (numfn supports masks over an array's leading axes)."""
    items = _as_tuple(index)
    if not items or not _is_array(items[0]): return None
    mask = _index_array(items[0])
    if not mask.uop.dtype.is_bool or mask.runtime_length: return None
    if any(_is_array(i) for i in items[1:]):
        raise unsupported("a boolean mask combined with index arrays", "index with the mask, then with the arrays")
    for axis, (m, n) in enumerate(zip(mask.shape, shape)):
        if m != n:
            raise IndexError(f"boolean index did not match indexed array along axis {axis}; size of axis is {n} but "
                             f"size of corresponding boolean axis is {m}")
    if mask.ndim > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {mask.ndim} were "
                         "indexed")
    return mask, items[1:]


def _leading_dynamic(index) -> list:
    """The leading index arrays of run-time length (x[np.nonzero(m)], x[rows, cols] with rows, cols from nonzero)."""
    items = _as_tuple(index)
    lead = []
    for i in items:
        if not (isinstance(i, Tensor) and i.runtime_length): break
        lead.append(i)
    if any(isinstance(i, Tensor) and i.runtime_length for i in items[len(lead):]):
        raise unsupported("index arrays of run-time length after other indices", "put them first")
    return lead


def _index_array(i) -> Tensor:
    if isinstance(i, list) and len(i) == 0: return Tensor.lift(np.zeros(0, np.int64))   # x[[]]: an empty int index
    t = Tensor.lift(i)
    if not (t.uop.dtype.is_int or t.uop.dtype.is_bool):   # (a Python float, traced: NumPy's message for a float)
        raise IndexError(_VALID if t.weak and t.ndim == 0 else "arrays used as indices must be of integer (or boolean) "
                         "type")
    return t


def _wrap(t: Tensor, n: int, axis: int) -> Tensor:
    """Integer indices into an axis of size n, negatives counted from the end: checked now when known (NumPy's
    IndexError), else wrapped in the program and checked after the call."""
    u = t.uop.cast(dtypes.int64)
    data = _known(u)
    if data is not None:
        bad = (data < -n) | (data >= n)
        if bad.any(): raise IndexError(f"index {int(data[bad][0])} is out of bounds for axis {axis} with size {n}")
        return Tensor.lift(np.where(data < 0, data + n, data).astype(np.int64))
    lo, hi = u.bounds
    if lo < -n or hi >= n:
        add_check((t < -n) | (t >= n), t, lambda v: IndexError(f"index {v} is out of bounds for axis {axis} "
                                                                   f"with size {n}"))
    if lo < 0:
        n_like = UOp.const_like(dtypes.int64, n, cast(tuple[int, ...], u.shape))
        u = (Tensor(u) < 0).uop.alu(Ops.WHERE, u.alu(Ops.ADD, n_like), u)
    return Tensor(u)


def _known(u: UOp) -> np.ndarray | None:
    """The values of an index known while tracing (see Tensor.known), else None."""
    v = known_value(u)
    return None if v is None else v.astype(np.int64)


def is_basic(items: list[Item]) -> bool:
    """Whether the items make a view by movement ops alone (no traced value among them)."""
    return all(it.kind in ("none", "slice") or (it.kind == "int" and not isinstance(it.value, Tensor)) for it in items)


def is_view(items: list[Item]) -> bool:
    """Whether NumPy's result of these items is a view (basic indexing, traced ints and bounds included)."""
    return all(it.kind in ("none", "slice", "int", "window") for it in items)


# ---------------------------------------------------------------------------------------------------------------
# reading

def basic_view(x: UOp, items: list[Item]) -> UOp:
    """x indexed by basic items, as movement ops (a view)."""
    u = x
    final: list[int] = []
    axis = 0   # the axis of u the next item applies to (ints remove theirs at the end)
    for it in items:
        if it.kind == "none":
            final.append(1)
            continue
        if it.kind == "slice":
            start, step = it.start, it.step
            if step < 0:
                u = u.flip((axis,))
                start, step = cast(tuple[int, ...], u.shape)[axis] - 1 - start, -step
            u = _strided_slice(u, axis, start, step, it.count)
            final.append(it.count)
        else:
            k = it.value
            u = u.shrink(tuple((k, k + 1) if a == axis else (0, s)
                               for a, s in enumerate(cast(tuple[int, ...], u.shape))))
        axis += 1
    return u.reshape(tuple(final))


def _strided_slice(u: UOp, axis: int, start: int, step: int, count: int) -> UOp:
    """Elements start, start+step, ... (count of them) along `axis`, built from shrink, pad and reshape."""
    shape = u.shape
    assert shape is not None
    def along(v, lo, hi): return v.shrink(tuple((lo, hi) if a == axis else (0, s) for a, s in enumerate(v.shape)))
    if count == 0: return along(u, 0, 0)
    if step == 1: return along(u, start, start + count)
    end = start + (count - 1) * step + 1
    u = along(u, start, end)
    u = u.pad(tuple((0, count * step - (end - start)) if a == axis else (0, 0) for a in range(len(shape))))
    u = u.reshape(shape[:axis] + (count, step) + shape[axis + 1:])
    u = u.shrink(tuple((0, 1) if a == axis + 1 else (0, s) for a, s in enumerate(cast(tuple[int, ...], u.shape))))
    return u.reshape(shape[:axis] + (count,) + shape[axis + 1:])


def region(shape: tuple[int, ...], items: list[Item], lengths: dict | None = None) \
        -> tuple[tuple[int, ...], list[Tensor]]:
    """The shape of x[index] and, for every axis of x, the index tensor (broadcastable to that shape) saying which
    element of x each result element is. Windows give axes of run-time length: their bound in the shape, their
    length (a 0-d int64 UOp) in `lengths` by result axis."""
    adv = [k for k, it in enumerate(items) if it.kind in ("int", "array", "bool")]
    adv_shapes = [_adv_shape(items[k]) for k in adv]
    try:
        b = broadcast_shapes(*adv_shapes) if adv else ()
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes " +
                         " ".join("(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
                                  for s in adv_shapes if s != ()) + " ") from None
    if not any(items[k].kind in ("array", "bool") for k in adv): adv, b = [], ()   # ints alone index like slices
    adjacent = adv == list(range(adv[0], adv[-1] + 1)) if adv else True
    out: list[int] = []
    at: dict[int, int] = {}      # item -> its result axis (slices and ints alone)
    b_at = 0 if adv and not adjacent else None
    if b_at is not None: out += b
    for k, it in enumerate(items):
        if k in adv:
            if b_at is None:
                b_at = len(out)
                out += b
            continue
        if it.kind == "int": continue
        at[k] = len(out)
        if it.kind == "window" and lengths is not None: lengths[len(out)] = it.value[1].uop
        out.append(1 if it.kind == "none" else it.count)
    rank = len(out)
    indices: list[Tensor] = []
    for k, it in enumerate(items):
        if it.kind in ("none", "bool"): continue
        if k in adv:
            v = it.value if it.kind == "array" else Tensor.lift(np.int64(it.value))
            assert b_at is not None   # set above where the first of `adv` was reached
            lead = b_at + len(b) - v.ndim
            indices.append(v.reshape((1,) * lead + v.shape + (1,) * (rank - b_at - len(b))))
        elif it.kind == "int":
            if isinstance(it.value, Tensor): indices.append(it.value.reshape((1,) * rank))
            else: indices.append(Tensor(UOp.const_like(dtypes.int64, it.value, (1,) * rank)))
        elif it.kind == "window":
            start = it.value[0]
            pos = (Tensor(UOp.iota(it.count)) * it.step + start) if it.count else \
                Tensor(UOp.const_like(dtypes.int64, 0, (0,)))
            indices.append(pos.reshape(tuple(it.count if a == at[k] else 1 for a in range(rank))))
        else:
            r = UOp.iota(it.count) if it.count else UOp.const_like(dtypes.int64, 0, (0,))
            r_shape = cast(tuple[int, ...], r.shape)
            u = r.alu(Ops.MUL, UOp.const_like(dtypes.int64, it.step, r_shape)) \
                .alu(Ops.ADD, UOp.const_like(dtypes.int64, it.start, r_shape))
            indices.append(Tensor(u.reshape(tuple(it.count if a == at[k] else 1 for a in range(rank)))))
    return tuple(out), indices


def identity_indices(shape: tuple[int, ...]) -> tuple[UOp, ...]:
    """Index tensors (int64, of `shape`) naming every element of an array of `shape` at its own place."""
    return tuple(UOp.iota(n).reshape(tuple(n if b == a else 1 for b in range(len(shape)))).expand(shape)
                 if n else UOp.const_like(dtypes.int64, 0, shape) for a, n in enumerate(shape))


def _adv_shape(it: Item) -> tuple[int, ...]:
    if it.kind == "array": return it.value.shape
    if it.kind == "bool": return (1,) if it.value else (0,)
    return ()


@tensor_method("__getitem__")
def getitem(x: Tensor, index) -> Tensor:
    """x[index]: a view for basic indices, a gathered copy for advanced ones; selected by a mask (or by indices
    whose number is only known at run time), an array of run-time length (numfn.trace.dynamic)."""
    if x.is_scalar() and not x.weak:   # a NumPy scalar is immutable: x[...] and x[None] are new arrays, not views
        x = Tensor(x.uop).as_array()
    masked = _leading_mask(x.shape, index)
    if masked is not None:
        mask, rest = masked
        return RunTimeLength.select(getitem(x, (slice(None),) * mask.ndim + rest), mask)
    leading = _leading_dynamic(index)
    if leading:
        return RunTimeLength.take(getitem(x, (slice(None),) * len(leading) + _as_tuple(index)[len(leading):]), leading)
    items = normalize(x.shape, index)
    # NumPy gives a scalar (a copy) where integers pick a single element, unless an Ellipsis keeps it an array
    scalar = not any(i is Ellipsis for i in _as_tuple(index))
    if is_basic(items):
        view = basic_view(x.uop, items)
        if view.shape == () and scalar: return Tensor(view, x.weak)
        return x._view(view)
    return gathered(x, items, scalar)


def gathered(x: Tensor, items: list[Item], scalar: bool = True) -> Tensor:
    """x[items] by a GATHER: a view of x's memory where NumPy's result is one (traced integers and slice bounds),
    with run-time lengths where windows give them (numfn.trace.dynamic.DynTensor)."""
    lengths: dict = {}
    shape, indices = region(cast(tuple[int, ...], x.uop.shape), items, lengths)
    view = is_view(items)
    g = gather(Tensor(x.uop), [Tensor(i._broadcast(shape)) for i in indices], window=view)
    rank = len(shape)
    lens = tuple(lengths.get(a) for a in range(rank))
    make = (lambda u: RunTimeLength.array(u, weak=x.weak, lengths=lens)) if lengths else (lambda u: Tensor(u, x.weak))
    if view and not (rank == 0 and scalar): return x._view(g.uop, make)
    return make(g.uop)


# ---------------------------------------------------------------------------------------------------------------
# assignment

@tensor_method("__setitem__")
def setitem(x: Tensor, index, value) -> None:
    """x[index] = value: NumPy's broadcasting and (unsafe) casting of the value, written into x's memory."""
    if x.weak: raise TypeError(f"'{type(x.pyvalue).__name__}' object does not support item assignment")
    masked = _leading_mask(x.shape, index)
    if masked is not None:   # x[mask] = v: the region with v where the mask holds
        mask, rest = masked
        view = getitem(x, (slice(None),) * mask.ndim + rest)
        setitem(x, (slice(None),) * mask.ndim + rest, _masked_update(view, mask, value))
        return
    dyn = isinstance(x, RunTimeLength.array)
    items = RunTimeLength.items(x, index) if dyn else normalize(x.shape, index)
    if is_basic(items) and isinstance(value, Tensor) and value.uop is basic_view(x.uop, items):
        return   # x[i] op= v: the view x[i] was updated in place already; storing it again changes nothing
    if is_view(items) and not is_basic(items) and isinstance(value, Tensor) and value.uop is gathered(x, items).uop:
        return   # the same for a view through traced indices or bounds
    lengths: dict = {}
    shape, indices = region(cast(tuple[int, ...], x.uop.shape), items, lengths)
    gate = RunTimeLength.valid_mask(shape, lengths) if lengths else None
    if dyn:   # a window: only its elements (inside its run-time lengths) are written
        inside = gather(x.valid(), [Tensor(i._broadcast(shape)) for i in indices])
        gate = inside if gate is None else gate & inside
    if lengths or isinstance(value, RunTimeLength.array): v = RunTimeLength.fit(value, x.uop.dtype, shape, lengths)
    else: v = assignable(value, x.uop.dtype, shape, advanced=not is_basic(items))
    whole = not dyn and gate is None and tuple(shape) == tuple(x.shape) and all(
        it.kind == "slice" and it.start == 0 and it.step == 1 for it in items)
    if whole and x.base is None and x.memory in ("computed", "input") and not x._links:
        x.rebind(v.uop)   # the whole array: its new value (no memory is written until it is stored)
        return
    injective = all(it.kind != "array" or _unique(it.value) for it in items)
    write(x, shape, indices, v, injective, gate=gate)


def _masked_update(region: Tensor, mask: Tensor, value) -> Tensor:
    """The region (whose leading axes the mask covers) with `value` stored where the mask holds: a value that
    broadcasts, or one element per true position (checked when the program runs)."""
    where = numpy_function("where")
    rest = region.shape[mask.ndim:]
    m = mask.reshape(mask.shape + (1,) * len(rest))
    v = value if isinstance(value, Tensor) and value.runtime_length else Tensor.lift(value)
    if isinstance(v, RunTimeLength.array) and v.mask is mask.uop.cast(dtypes.bool) and v.source is not None:
        return where(m, Tensor(v.source).astype(region.dtype), region)   # x[m] = f(x[m]): elementwise, in place
    if isinstance(v, RunTimeLength.array) or (v.ndim > len(rest) and v.shape[0] != 1):
        return where(m, RunTimeLength.spread(v, mask, region.dtype), region)
    return where(m, assignable(value, region.uop.dtype, rest, advanced=True), region)   # (a mask: advanced)


def assignable(value, dt: DType, shape: tuple[int, ...], advanced: bool = False) -> Tensor:
    """`value` as NumPy assigns it into an array of dtype `dt` at a region of `shape`: cast unsafely (a Python int
    must fit, NaN or inf cannot become an integer) and broadcast (leading size-1 axes of the value dropped)."""
    if isinstance(value, (float, np.floating)) and not isinstance(value, Tensor):
        error = float_assignment_error(float(value), dt)
        if error is not None: raise error
    if isinstance(value, int) and not isinstance(value, bool): check_scalar_fits(value, dt, "assigned value")
    v = Tensor.lift(value)
    weak_fits(v, dt)   # a traced Python int (an argument, a loop index) must fit too: checked when the program runs
    _float_fits(v, dt, advanced)
    _int_fits(v, dt, advanced)
    vshape = v.shape
    while len(vshape) > len(shape) and vshape[0] == 1: vshape = vshape[1:]
    if len(vshape) > len(shape) or any(a != b and a != 1 for a, b in zip(vshape[::-1], shape[::-1])):
        if advanced and math.prod(shape) == 0 and math.prod(v.shape) == 0:   # NumPy assigns nothing, no error
            return Tensor(UOp.const_like(dt, 0, shape))
        if advanced:
            raise ValueError(f"shape mismatch: value array of shape {_fmt(v.shape)} could not be broadcast to "
                             f"indexing result of shape {_fmt(shape)}")
        raise ValueError(f"could not broadcast input array from shape {_fmt(v.shape)} into shape {_fmt(shape)}")
    if v.uop.dtype.is_complex and not (dt.is_complex or dt.is_bool):
        from numfn.trace.tensor import warn_complex_discarded
        warn_complex_discarded()
    u = v.uop.cast(dt).reshape(vshape)
    return Tensor(Tensor(u)._broadcast(shape))


def _float_fits(v: Tensor, dt: DType, advanced: bool) -> None:
    """NumPy writes a Python float into an integer array through Python's int(): NaN, infinity and a value out of
    the dtype's range raise (numfn.dtype.float_assignment_error). So does a NumPy float scalar (x.sum()) written
    through basic indices into a signed integer array; into an unsigned one, or through an index array, it is cast
    (it wraps), as a 0-d array always is. A traced value is checked when the program runs."""
    numpy_scalar = not advanced and v.is_scalar() and not dt.is_unsigned
    if not (dt.is_int and v.uop.dtype.is_float and v.ndim == 0 and (v.weak or numpy_scalar)): return
    if v.uop.op is Ops.CONST:
        known = float_assignment_error(float(v.uop.arg), dt)
        if known is not None: raise known
        return
    f = v.uop.reshape(()).cast(dtypes.float64)
    # int() truncates toward zero: the value fits where min - 1 < f < max + 1 (for int64, min - 1 rounds to min
    # as a float64: there f >= min); max + 1 is a power of two, exact
    low = float(dt.min - 1)
    below = f.alu(Ops.CMPLT, UOp.const(dtypes.float64, float(dt.min))) if low == float(dt.min) else \
        f.alu(Ops.CMPLE, UOp.const(dtypes.float64, low))
    above = UOp.const(dtypes.float64, float(dt.max + 1)).alu(Ops.CMPLE, f)
    nan = f.alu(Ops.CMPNE, f)
    failed = below.alu(Ops.OR, above).alu(Ops.OR, nan)

    def error(bits: int) -> BaseException:   # the payload is the float's bits: NumPy's message quotes its int()
        value = float(np.array(bits, np.int64).view(np.float64))
        return float_assignment_error(value, dt) or OverflowError(f"{value!r} out of bounds for {dt.name}")
    add_check(Tensor(failed), Tensor(f.bitcast(dtypes.int64)), error)


def _int_fits(v: Tensor, dt: DType, advanced: bool) -> None:
    """A NumPy integer scalar (np.int64(300), x.max() of an int64 x) written through basic indices into a signed
    integer array goes through Python's int() too: a value out of the dtype's range raises OverflowError (NumPy 2's
    "Python integer 300 out of bounds for int8"); into an unsigned array, or through an index array or a mask, it
    is cast (it wraps), as a 0-d array always is. (A Python int is checked by weak_fits and the dispatcher.)"""
    src = v.uop.dtype
    if advanced or v.weak or v.ndim or not v.is_scalar() or not (dt.is_int and not dt.is_unsigned) or \
            not src.is_int or src.is_bool or (dt.min <= src.min and src.max <= dt.max):
        return
    if v.uop.op is Ops.CONST:
        known = float_assignment_error(int(v.uop.arg), dt)
        if known is not None: raise known
        return
    u = v.uop.reshape(())
    low = u.alu(Ops.CMPLT, UOp.const(src, dt.min)) if not src.is_unsigned else UOp.const(dtypes.bool, False)
    failed = low.alu(Ops.OR, UOp.const(src, dt.max).alu(Ops.CMPLT, u))

    def error(bits: int) -> BaseException:   # the payload is the value's bits (an unsigned one may pass int64's max)
        value = int(np.array(bits, np.int64).view(src.np)) if src.itemsize == 8 else bits
        return float_assignment_error(value, dt) or OverflowError(f"Python integer {value} out of bounds for {dt.name}")
    add_check(Tensor(failed), Tensor(u.cast(dtypes.int64) if src.itemsize < 8 else u.bitcast(dtypes.int64)), error)


def _fmt(shape) -> str:
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _unique(t: Tensor) -> bool:
    """Whether an index array is known to hold distinct values (then writes through it never collide)."""
    data = _known(t.uop)
    if data is None: return False
    flat = np.sort(data, axis=None)   # (np.unique would import numpy.ma: 30 ms of a process's first trace)
    return bool((flat[1:] != flat[:-1]).all())


READ_ONLY = "assignment destination is read-only"   # NumPy's ValueError


def read_only(x: Tensor) -> bool:
    """Whether NumPy refuses writes into x: a read-only array (the imaginary part of a real array), a broadcast, a
    diagonal."""
    base = x.base if x.base is not None else x
    return base.memory == "readonly" or any(op is Ops.EXPAND or (op is Ops.GATHER and not is_window(arg[0]))
                                            for op, arg in x.chain)


def write(x: Tensor, shape: tuple[int, ...], indices: list[Tensor], value: Tensor, injective: bool,
          combine: Ops | None = None, gate: Tensor | None = None) -> None:
    """Store `value` (of `shape`) into x at `indices` (one per axis of x, broadcastable to `shape`): the base of x
    gets a new version and every view of it follows. `combine` accumulates instead (ufunc.at); where `gate` (a
    bool tensor broadcastable to `shape`) is false, nothing is written."""
    base = x.base if x.base is not None else x
    if base.memory == "constant":
        raise unsupported("writing into an array captured from outside the function (a global or closure variable)",
                          "It is a constant of the compiled program; copy it first (y = np.array(x)) or pass it "
                          "as an argument")
    if read_only(x): raise ValueError(READ_ONLY)
    if math.prod(shape) == 0: return
    view_idx = [Tensor(i._broadcast(shape)) for i in indices]
    base_idx = map_to_base(x, view_idx)
    srcs = [Tensor(i.uop.cast(dtypes.int64))._broadcast(shape) for i in base_idx]
    parts = [op for op, _ in x.chain if op in (Ops.CAST, Ops.IMAG)]
    if parts:   # x is the real or imaginary part of a complex array: the other part is written back as it is
        if combine is not None: raise unsupported("ufunc.at on a part of a complex array")
        old = gather(base, [Tensor(i) for i in srcs])
        other = old.uop.alu(Ops.IMAG) if parts[0] is Ops.CAST else old.uop.cast(base.uop.dtype.component)
        value = Tensor(value.uop.alu(Ops.COMPLEX, other) if parts[0] is Ops.CAST else other.alu(Ops.COMPLEX, value.uop))
    at = list(srcs)
    inside = _in_bounds(srcs, cast(tuple[int, ...], base.uop.shape))
    if x.base is not None:   # a view: an index outside it may still be inside its base (a[1:][-6] is a[0])
        inside_view = _in_bounds([i.uop.cast(dtypes.int64) for i in view_idx], cast(tuple[int, ...], x.uop.shape))
        if inside_view is not None: inside = inside_view if inside is None else inside & inside_view
    if inside is not None: gate = inside if gate is None else Tensor(gate.uop.cast(dtypes.bool)) & inside
    if gate is not None: srcs.append(Tensor(gate.uop.cast(dtypes.bool))._broadcast(shape))
    new = UOp(Ops.SCATTER, base.uop.dtype, (base.uop, value.uop, *srcs), (combine, injective, gate is not None))
    base.rebind(new)
    if base._links:   # a branch's result that some branches made a view of another array: it is written too
        Links.write_through(base, shape, at, value, injective, combine, gate)


def _in_bounds(indices: list[UOp], shape: tuple[int, ...]) -> Tensor | None:
    """Where the (wrapped) indices fall inside `shape`, for those whose bounds do not prove it; None where all do.
    A write is gated by it: an index NumPy rejects raises only after the program ran (a check), and its store
    must not land outside the array meanwhile (nor, clamped, on an element NumPy would leave alone)."""
    inside = None
    for i, n in zip(indices, shape):
        lo, hi = i.bounds
        if lo >= 0 and hi <= n - 1: continue
        ok = (Tensor(i) >= 0) & (Tensor(i) < n)
        inside = ok if inside is None else inside & ok
    return inside


def map_to_base(view: Tensor, indices: list[Tensor]) -> list[Tensor]:
    """Indices into `view` (one tensor per axis) as indices into its base, through the view's movement ops."""
    if view.base is None: return indices
    idx = list(indices)
    shapes = view.chain_shapes()
    for (op, arg), (outer, inner) in zip(reversed(view.chain), reversed(shapes)):
        # `outer` is the shape after the op (what idx indexes), `inner` its source's shape
        if op is Ops.RESHAPE: idx = _reshape_indices(idx, outer, inner)
        elif op is Ops.PERMUTE:
            new: list[Tensor | None] = [None] * len(idx)
            for i, a in enumerate(arg): new[a] = idx[i]
            idx = cast(list[Tensor], new)   # a permutation sets every slot
        elif op is Ops.SHRINK: idx = [i + b if b else i for i, (b, _) in zip(idx, arg)]
        elif op is Ops.PAD: idx = [i - b if b else i for i, (b, _) in zip(idx, arg)]
        elif op is Ops.FLIP: idx = [(n - 1) - i if a in arg else i for a, (i, n) in enumerate(zip(idx, outer))]
        elif op in (Ops.CAST, Ops.IMAG): pass   # a part of a complex array: the same element
        elif op is Ops.GATHER: idx = [gather(Tensor(g), idx) for g in arg[1]]   # each base index, where it points
        else: raise AssertionError(f"no index map through {op.name}")
    return idx


def _reshape_indices(idx: list[Tensor], new: tuple[int, ...], old: tuple[int, ...]) -> list[Tensor]:
    flat = None
    for i, n in zip(idx, new):
        flat = i if flat is None else flat * n + i
    if flat is None: flat = Tensor(UOp.const(dtypes.int64, 0))
    out = []
    stride = math.prod(old)
    for n in old:
        stride //= max(n, 1)
        out.append((flat // stride) % n if n > 1 else Tensor(UOp.const(dtypes.int64, 0)))
    return out
