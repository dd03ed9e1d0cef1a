"""Reductions and scans: sum, prod, max, min, mean, cumsum (the Tensor methods, as functions)."""
from __future__ import annotations

from numfn.tensor import Tensor

T = Tensor.lift

__all__ = ['sum', 'prod', 'max', 'min', 'mean', 'cumsum', 'amax', 'amin']

# ---- reductions and products ----------------------------------------------------------------------------------
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
    return T(a).sum(axis, dtype, out, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:
    return T(a).prod(axis, dtype, out, keepdims, initial, where)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
    return T(a).max(axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
    return T(a).min(axis, out, keepdims, initial, where)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None) -> Tensor:
    return T(a).mean(axis, dtype, out, keepdims, where)


def cumsum(a, axis=None, dtype=None, out=None) -> Tensor: return T(a).cumsum(axis, dtype, out)
amax, amin = max, min


