"""Tensor's reductions that are ndarray's methods (sum, prod, max, min, mean, cumsum) and the machinery numfn.numpy's
reductions share (`_reduce`, `_scan`), registered on Tensor (tensor_method) when numfn.trace is imported."""
from __future__ import annotations

import math
from typing import SupportsIndex, cast

import numpy as np

from numfn.args import as_dtype, normalize_axes, normalize_axis, refuse
from numfn.dtype import check_scalar_fits, dtypes, reduce_dtype
from numfn.ir.uop import Ops, UOp
from numfn.trace import complex_reductions
from numfn.trace.tensor import Axes, DTypeArg, Tensor, TensorLike, reduction_mask, tensor_method


@tensor_method("_reduce")
def _reduce_method(self, name: str, op: Ops, axis: Axes, keepdims: bool, dtype: DTypeArg = None,
            initial: TensorLike | None = None, where: TensorLike | None = None) -> Tensor:
    axes = normalize_axes(axis, self.ndim)
    mask = reduction_mask(where, self.shape)
    if name in ("max", "min") and initial is None:
        ufunc = "maximum" if name == "max" else "minimum"
        if mask is not None:
            raise ValueError(f"reduction operation '{ufunc}' does not have an identity, so to use a where mask "
                             "one has to specify 'initial'")
        if any(self.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {ufunc} which has no identity")
    dt = reduce_dtype(name, self.uop.dtype) if dtype is None else as_dtype(dtype)
    init = None
    if initial is not None:   # NumPy converts `initial` to the reduction's dtype (a Python int must fit it)
        if isinstance(initial, int) and not isinstance(initial, (bool, np.generic)): check_scalar_fits(initial, dt)
        init = Tensor.lift(initial).uop.cast(dt)
        if init.shape != (): raise ValueError("Input object to FillWithScalar is not a scalar")
    u = self.uop.cast(dt)
    if mask is not None:   # masked-out elements become the identity (max/min: `initial`, folded in anyway)
        fill = init if init is not None else UOp.const(dt, 0 if name == "sum" else 1)
        u = mask.alu(Ops.WHERE, u, Tensor(fill)._broadcast(self.shape))
    # NumPy sums float16 with float32 partial sums (its pairwise loop), rounding once at the end
    acc = dtypes.float32 if dt is dtypes.float16 and op is Ops.ADD else dt
    if dt.is_complex and op is Ops.MUL and all(self.shape[a] for a in axes):
        # NumPy's product starts from its initial value (1 unless given): the first element is multiplied by it
        # first, which matters for the signs of zeros and for infinities (1 * (inf + 0j) is inf + nan j)
        u = complex_reductions.times_first(u, init if init is not None else UOp.const(dt, 1), axes)
        init = None
    if dt.is_complex and op is not Ops.ADD and any(self.shape[a] == 0 for a in axes):
        # an empty product is 1; an empty max or min is `initial` (which it then needs)
        empty = UOp.const(dt, 1) if op is Ops.MUL else cast(UOp, init)
        u = Tensor(empty)._broadcast(tuple(1 if i in axes else n for i, n in enumerate(self.shape)))
    elif dt.is_complex and op is not Ops.ADD: u = complex_reductions.pairwise_reduce(u, op, axes)
    else: u = u.cast(acc).reduce(op, axes).cast(dt) if axes else u
    if not keepdims: u = u.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))
    if init is not None:   # folded in like one more element
        u = u.alu(op, Tensor(init)._broadcast(cast(tuple[int, ...], u.shape)))
    return Tensor(u)


@tensor_method("sum")
def _sum_method(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, keepdims: bool = False,
           initial: TensorLike | None = None, where: TensorLike | None = None) -> Tensor:
    refuse("sum", out=out)
    return self._reduce("sum", Ops.ADD, axis, keepdims, dtype, initial, where)


@tensor_method("prod")
def _prod_method(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, keepdims: bool = False,
            initial: TensorLike | None = None, where: TensorLike | None = None) -> Tensor:
    refuse("prod", out=out)
    return self._reduce("prod", Ops.MUL, axis, keepdims, dtype, initial, where)


@tensor_method("max")
def _max_method(self, axis: Axes = None, out: None = None, keepdims: bool = False, initial: TensorLike | None = None,
           where: TensorLike | None = None) -> Tensor:
    refuse("max", out=out)
    return self._reduce("max", Ops.MAX, axis, keepdims, None, initial, where)


@tensor_method("min")
def _min_method(self, axis: Axes = None, out: None = None, keepdims: bool = False, initial: TensorLike | None = None,
           where: TensorLike | None = None) -> Tensor:
    refuse("min", out=out)
    return self._reduce("min", Ops.MIN, axis, keepdims, None, initial, where)


@tensor_method("mean")
def _mean_method(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, keepdims: bool = False,
         where: TensorLike | None = None) -> Tensor:
    refuse("mean", out=out)
    if self.ndim == 0 and axis is not None:   # unlike sum, NumPy's mean checks the axis of a 0-d array
        for a in (axis if isinstance(axis, (tuple, list)) else (axis,)): normalize_axis(a, 0)
    axes = normalize_axes(axis, self.ndim)
    mask = reduction_mask(where, self.shape)
    acc = as_dtype(dtype) if dtype is not None else None
    x = self.astype(acc) if acc is not None else self if self.uop.dtype.is_inexact else self.astype(np.float64)
    total = x.sum(axis=axes, keepdims=keepdims, where=where)
    if mask is None: count = Tensor(UOp.const(total.uop.dtype, math.prod(self.shape[a] for a in axes)))
    else: count = Tensor(mask.cast(dtypes.int64)).sum(axis=axes, keepdims=keepdims)
    # NumPy divides into the sum's own dtype (true_divide with out=, unsafe casting)
    out_ = Tensor._elementwise("true_divide", Ops.FDIV, total, count).astype(total.uop.dtype)
    return out_ if acc is None else out_.astype(acc)


@tensor_method("cumsum")
def _cumsum_method(self, axis: SupportsIndex | None = None, dtype: DTypeArg = None, out: None = None) -> Tensor:
    refuse("cumsum", out=out)
    return self._scan("cumsum", Ops.ADD, axis, dtype)


@tensor_method("_scan")
def _scan_method(self, name: str, op: Ops, axis: SupportsIndex | None, dtype: DTypeArg) -> Tensor:
    """Cumulative sums (op ADD) or products (MUL) along `axis`, as NumPy's cumsum/cumprod compute them."""
    # NumPy flattens for axis=None, and for a 0-d array with axis 0 or -1
    flat = axis is None or (self.ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1))
    x = self.reshape(-1) if flat else self
    ax = 0 if flat else normalize_axis(cast(int, axis), x.ndim)
    dt = reduce_dtype(name, x.uop.dtype) if dtype is None else as_dtype(dtype)
    src = x.uop.cast(dt)
    if x.shape[ax] <= 1: return Tensor(src)
    if dt.is_complex and op is not Ops.ADD: return Tensor(complex_reductions.doubling_scan(src, op, ax))
    return Tensor(UOp(Ops.SCAN, dt, (src,), (op, ax)))
