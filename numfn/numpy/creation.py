"""Array creation: constants, ranges, identity matrices, and conversion of array-likes."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from numfn.args import as_dtype
from numfn.dtype import check_scalar_fits, dtypes, scalar_dtype
from numfn.errors import user_location
from numfn.tensor import Tensor
from numfn.uop import Ops, UOp

T = Tensor.lift

__all__ = ['full', 'zeros', 'ones', 'full_like', 'zeros_like', 'ones_like', 'arange', 'eye', 'asarray', 'array']

def _shape(shape) -> tuple[int, ...]:
    shape = (shape,) if not isinstance(shape, (tuple, list)) else shape
    out = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in out): raise ValueError("negative dimensions are not allowed")
    return out


def full(shape, fill_value, dtype=None) -> Tensor:
    """An array of `shape` filled with `fill_value` (a constant: it costs no memory until stored)."""
    if isinstance(fill_value, (Tensor, np.ndarray, list, tuple)):   # an array fill is broadcast
        t = T(fill_value)
        dt = t.uop.dtype if dtype is None else as_dtype(dtype)
        return t.astype(dt).broadcast_to(_shape(shape))
    dt = scalar_dtype(fill_value) if dtype is None else as_dtype(dtype)
    check_scalar_fits(fill_value, dt, "fill value")   # like NumPy: a Python int must fit an integer dtype
    return Tensor(UOp.const_like(dt, fill_value, _shape(shape)))


def zeros(shape, dtype=np.float64) -> Tensor: return full(shape, 0, dtype)
def ones(shape, dtype=np.float64) -> Tensor: return full(shape, 1, dtype)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None) -> Tensor:
    t = T(a)
    return full(t.shape if shape is None else shape, fill_value, t.uop.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None) -> Tensor: return full_like(a, 0, dtype, shape=shape)
def ones_like(a, dtype=None, order="K", subok=True, shape=None) -> Tensor: return full_like(a, 1, dtype, shape=shape)


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """NumPy's arange, computed where it is used (an IOTA: no memory, fused into its consumers). The values are
    NumPy's: its first element and step in the result dtype, element i = first + i * step (ints wrap alike)."""
    for v in (start, stop, step):
        if isinstance(v, Tensor):
            raise TypeError(f"arange needs Python numbers, not traced arrays (at {user_location()})")
    if stop is None: start, stop = 0, start
    # NumPy's own answer for the first two elements decides the dtype, the errors (step 0, bool ranges) and the step
    npdt = None if dtype is None else as_dtype(dtype).np
    head = np.arange(start, stop, step, dtype=npdt) if _arange_length(start, stop, step) <= 2 else \
        np.arange(start, start + 2 * step, step, dtype=npdt)
    n = _arange_length(start, stop, step)
    dt = as_dtype(head.dtype)
    if n <= 2: return T(head) if n else Tensor(UOp.const_like(dt, 0, (0,)))
    if dt.is_float:
        first, delta = head[0], head[1] - head[0]   # in the result dtype, as NumPy's fill loop computes them
        i = Tensor(UOp.iota(n).cast(dt))
        return Tensor(i.uop.alu(Ops.MUL, UOp.const(dt, delta.item())).alu(Ops.ADD, UOp.const(dt, first.item())))
    first, delta = int(head[0]), int(head[1]) - int(head[0])
    u = UOp.iota(n).alu(Ops.MUL, UOp.const(dtypes.int64, delta)).alu(Ops.ADD, UOp.const(dtypes.int64, first))
    return Tensor(u.cast(dt))


def _arange_length(start, stop, step) -> int:
    if step == 0: return 1   # NumPy raises; the head computation reports it
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, stop, step)):
        return len(range(int(start), int(stop), int(step)))
    return max(0, math.ceil((stop - start) / step))


def eye(N: int, M: int | None = None, k: int = 0, dtype=np.float64) -> Tensor:
    """The identity (ones on diagonal k), computed from two ranges: nothing stored."""
    M = N if M is None else M
    rows = Tensor(UOp.iota(N).reshape((N, 1)).expand((N, M)))
    cols = Tensor(UOp.iota(M).reshape((1, M)).expand((N, M)))
    return (rows + k == cols).astype(dtype)


def asarray(a, dtype: Any = None) -> Tensor:
    return T(a).astype(dtype, copy=False) if dtype is not None else T(a)   # the array itself when its dtype matches


array = asarray
