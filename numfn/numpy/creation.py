"""Array creation: constants, ranges, identity matrices, and conversion of array-likes."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numfn.args import as_dtype
from numfn.dtype import check_scalar_fits, scalar_dtype
from numfn.errors import user_location
from numfn.tensor import Tensor
from numfn.uop import UOp

T = Tensor.lift

__all__ = ['full', 'zeros', 'ones', 'full_like', 'zeros_like', 'ones_like', 'arange', 'eye', 'asarray', 'array']

# ---- creation -------------------------------------------------------------------------------------------------
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
    """NumPy's arange: the values are computed while tracing and embedded as a constant."""
    for v in (start, stop, step):
        if isinstance(v, Tensor):
            raise TypeError(f"arange needs Python numbers, not traced arrays (at {user_location()})")
    npdt = None if dtype is None else as_dtype(dtype).np
    values = np.arange(start, stop, step, dtype=npdt) if stop is not None else np.arange(start, step=step, dtype=npdt)
    return T(values)


def eye(N: int, M: int | None = None, k: int = 0, dtype=np.float64) -> Tensor:
    M = N if M is None else M
    rows = arange(N, dtype=np.int64).reshape(N, 1) if N else zeros((0, 1), np.int64)
    cols = arange(M, dtype=np.int64).reshape(1, M) if M else zeros((1, 0), np.int64)
    return (rows + k == cols).astype(dtype)


def asarray(a, dtype: Any = None) -> Tensor:
    return T(a).astype(dtype, copy=False) if dtype is not None else T(a)   # the array itself when its dtype matches


array = asarray
