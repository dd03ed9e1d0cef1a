"""Tensor's shape methods that are ndarray's (reshape, flatten, ravel, transpose, swapaxes, broadcast_to, squeeze,
expand_dims, is_contiguous): views of an array's memory where NumPy's are, registered on Tensor (tensor_method) when
numfn.trace is imported. Built on the tracer's core (numfn.trace.tensor: Tensor._view, the memory model)."""
from __future__ import annotations

import math
import operator
from typing import SupportsIndex, cast

from numfn.args import normalize_axes, normalize_axis
from numfn.errors import unsupported
from numfn.codegen.lower import view_offset
from numfn.ir.uop import Ops, UOp
from numfn.trace.branch_layout import branch_layouts, same_in_every_branch
from numfn.trace.tensor import Axes, ShapeArg, Tensor, tensor_method


@tensor_method("reshape")
def _reshape_method(self, *shape: ShapeArg, order: str = "C", copy: bool | None = None) -> Tensor:
    if copy: return Tensor(self._reshaped(shape, order), self.weak)
    return self._view(self._reshaped(shape, order))


def _shown(shape: tuple) -> str:
    """A shape as NumPy's reshape error shows it: (3,3), (7,), the unknown dimension as newaxis."""
    return "(" + ",".join("newaxis" if s < 0 else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


@tensor_method("_reshaped")
def _reshaped_method(self, shape: tuple, order: str = "C") -> UOp:
    order = _memory_order(order, self.ndim, "reshape")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)): shape = tuple(shape[0])
    shape = tuple(operator.index(s) for s in shape)
    # NumPy 2 takes any negative number as the one unknown dimension
    if sum(s < 0 for s in shape) > 1: raise ValueError("can only specify one unknown dimension")
    if any(s < 0 for s in shape):
        known = math.prod(s for s in shape if s >= 0)
        if known == 0 or self.size % known:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {_shown(shape)}")
        shape = tuple(self.size // known if s < 0 else s for s in shape)
    if math.prod(shape) != self.size:
        raise ValueError(f"cannot reshape array of size {self.size} into shape {_shown(shape)}")
    if order == "F":   # column-major: the same as reshaping the reversed axes in row-major order
        u = self.uop.permute(tuple(range(self.ndim))[::-1]).reshape(shape[::-1])
        return u.permute(tuple(range(len(shape)))[::-1])
    return self.uop.reshape(shape)


@tensor_method("is_contiguous")
def _is_contiguous_method(self, order: str = "C") -> bool:
    """Whether NumPy's array would be contiguous in C (row-major) or F (column-major) order: a view as its strides
    say, an array that is no view (row-major) in F order too where at most one axis is longer than 1."""
    return _contiguous(self, order)


@tensor_method("flatten")
def _flatten_method(self, order: str = "C") -> Tensor:
    return Tensor(self._reshaped((-1,), order), self.weak)   # a copy in NumPy


@tensor_method("ravel")
def _ravel_method(self, order: str = "C") -> Tensor:
    # NumPy's ravel is a view of an array contiguous in that order, else a copy (reshape(-1) is a view whenever
    # strides allow, a reversed array's too)
    flat = self._reshaped((-1,), order)
    if order in ("C", "F") and not _contiguous(self, order):
        return Tensor(flat, self.weak)
    return self._view(flat)


@tensor_method("permute")
@tensor_method("transpose")
def _transpose_method(self, *axes: ShapeArg) -> Tensor:
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)): axes = tuple(axes[0])
    if not axes: axes = tuple(range(self.ndim))[::-1]
    if len(axes) != self.ndim: raise ValueError("axes don't match array")
    order = tuple(normalize_axis(cast(int, a), self.ndim) for a in axes)   # ints, or normalize_axis says so
    if len(set(order)) != len(order): raise ValueError("repeated axis in transpose")
    return self._view(self.uop.permute(order))


@tensor_method("swapaxes")
def _swapaxes_method(self, a: int, b: int) -> Tensor:
    order = list(range(self.ndim))
    a, b = normalize_axis(a, self.ndim), normalize_axis(b, self.ndim)
    order[a], order[b] = order[b], order[a]
    return self.transpose(order)


@tensor_method("broadcast_to")
def _broadcast_to_method(self, shape: ShapeArg) -> Tensor:
    dims = tuple(map(operator.index, shape)) if isinstance(shape, (tuple, list)) else \
        (operator.index(cast(SupportsIndex, shape)),)
    if len(dims) < self.ndim or any(s != n and s != 1 for s, n in zip(self.shape[::-1], dims[::-1])):
        raise ValueError(f"cannot broadcast an array of shape {self.shape} to shape {dims}")
    return self._view(self._broadcast(dims))


@tensor_method("squeeze")
def _squeeze_method(self, axis: Axes = None) -> Tensor:
    axes = tuple(i for i, s in enumerate(self.shape) if s == 1) if axis is None else normalize_axes(axis, self.ndim)
    if any(self.shape[a] != 1 for a in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))


@tensor_method("expand_dims")
def _expand_dims_method(self, axis: ShapeArg) -> Tensor:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = self.ndim + len(axes)
    axes = normalize_axes(axes, ndim)
    it = iter(self.shape)
    return self.reshape(tuple(1 if i in axes else next(it) for i in range(ndim)))


def _memory_order(order, ndim: int, what: str) -> str:
    """'C' or 'F' for an order argument; 'A' and 'K' (which follow the memory layout, which traced arrays do not
    have) only where all orders agree."""
    if order is None: order = "C"
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if order in ("A", "K"):
        if ndim > 1: raise unsupported(f"{what} with order={order!r}", "traced arrays have no memory layout; pass "
                                       "order='C' or 'F'")
        return "C"
    return order


def _contiguous(view: Tensor, order: str) -> bool:
    """Whether an array is contiguous in memory in C (row-major) or F (column-major) order, as NumPy's flags say it:
    axes of size 1 do not count, and an empty or one-element array is contiguous. A view as its strides say; an array
    that is no view (row-major) in F order too where at most one axis is longer than 1; an array whose layout a
    branch chose as in the branch taken (numfn.trace.branch_layout)."""
    if view.size <= 1: return True
    per_branch = branch_layouts(view)
    if per_branch is not None:
        return same_in_every_branch([_contiguous_chain(*b, view.shape, order) for b in per_branch],
                                    f"whether the view is {order}-contiguous (ravel, flags)")
    if view.base is None: return _contiguous_chain(view.shape, (), view.shape, order)
    return _contiguous_chain(view.base.shape, view.chain, view.shape, order)


def _contiguous_chain(base_shape: tuple[int, ...], chain: tuple, shape: tuple[int, ...], order: str) -> bool:
    """Whether the view `chain` makes of a base of `base_shape` (a view of `shape`) is contiguous in `order` (a
    chain with a gather, a window of run-time position, is not known to be)."""
    if any(op is Ops.GATHER for op, _ in chain): return False
    strides = view_offset(base_shape, chain)
    if strides is None: return False
    axes = range(len(shape)) if order == "F" else reversed(range(len(shape)))
    step = 1
    for a in axes:
        if shape[a] == 1: continue
        if strides[a] != step: return False
        step *= shape[a]
    return True
