"""What a select's condition says about the index it selects, for the kernel's index simplification.

A padded view's index is `where(0 <= i - b & i - b < n, i - b, 0)`: the branch taken lies in [0, n - 1], but value
bounds see only `i - b`'s range, so a division or remainder of it by a stage size (rfft's half-split pass reads
its halves through such views of a (8, 16)-shaped plane) stays in the code, and the loop does not vectorize.
Before a kernel's indices are simplified, the taken branch is clamped to what the condition allows
(`min(max(x, lo), hi)`, whose bounds the simplifier knows); afterwards the clamps the condition makes redundant
are taken out again, so a kernel where they helped nothing is unchanged. Only the codegen does this: the
scheduler's analysis sees the graph's own bounds.
"""
from __future__ import annotations

from numfn.dtype import dtypes
from numfn.ir.uop import Ops, PatternMatcher, UOp, UPat, operands


def _allowed(cond: UOp, x: UOp) -> tuple[int, int]:
    """The range of `x` wherever `cond` holds: its bounds, narrowed by the comparisons of `x` with other values in
    the conjunction `cond`."""
    lo, hi = x.vmin, x.vmax
    for c in operands(cond, lambda c: c.op is Ops.AND and c.dtype is dtypes.bool):
        if c.op in (Ops.CMPLT, Ops.CMPLE) and c.src[0].dtype.is_int:
            strict = 1 if c.op is Ops.CMPLT else 0
            if c.src[0] is x: hi = min(hi, c.src[1].vmax - strict)
            elif c.src[1] is x: lo = max(lo, c.src[0].vmin + strict)
    return lo, hi


def _clamp(w: UOp) -> UOp | None:
    cond, x, other = w.src
    if not x.dtype.is_int or x.op is Ops.CONST: return None
    lo, hi = _allowed(cond, x)
    if lo > hi or (lo <= x.vmin and hi >= x.vmax): return None
    y = x
    if lo > x.vmin: y = UOp(Ops.MAX, x.dtype, (y, UOp.const(x.dtype, lo)))
    if hi < x.vmax: y = UOp(Ops.MIN, x.dtype, (y, UOp.const(x.dtype, hi)))
    return UOp(Ops.WHERE, w.dtype, (cond, y, other))


def _unclamp(w: UOp) -> UOp | None:
    cond, y, other = w.src
    x, floor, ceiling = y, None, None
    while x.op in (Ops.MIN, Ops.MAX) and x.src[1].op is Ops.CONST:
        if x.op is Ops.MIN: ceiling = x.src[1].arg if ceiling is None else min(ceiling, x.src[1].arg)
        else: floor = x.src[1].arg if floor is None else max(floor, x.src[1].arg)
        x = x.src[0]
    if x is y: return None
    lo, hi = _allowed(cond, x)
    if (ceiling is not None and hi > ceiling) or (floor is not None and lo < floor): return None
    return UOp(Ops.WHERE, w.dtype, (cond, x, other))


clamp_selects = PatternMatcher([(UPat(Ops.WHERE, name="w"), _clamp)])
unclamp_selects = PatternMatcher([(UPat(Ops.WHERE, name="w"), _unclamp)])
