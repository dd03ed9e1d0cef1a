"""Narrowing: a loop over a window of run-time length runs over the window only.

A window (`a[k + 1:, k + 1:]` with a loop variable k) has a static bound on its size (the array's) and a length known
at run time. Kernels computing on it loop over the bound and gate what they store with `i < length`, so that any
window fits one compiled loop. Run as such, a factorization touching n - k rows at step k would do n rows of
masked work every step. This pass gives such a loop its run-time end instead:

    for i in 0..N:  if (i < L && ...) store(...)      ->      for i in 0..min(N, L):  store(...)

when every store of the kernel is gated by `i < L` (L computed before the loop). Inside the narrowed loop the gate
terms it came from are true. A window's index clamps `min(start + i, N - 1)` (which keep loads of positions past
the window's end in bounds) are dropped too, with the loop's end lowered so that they could not have clamped:
the addresses become affine again, so the loop vectorizes. The end is the RANGE's second source (the first stays
the static bound every other pass reads); renderers loop to it, and the codegen's own unrolling and blocking leave
such loops alone (LLVM vectorizes loops of run-time length by itself).
"""
from __future__ import annotations

from numfn.codegen.linearize import reduce_identity
from numfn.codegen.lower import TRUE, LoweredKernel, free_ranges
from numfn.dtype import dtypes
from numfn.ir.symbolic import affine, symbolic
from numfn.ir.uop import Ops, UOp, graph_rewrite, operands, substitute, toposort


def is_narrowed(r: UOp) -> bool:
    """Whether a RANGE runs to a run-time end (its second source) below its static bound."""
    return r.op is Ops.RANGE and len(r.src) > 1


def narrow(lk: LoweredKernel) -> LoweredKernel:
    replace: dict[UOp, UOp] = {}
    _narrow_stores(lk, replace)
    _narrow_reductions(lk, replace)
    if not replace: return lk
    # a replacement from the graph (a dropped clamp's operand) keeps the replacements made inside it
    sink = graph_rewrite(substitute(lk.sink, replace, rebuild_replacements=True), symbolic)
    # a gate left always true goes (a plain store)
    sink = sink.replace(src=tuple(st.replace(src=st.src[:3]) if st.op is Ops.STORE and len(st.src) > 3 and
                                  st.src[3] is TRUE else st for st in sink.src))
    # the kernel's loops as the rewritten sink holds them (simplifying a run-time end rebuilds its RANGE)
    in_sink = {u.arg: u for u in toposort([sink]) if u.op is Ops.RANGE}
    ranges = tuple(in_sink.get(r.arg, replace.get(r, r)) for r in lk.ranges)
    sequential = frozenset(in_sink.get(r.arg, replace.get(r, r)) for r in lk.sequential)
    return LoweredKernel(sink, ranges, lk.shape, lk.evaluations, sequential)


def _narrow_stores(lk: LoweredKernel, replace: dict) -> None:
    """Output loops: every store gated by a bound on the loop."""
    stores = [u for u in lk.sink.src if u.op is Ops.STORE]
    if not stores or any(len(st.src) < 4 for st in stores): return
    for r in lk.ranges:
        if r in lk.sequential: continue
        # bounds from every store's gate: the loop runs to the largest (each store keeps the terms of its own)
        per_store = [_gate_bounds(st.src[3], r) for st in stores]
        if not all(per_store): continue
        ends = [_min_all([b for _, b in bs]) for bs in per_store]
        end = ends[0] if len(ends) == 1 else _max_all(ends)
        if len(stores) == 1:
            for term, _ in per_store[0]: replace[term] = TRUE
        _run_to(r, end, lk.sink, replace)


