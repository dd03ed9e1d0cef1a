"""Movement of arrays of run-time length (numfn.trace.dynamic's DynTensor: a window `a[:k]` with a traced `k`, a
selection `x[mask]`): np.flip, np.flipud, np.fliplr and np.roll, registered in dynamic.NUMPY (what numfn.numpy's
functions do when their first argument has a run-time length).

Such an array is stored at a static bound with its elements first; its movement works on the elements only:
- a flip is the reversed slice `a[::-1]` along each flipped axis (element i of a window of length k is element
  k-1-i of the window), a view as NumPy's is: writes through it reach the array it was sliced from;
- a roll by s gathers element (i - s) mod k at position i of an axis of length k (a copy, as NumPy's is).
"""
from __future__ import annotations

from typing import Any, cast

from numfn.args import normalize_axes
from numfn.dtype import dtypes
from numfn.errors import unsupported
from numfn.trace.dynamic import HINT, NUMPY, DynTensor
from numfn.trace.tensor import Tensor, gather
from numfn.ir.uop import UOp

I64 = dtypes.int64


def flip(y: DynTensor, axis: Any = None) -> Tensor:
    """np.flip: the array reversed along `axis` (every axis when None), a view."""
    axes = range(y.ndim) if axis is None else normalize_axes(axis, y.ndim)
    return y[tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(y.ndim))]


def flipud(y: DynTensor) -> Tensor:
    return flip(y, 0)


def fliplr(y: DynTensor) -> Tensor:
    if y.ndim < 2: raise ValueError("Input must be >= 2-d.")
    return flip(y, 1)


def roll(y: DynTensor, shift: Any, axis: Any = None) -> Tensor:
    """np.roll: elements shifted by `shift` along `axis` (int or tuple; shifts and axes broadcast as NumPy's), those
    pushed past the end coming back at the start. A copy."""
    if axis is None:
        if y.ndim != 1:
            raise unsupported("numpy.roll without an axis of a multidimensional array of run-time length", HINT)
        axis = 0
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift]
    if len(axes) == 1: axes = axes * len(shifts)
    if len(shifts) == 1: shifts = shifts * len(axes)
    if len(axes) != len(shifts): raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total: dict[int, Any] = {}
    for s, a in zip(shifts, axes):   # NumPy adds the shifts given for one axis
        a = normalize_axes(a, y.ndim)[0]
        total[a] = total.get(a, 0) + s
    out: Tensor = y
    for a, s in total.items(): out = _roll_axis(cast(DynTensor, out), s, a)
    return out


def _roll_axis(y: DynTensor, shift: Any, axis: int) -> DynTensor:
    shape = cast(tuple[int, ...], y.uop.shape)
    bound = shape[axis]
    if bound == 0: return DynTensor(y.uop, weak=y.weak, lengths=y.lengths)
    length = y.lengths[axis]
    n = Tensor(length) if length is not None else Tensor(UOp.const(I64, bound))
    n = Tensor((n > 0).uop.where(n.uop, UOp.const(I64, 1)))   # (no element to take when the length is 0)
    position = Tensor(UOp.iota(bound))
    source = (position - Tensor.lift(shift).astype("int64")) % n
    rank = y.ndim
    idx = [Tensor(UOp.iota(m).reshape(tuple(m if b == a else 1 for b in range(rank)))) if a != axis else
           source.reshape(tuple(bound if b == axis else 1 for b in range(rank))) for a, m in enumerate(shape)]
    return DynTensor(gather(y.compact(), idx).uop, weak=y.weak, lengths=y.lengths)


NUMPY.update({"flip": flip, "flipud": flipud, "fliplr": fliplr, "roll": roll})
