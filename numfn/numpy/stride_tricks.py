"""numfn.numpy.stride_tricks: numpy.lib.stride_tricks over traced arrays.

`sliding_window_view(x, w)` is NumPy's read-only view of x's overlapping windows (W[i, j] = x[i + j] for a 1-D x).
It is a gather at i + j along each windowed axis, a view of x as a diagonal is (read through x's later writes, as
NumPy's is) and read-only, as NumPy's is unless asked for writeable=True, which numfn refuses (its windows
overlap: a write would change several)."""
from __future__ import annotations

from numfn.args import normalize_axis
from numfn.numpy.creation import size_value
from numfn.errors import unsupported
from numfn.ir.uop import UOp
from numfn.trace.tensor import Tensor, gather
from numfn.numpy._typing import ArrayLike

__all__ = ["sliding_window_view"]


def _positions(n: int, axis: int, ndim: int) -> Tensor:
    """0..n-1 along `axis` of an ndim-dimensional shape (size 1 elsewhere): a gather index."""
    return Tensor(UOp.iota(n).reshape(tuple(n if a == axis else 1 for a in range(ndim))))


def _windows_last(t: Tensor, w: int) -> Tensor:
    """The windows of width w along t's last axis, as a new last axis: (..., n) -> (..., n - w + 1, w), read at
    [..., i + j] (a gather, as a diagonal's: a read-only view of t)."""
    lead, n = t.shape[:-1], t.shape[-1]
    nd = len(lead) + 2
    starts, offsets = _positions(n - w + 1, nd - 2, nd), _positions(w, nd - 1, nd)
    idx = [_positions(s, k, nd) for k, s in enumerate(lead)] + [starts + offsets]
    return t._view(gather(t, idx).uop)


def sliding_window_view(x: ArrayLike, window_shape, axis=None, *, subok: bool = False,
                        writeable: bool = False) -> Tensor:
    """NumPy's sliding_window_view: x's windows of `window_shape` along `axis` (every axis by default), the window
    axes after x's (whose lengths shrink to n - w + 1), as a read-only view of x."""
    if writeable: raise unsupported("numpy.lib.stride_tricks.sliding_window_view(..., writeable=True)",
                                    "its windows overlap: compute the values you need instead of writing into them")
    t = Tensor.lift(x)
    shape = tuple(window_shape) if isinstance(window_shape, (tuple, list)) else (window_shape,)
    shape = tuple(size_value(w, "sliding_window_view's window_shape") for w in shape)
    if any(w < 0 for w in shape): raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        if len(shape) != t.ndim:
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                             f"{len(shape)} window_shape elements and `x.ndim` is {t.ndim}.")
        axes = tuple(range(t.ndim))
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(normalize_axis(a, t.ndim) for a in axes)
        if len(shape) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(shape)} window_shape "
                             f"elements and {len(axes)} axes elements.")
    for a, w in zip(axes, shape):
        if t.shape[a] < w: raise ValueError("window shape cannot be larger than input array shape")
    out = t
    for a, w in zip(axes, shape):
        # axis a to the end, its windows, then the shrunk axis back to a (the window axis stays last)
        order = tuple(i for i in range(out.ndim) if i != a) + (a,)
        moved = out._view(out.uop.permute(order)) if order != tuple(range(out.ndim)) else out
        win = _windows_last(moved, w)
        k = win.ndim
        back = list(range(k - 2))
        back.insert(a, k - 2)
        back.append(k - 1)
        out = win._view(win.uop.permute(tuple(back))) if back != list(range(k)) else win
    return out
