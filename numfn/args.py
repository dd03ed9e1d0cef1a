"""Argument helpers shared by the tracer and numfn.numpy: NumPy's normalization of dtypes and axes, and refusal of
keywords numfn does not implement. Errors are NumPy's (type and wording)."""
from __future__ import annotations

from typing import Any

import numpy as np

from numfn.dtype import DType, dtypes
from numfn.errors import NumfnError, OutArgumentError, unsupported


def as_dtype(dtype: Any) -> DType:
    """The numfn DType of anything np.dtype accepts (a NumPy type, a name, a DType); NumfnError if unsupported."""
    if isinstance(dtype, DType): return dtype
    try:
        return dtypes.from_numpy(dtype)
    except TypeError as e:
        raise unsupported(f"dtype {dtype!r}", str(e)) from None


def refuse(what: str, **given) -> None:
    """NumPy keyword arguments numfn does not implement: an error naming them, unless left at their default."""
    for name, value in given.items():
        if value is not None and value is not True:
            raise unsupported(f"the {name}= argument of {what}", error=OutArgumentError if name == "out" else
                              NumfnError)


def normalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    """An axis in range(ndim) (negative counts from the end); NumPy's AxisError/TypeError otherwise."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer ({name})")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{name} {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """The axes a reduction's `axis` argument names: None for all, an int or a tuple; duplicates refused."""
    if axis is None: return tuple(range(ndim))
    if ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1): return ()   # NumPy allows it (no tuple)
    axes = tuple(normalize_axis(a, ndim) for a in (axis if isinstance(axis, tuple) else (axis,)))
    if len(set(axes)) != len(axes): raise ValueError("duplicate value in 'axis'")
    return axes
