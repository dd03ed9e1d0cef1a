"""Array manipulation: reshape, transpose and friends (views), concatenate and stack."""
from __future__ import annotations

import builtins
from collections.abc import Sequence

from numfn.args import normalize_axis, refuse
from numfn.dtype import dtypes, result_type
from numfn.tensor import Tensor
from numfn.uop import Ops, UOp
from numfn.numpy.creation import zeros

T = Tensor.lift

__all__ = ['reshape', 'ndim', 'shape', 'size', 'transpose', 'swapaxes', 'expand_dims', 'squeeze', 'broadcast_to',
           'ravel', 'astype', 'concatenate', 'stack']

# ---- shapes ---------------------------------------------------------------------------------------------------
def reshape(a, shape, order: str = "C") -> Tensor: return T(a).reshape(shape, order=order)
def ndim(a) -> int: return T(a).ndim
def shape(a) -> tuple[int, ...]: return T(a).shape
def size(a, axis=None) -> int: return T(a).size if axis is None else T(a).shape[axis]
def transpose(a, axes=None) -> Tensor: return T(a).transpose(*(() if axes is None else (axes,)))
def swapaxes(a, axis1: int, axis2: int) -> Tensor: return T(a).swapaxes(axis1, axis2)
def expand_dims(a, axis) -> Tensor: return T(a).expand_dims(axis)
def squeeze(a, axis=None) -> Tensor: return T(a).squeeze(axis)
def broadcast_to(a, shape) -> Tensor: return T(a).broadcast_to(shape)
def ravel(a) -> Tensor: return T(a).ravel()
def astype(a, dtype) -> Tensor: return T(a).astype(dtype)


# ---- joining --------------------------------------------------------------------------------------------------
def concatenate(arrays: Sequence, axis: int | None = 0, out=None, dtype=None, casting="same_kind") -> Tensor:
    refuse("concatenate", out=out)
    ts = [T(a) if dtype is None else T(a).astype(dtype) for a in arrays]
    if not ts: raise ValueError("need at least one array to concatenate")
    if axis is None: ts, axis = [t.reshape(-1) for t in ts], 0
    nd = ts[0].ndim
    if nd == 0: raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(ts):
        if t.ndim != nd:
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly, but "
                             f"the array at index 0 has {nd} dimension(s) and the array at index {i} has {t.ndim} "
                             "dimension(s)")
    ax = normalize_axis(axis, nd)
    for i, t in enumerate(ts):
        for d in range(nd):
            if d != ax and t.shape[d] != ts[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match exactly,"
                                 f" but along dimension {d}, the array at index 0 has size {ts[0].shape[d]} and the "
                                 f"array at index {i} has size {t.shape[d]}")
    dt = result_type(*(t.uop.dtype for t in ts))
    total = builtins.sum(t.shape[ax] for t in ts)
    out_shape = ts[0].shape[:ax] + (total,) + ts[0].shape[ax + 1:]
    # each piece padded to the full length; a mask of where it lies picks it (exact for -0.0 and NaN, unlike a sum)
    out, offset, pieces = None, 0, []
    for t in ts:
        n = t.shape[ax]
        pad = tuple((offset, total - offset - n) if d == ax else (0, 0) for d in range(nd))
        if n: pieces.append((t.uop.cast(dt).pad(pad), UOp.const_like(dtypes.bool, True, t.shape).pad(pad)))
        offset += n
    if not pieces: return zeros(out_shape, dt)
    out = pieces[-1][0]
    for value, mask in reversed(pieces[:-1]): out = mask.alu(Ops.WHERE, value, out)
    return Tensor(out)


def stack(arrays: Sequence, axis: int = 0) -> Tensor:
    ts = [T(a) for a in arrays]
    if not ts: raise ValueError("need at least one array to stack")
    if any(t.shape != ts[0].shape for t in ts): raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, ts[0].ndim + 1)
    return concatenate([t.expand_dims(ax) for t in ts], axis=ax)


