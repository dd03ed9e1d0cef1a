"""Reductions and scans of complex values at the tensor level. REDUCE_AXIS and SCAN work on the parts of a complex
value separately (codegen/complex.py), which is all a sum needs; products and the lexicographic max and min mix the
parts, so they are elementwise graphs: a reduction in log2(n) levels, a running product in log2(n) doubling steps.
"""
from __future__ import annotations

import math
from typing import cast

from numfn.dtype import dtypes
from numfn.ir.uop import Ops, UOp


def times_first(u: UOp, start: UOp, axes: tuple[int, ...]) -> UOp:
    """u with its first element along `axes` (index 0 on each) multiplied by the scalar `start` (every element for
    no axes: each is its own reduction, as NumPy's over axis=() or of a 0-d array)."""
    assert u.shape is not None
    times = start.reshape((1,) * len(u.shape)).expand(u.shape).alu(Ops.MUL, u)
    first = None
    for a in axes:
        here = UOp.iota(u.shape[a]).reshape(tuple(u.shape[a] if i == a else 1 for i in range(len(u.shape))))
        here = here.expand(u.shape).alu(Ops.CMPEQ, UOp.const_like(dtypes.int64, 0, u.shape))
        first = here if first is None else first.alu(Ops.AND, here)
    return times if first is None else first.alu(Ops.WHERE, times, u)


def pairwise_reduce(u: UOp, op: Ops, axes: tuple[int, ...]) -> UOp:
    """A complex product (MUL) or lexicographic MAX/MIN over `axes`, in log2(n) elementwise levels (REDUCE_AXIS adds
    the parts of complex values separately, which these ops cannot do); long levels are stored, so each is a loop
    over its elements. Reduced axes are kept with size 1.

    MAX and MIN combine neighbours, elements 2i and 2i+1 in that order, over the axes taken as one in C order like
    NumPy's loop: so they give its result exactly, the first NaN, else the first of equal extremes (combining
    halves, element i with i + n/2, would let a later NaN win). Products combine halves: no order gives NumPy's
    sequential rounding, and LLVM 22's SLP vectorizer never finishes on some products of neighbours."""
    if op is Ops.MUL: return halving_product(u, axes)
    shape = cast(tuple[int, ...], u.shape)
    kept = tuple(a for a in range(len(shape)) if a not in axes)
    rows = tuple(shape[a] for a in kept)
    u = u.permute(kept + tuple(axes)).reshape(rows + (math.prod(shape[a] for a in axes),))
    axis = len(kept)
    while (n := cast(tuple[int, ...], u.shape)[axis]) > 1:
        half = n // 2
        pairs = _along(u, axis, 0, 2 * half).reshape(rows + (half, 2))
        out = _along(pairs, axis + 1, 0, 1).reshape(rows + (half,)).alu(
            op, _along(pairs, axis + 1, 1, 2).reshape(rows + (half,)))
        if n % 2: out = _join(out, _along(u, axis, n - 1, n), axis)   # the odd one out goes to the next level
        u = UOp(Ops.CONTIGUOUS, out.dtype, (out,)) if half > 8 else out
    return u.reshape(tuple(1 if a in axes else k for a, k in enumerate(shape)))


def halving_product(u: UOp, axes: tuple[int, ...]) -> UOp:
    """The complex product over `axes` by combining halves (element i with i + n/2), axis after axis."""
    for axis in axes:
        while (shape := cast(tuple[int, ...], u.shape))[axis] > 1:
            n, half = shape[axis], shape[axis] // 2
            out = _along(u, axis, 0, half).alu(Ops.MUL, _along(u, axis, half, 2 * half))
            if n % 2: out = _join(out, _along(u, axis, n - 1, n), axis)   # the odd one out goes to the next level
            u = UOp(Ops.CONTIGUOUS, out.dtype, (out,)) if half > 8 else out
    return u


def _along(u: UOp, axis: int, lo: int, hi: int) -> UOp:
    assert u.shape is not None
    return u.shrink(tuple((lo, hi) if a == axis else (0, n) for a, n in enumerate(u.shape)))


def _join(a: UOp, b: UOp, axis: int) -> UOp:
    """a and b concatenated along `axis` (values kept exactly: a select between the two padded)."""
    assert a.shape is not None and b.shape is not None
    na, nb, ndim = a.shape[axis], b.shape[axis], len(a.shape)
    pa = a.pad(tuple((0, nb) if i == axis else (0, 0) for i in range(ndim)))
    pb = b.pad(tuple((na, 0) if i == axis else (0, 0) for i in range(ndim)))
    assert pa.shape is not None
    pos = UOp.iota(na + nb).reshape(tuple(na + nb if i == axis else 1 for i in range(ndim))).expand(pa.shape)
    return pos.alu(Ops.CMPLT, UOp.const_like(dtypes.int64, na, pa.shape)).alu(Ops.WHERE, pa, pb)


def doubling_scan(u: UOp, op: Ops, axis: int) -> UOp:
    """The running complex product along `axis` in log2(n) steps (each combining with the value 2**k back, each
    stored): SCAN walks one real value, not the two parts a complex product mixes."""
    shape = u.shape   # every step keeps it
    assert shape is not None
    n, ndim = shape[axis], len(shape)
    pos = UOp.iota(n).reshape(tuple(n if a == axis else 1 for a in range(ndim))).expand(shape)
    k = 1
    while k < n:
        back = u.shrink(tuple((0, n - k) if a == axis else (0, s) for a, s in enumerate(shape))) \
            .pad(tuple((k, 0) if a == axis else (0, 0) for a in range(ndim)))
        later = pos.alu(Ops.CMPLE, UOp.const_like(dtypes.int64, k - 1, shape)).alu(Ops.XOR, UOp.const_like(
            dtypes.bool, True, shape))
        u = UOp(Ops.CONTIGUOUS, u.dtype, (later.alu(Ops.WHERE, back.alu(op, u), u),))
        k *= 2
    return u


def reduce(u: UOp, op: Ops, axes: tuple[int, ...], start: UOp | None = None) -> UOp:
    """u (complex) reduced over `axes` with ADD, MUL, MAX or MIN, the reduced axes kept with size 1. A product
    multiplies the first element by `start` first (NumPy's: its initial value, 1 unless given)."""
    if op is Ops.ADD: return u.reduce(op, axes)
    if op is Ops.MUL: u = times_first(u, start if start is not None else UOp.const(u.dtype, 1), axes)
    return pairwise_reduce(u, op, axes)


def scan(u: UOp, op: Ops, axis: int) -> UOp | None:
    """The running reduction of u (complex) along `axis` with op (None for MAX and MIN: their lexicographic order
    mixes the parts, which a running combination of the values themselves computes)."""
    if op is Ops.ADD: return UOp(Ops.SCAN, u.dtype, (u,), (op, axis))
    if op is Ops.SUB:   # exactly part by part
        part = u.dtype.component
        re, im = (UOp(Ops.SCAN, part, (p,), (op, axis)) for p in (u.cast(part), u.alu(Ops.IMAG)))
        return re.alu(Ops.COMPLEX, im)
    if op is Ops.MUL: return doubling_scan(u, op, axis)
    return None
