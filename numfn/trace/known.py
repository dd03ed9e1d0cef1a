"""Values known while tracing: a graph without inputs (constants, iotas, captured arrays and elementwise or
movement ops on them) computed with NumPy, so `x[idx]` with an index built from constants is a static index and
`Tensor.known` can answer Python's questions about it. Anything else is unknown (None)."""
from __future__ import annotations

import math

import numpy as np

from numfn.ir.symbolic import UFUNCS   # NumPy ufuncs per op: what constant folding uses too
from numfn.ir.uop import Ops, UOp, fold

KNOWN_LIMIT = 1 << 20   # elements: larger values known while tracing are not computed then (they would cost memory)


class _Unknown(Exception):
    """A node known_value cannot compute (so the whole value is unknown)."""


def known_value(u: UOp) -> np.ndarray | None:
    """The value of a tensor graph without inputs, computed with NumPy (see Tensor.known), or None."""

    def value(v: UOp, src: tuple) -> np.ndarray:
        if v.shape is None or math.prod(v.shape) > KNOWN_LIMIT: raise _Unknown
        op = v.op
        if op is Ops.CONST: out = np.array(v.arg, v.dtype.np)
        elif op is Ops.IOTA: out = np.arange(v.arg, dtype=np.int64)
        elif op is Ops.BUFFER and v.arg.data is not None: out = v.arg.data
        elif op is Ops.RESHAPE: out = src[0].reshape(v.arg)
        elif op is Ops.EXPAND: out = np.broadcast_to(src[0], v.arg)
        elif op is Ops.PERMUTE: out = src[0].transpose(v.arg)
        elif op is Ops.PAD: out = np.pad(src[0], v.arg)
        elif op is Ops.SHRINK: out = src[0][tuple(slice(b, e) for b, e in v.arg)]
        elif op is Ops.FLIP: out = np.flip(src[0], v.arg)
        elif op is Ops.CAST:
            x = src[0].real if v.src[0].dtype.is_complex and not (v.dtype.is_complex or v.dtype.is_bool) else src[0]
            with np.errstate(all="ignore"): out = x.astype(v.dtype.np)
        elif op is Ops.WHERE: out = np.where(src[0], src[1], src[2])
        elif op in UFUNCS:   # tensor-level ops mean what NumPy's ufuncs do
            try:
                with np.errstate(all="ignore"): out = np.asarray(UFUNCS[op](*src)).astype(v.dtype.np, copy=False)
            except (ValueError, TypeError):   # integers to negative powers, ...: left to the program
                raise _Unknown from None
        else: raise _Unknown
        return out

    try:
        return fold([u], value)[u]
    except _Unknown:   # the first node that cannot be computed ends the walk
        return None
