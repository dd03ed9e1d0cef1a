"""Arrays of run-time length (numfn.trace.dynamic.DynTensor) as loop state and as results of branches: the region
machinery of numfn.trace.control carries plain arrays of static shape, so such an array crosses a region as two
kinds of value, its elements stored at a static bound (the compacted form, `DynTensor.uop`) and one 0-d int64
length per axis of run-time length, and is rebuilt on the other side.

`Layout` says how one value crosses: its bound shape and which axes have a run-time length. A plain array of
static shape S meets a layout as the run-time-length array of lengths S (stored at the bound: padded when the
bound is larger). `lower` turns values into the flat list a region carries, `lift` rebuilds them. A loop whose
body turns a plain state array into one of run-time length (`z = z[m]`: a mask selection keeps the bound) learns
that from a first trace (`BecomesRunTimeLength`) and is traced again with that state lowered; a branch whose sides
give such arrays is traced again with the results lowered (bound: the larger of the sides').
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from numfn.errors import NumfnError, unsupported, user_location
from numfn.trace.dynamic import DynTensor
from numfn.trace.tensor import Tensor, numpy_function
from numfn.dtype import dtypes
from numfn.ir.uop import UOp

I64 = dtypes.int64


@dataclass(frozen=True)
class Layout:
    """How a value of run-time length crosses a region: stored at `bound`, with a length for each axis in `axes`."""
    bound: tuple[int, ...]
    axes: tuple[int, ...]

    @property
    def width(self) -> int:
        """How many values of the region's flat list it takes: the stored elements and one length per axis."""
        return 1 + len(self.axes)


def crosses_as_parts(v: Any) -> bool:
    """Whether `v` is an array of run-time length that a region carries as its parts: a selection (x[mask], a copy
    no write can reach) or a slice of one (y[1:]); not a window of an array that may be written (a[k:]), which is a
    view of that memory, carried through the region."""
    return isinstance(v, DynTensor) and (v.base is None or crosses_as_parts(v.base)) and \
        any(ln is not None for ln in v.lengths)


def layout_of(values: Sequence[Any], what: str) -> Layout:
    """The layout that holds every one of `values` (some of run-time length, the others plain arrays): along each
    axis of run-time length the largest bound (a plain array's size); other axes must agree."""
    dyn = [v for v in values if crosses_as_parts(v)]
    rank = dyn[0].ndim
    axes = sorted({a for v in dyn for a, ln in enumerate(v.lengths) if ln is not None})
    shapes = []
    for v in values:
        if not isinstance(v, Tensor) or v.ndim != rank:
            raise NumfnError(f"{what} is an array of run-time length (x[mask], nonzero) on one path and "
                             f"{_describe(v)} on another (at {user_location()}); give it one number of dimensions")
        shapes.append(cast(tuple[int, ...], v.uop.shape))
    bound = tuple(max(s[a] for s in shapes) for a in range(rank))
    for s in shapes:
        if any(s[a] != bound[a] for a in range(rank) if a not in axes):
            raise NumfnError(f"{what} has shapes {sorted(set(shapes))} on different paths (at {user_location()}); "
                             "only an axis of run-time length may differ")
    return Layout(bound, tuple(axes))


def _describe(v: Any) -> str:
    return f"an array of shape {v.shape}" if isinstance(v, Tensor) and not crosses_as_parts(v) else \
        f"a {type(v).__name__}"