def _narrow_reductions(lk: LoweredKernel, replace: dict) -> None:
    """Reduction loops: a reduction of `where(i < L, x, identity)` over i needs the first L values only (a count of
    `i < L & ...`, a window's length for its mean, too). A max or min of `where(i < L & ..., x, c)` with another
    constant c (the first failing position of a bounds check, `min(where(bad, i, N))`) does too: its result is
    then combined with c once when the loop was cut short (max and min are idempotent: once is as good as N - L
    times). A reduction's loops are its own, so a loop cut short here dropped only elements this mask rejects."""
    cut_short: list[tuple[UOp, UOp]] = []   # (reduction, the constant its cut elements gave)
    for red in toposort([lk.sink]):
        if red.op is not Ops.REDUCE: continue
        if red.src[0].op is Ops.WHERE: mask, _, other = red.src[0].src
        elif red.src[0].op is Ops.CAST and red.src[0].src[0].dtype is dtypes.bool:   # a count: where(mask, 1, 0)
            mask, other = red.src[0].src[0], UOp.const(red.dtype, 0)
        else: continue
        if other.op is not Ops.CONST: continue
        identity = other.arg == reduce_identity(red.arg, red.dtype)
        if not identity and red.arg not in (Ops.MAX, Ops.MIN): continue
        narrowed = False
        for r in red.src[1:]:
            if r in replace: continue
            bounds = _gate_bounds(mask, r)
            if not bounds: continue
            for term, _ in bounds: replace[term] = TRUE
            _run_to(r, _min_all([b for _, b in bounds]), lk.sink, replace)
            narrowed = True
        if narrowed and not identity: cut_short.append((red, other))
    for red, other in cut_short:
        new = substitute(red, replace, rebuild_replacements=True)
        ranges = [replace[r] for r in red.src[1:] if r in replace]
        cut = _any([n.src[1].alu(Ops.CMPLT, n.src[0]) for n in ranges])
        extra = cut.where(other, UOp.const(red.dtype, reduce_identity(red.arg, red.dtype)))
        replace[red] = new.alu(red.arg, extra)


def _run_to(r: UOp, end: UOp, sink: UOp, replace: dict) -> None:
    """Make loop r run to `end` (at most its static bound), dropping the index clamps that could then not clamp."""
    for m, bound in _clamps(sink, r):
        end = end.alu(Ops.MIN, bound)
        replace[m] = m.src[0]
    n = r.src[0]
    end = UOp.const(dtypes.index, 0).alu(Ops.MAX, end.alu(Ops.MIN, n))
    replace[r] = UOp(Ops.RANGE, r.dtype, (n, end), r.arg)


def _gate_bounds(gate: UOp, r: UOp) -> list[tuple[UOp, UOp]]:
    """The terms `r + k < e` of a gate's conjunction (k, e computed before the loops), with the bound `e - k` each
    puts on r."""
    out = []
    # the terms last first, the order the bounds have always been combined in (min(min(c, b), a))
    for g in reversed(operands(gate, lambda g: g.op is Ops.AND and g.dtype is dtypes.bool)):
        if g.op is not Ops.CMPLT or free_ranges(g.src[1]): continue
        offset = _offset_from(g.src[0], r)
        if offset is not None: out.append((g, _sub(g.src[1], offset)))
    return out


def _clamps(sink: UOp, r: UOp) -> list[tuple[UOp, UOp]]:
    """Index clamps `min(r + k, M)` (k, M loop-invariant) in the kernel, with the bound `M - k + 1` on r under which
    they never clamp."""
    out = []
    for u in toposort([sink]):
        if u.op is not Ops.MIN or not u.dtype.is_int or free_ranges(u.src[1]): continue
        offset = _offset_from(u.src[0], r)
        if offset is not None: out.append((u, _sub(u.src[1], offset).alu(Ops.ADD, UOp.const(u.dtype, 1))))
    return out


def _offset_from(x: UOp, r: UOp) -> UOp | None:
    """k when x is r + k with k free of loops, else None."""
    if x.dtype is not dtypes.index and x.dtype is not dtypes.int64: return None
    terms, const = affine(x)
    rest = [(a, m) for a, m in terms if a is not r]
    if len(rest) == len(terms) or dict(terms)[r] != 1: return None
    if any(free_ranges(a) for a, _ in rest): return None
    out = UOp.const(x.dtype, const)
    for a, m in rest: out = out.alu(Ops.ADD, a if m == 1 else a.alu(Ops.MUL, UOp.const(x.dtype, m)))
    return out


def _sub(a: UOp, b: UOp) -> UOp:
    return a if b.op is Ops.CONST and b.arg == 0 else a.alu(Ops.SUB, b)


def _min_all(xs: list[UOp]) -> UOp:
    out = xs[0]
    for x in xs[1:]: out = out.alu(Ops.MIN, x)
    return out


def _any(xs: list[UOp]) -> UOp:
    out = xs[0]
    for x in xs[1:]: out = out.alu(Ops.OR, x)
    return out


def _max_all(xs: list[UOp]) -> UOp:
    out = xs[0]
    for x in xs[1:]: out = out.alu(Ops.MAX, x)
    return out