def parts(v: Any, layout: Layout, what: str) -> list[Tensor]:
    """v as the region carries it under `layout`: its elements stored at the bound, then its lengths (int64)."""
    if not isinstance(v, Tensor) or v.ndim != len(layout.bound):
        raise NumfnError(f"{what} is an array of run-time length of {len(layout.bound)} dimensions before and "
                         f"{_describe(v)} after (at {user_location()}); a loop's state keeps its kind of array")
    if isinstance(v, DynTensor) and not crosses_as_parts(v):
        raise unsupported(f"{what}, a slice with traced bounds where an array of run-time length is carried",
                          "copy it (x[k:].copy()) or keep the mask and use numpy.where")
    lengths = v.lengths if isinstance(v, DynTensor) else (None,) * v.ndim
    shape = cast(tuple[int, ...], v.uop.shape)
    for a, n in enumerate(shape):
        if a not in layout.axes and (n != layout.bound[a] or lengths[a] is not None):
            raise NumfnError(f"{what} changes shape from {layout.bound} to {shape} (at {user_location()}); only "
                             "an axis of run-time length may change its length")
        if n > layout.bound[a]:   # (a mask selection keeps its array's bound: this is an array grown in the loop)
            raise NumfnError(f"{what} may grow past {layout.bound[a]} elements along axis {a}, the most it has "
                             f"before the loop (at {user_location()}); an array of run-time length carried by a loop "
                             "may only shrink (x = x[mask])")
    stored = Tensor(v.uop, weak=v.weak)
    for a in layout.axes:   # pad to the bound (the padding is never read: it is past the length)
        have = cast(tuple[int, ...], stored.uop.shape)
        extra = layout.bound[a] - have[a]
        if extra:
            fill = numpy_function("zeros")(tuple(extra if b == a else n for b, n in enumerate(have)),
                                           dtype=stored.uop.dtype.np)
            stored = numpy_function("concatenate")([stored, fill], axis=a)
    out = [stored]
    for a in layout.axes:
        ln = lengths[a]
        out.append(Tensor(ln if ln is not None else UOp.const(I64, shape[a])))
    return out


def lower(values: Sequence[Any], layouts: dict[int, Layout], names: Sequence[str]) -> list:
    """The flat list a region carries: values[k] as its parts where layouts has k, else as it is."""
    out: list = []
    for k, v in enumerate(values):
        if k in layouts: out += parts(v, layouts[k], names[k] if k < len(names) else f"value {k}")
        else: out.append(v)
    return out


def lift(flat: Sequence[Any], layouts: dict[int, Layout], count: int) -> list:
    """The `count` values `lower` made `flat` of: parts rebuilt into arrays of run-time length."""
    out, at = [], 0
    for k in range(count):
        if k not in layouts:
            out.append(flat[at])
            at += 1
            continue
        layout = layouts[k]
        stored, lengths = flat[at], flat[at + 1:at + layout.width]
        per_axis: list[UOp | None] = [None] * len(layout.bound)
        for a, ln in zip(layout.axes, lengths): per_axis[a] = Tensor.lift(ln).uop
        out.append(DynTensor(stored.uop, weak=stored.weak, lengths=tuple(per_axis)))
        at += layout.width
    return out


def lowered_names(names: Sequence[str], layouts: dict[int, Layout], count: int) -> list[str]:
    out: list[str] = []
    for k in range(count):
        name = names[k] if k < len(names) else f"value {k}"
        out.append(name)
        if k in layouts: out += [f"{name}'s run-time length"] * len(layouts[k].axes)
    return out


class BecomesRunTimeLength(Exception):
    """A loop body made a plain state array one of run-time length (`z = z[m]`): the loop is traced again with it
    carried as its parts (`index`: the state's position, `layout`: how)."""

    def __init__(self, index: int, layout: Layout):
        super().__init__(index, layout)
        self.index, self.layout = index, layout


def lowered_body(fn: Callable, layouts: dict[int, Layout], init: Sequence[Any], names: Sequence[str]) -> Callable:
    """A loop body over the flat state: rebuilds the values of run-time length, runs fn, lowers what it returns
    (raising BecomesRunTimeLength for a plain state array it makes one of run-time length)."""
    def run(*flat):
        new = list(fn(*lift(flat, layouts, len(init))))
        for k, v in enumerate(new):
            if k not in layouts and k < len(init) and crosses_as_parts(v):
                raise BecomesRunTimeLength(k, layout_of([init[k], v], names[k] if k < len(names) else "loop state"))
        return lower(new, layouts, names)
    return run


def lowered_cond(fn: Callable, layouts: dict[int, Layout], count: int) -> Callable:
    return lambda *flat: fn(*lift(flat, layouts, count))


def branch_layouts(results: Sequence[Sequence[Any]], names: Sequence[str]) -> dict[int, Layout]:
    """For each result position where some branch gives an array of run-time length: the layout holding every
    branch's value there."""
    out = {}
    for k in range(min(len(r) for r in results)):
        vs = [r[k] for r in results]
        if any(crosses_as_parts(v) for v in vs):
            out[k] = layout_of(vs, repr(names[k]) if k < len(names) and not names[k].startswith("_numfn")
                               else f"result {k}")
    return out
