"""Lowering: a kernel (STOREs of tensor-level values into buffers) becomes a loop-level graph.

Every tensor node is evaluated at a symbolic index: a tuple of integer expressions over RANGE loop counters.
Movement ops only transform the index (a reshape re-splits a linear offset, a permute reorders, an expand drops,
a pad subtracts and masks), so views never copy data. A REDUCE_AXIS opens fresh RANGEs for its reduced axes and
becomes a REDUCE node over them. Index expressions are built with the smart constructors of numfn.ir.symbolic, so a
reshape of contiguous data leaves plain `i` behind instead of `(i//4)*4 + i%4`.

The lowering also counts how often each tensor node would be evaluated once loop-invariant code is hoisted
(a node sits in the innermost loop it depends on): the scheduler uses that count to decide what to store, and it
chooses the short loops the code generator unrolls (`choose_unrolls`), so that the counts reflect them.

Each op's lowering rule is registered in the table of primitives (numfn.ir.primitives, slot `lower`): one rule
serves every elementwise op, so a new elementwise op needs nothing here.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import cast

from numfn.dtype import dtypes
from numfn.ir.symbolic import add, idiv, imod, mul
from numfn.ir.primitives import PRIMITIVES, register
from numfn.ir.uop import ELEMENTWISE, Buffer, Ops, UOp, memo_bottom_up, memo_get, toposort

ZERO = UOp.const(dtypes.index, 0)
TRUE = UOp.const(dtypes.bool, True)


def strides_for(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc if n != 1 else 0)
        acc *= n
    return tuple(reversed(out))


def linear_index(idx: tuple[UOp, ...], shape: tuple[int, ...]) -> UOp:
    out = ZERO
    for i, st in zip(idx, strides_for(shape)):
        if st: out = add(out, mul(i, st))
    return out


def reshape_groups(new: tuple[int, ...], old: tuple[int, ...]):
    """Pairs of axis runs (of `new`, of `old`) with equal element counts, in order: each run of a reshape maps
    onto its partner alone, which keeps index expressions small."""
    groups, gi, gj, pi, pj, i, j = [], [], [], 1, 1, 0, 0
    while i < len(new) or j < len(old):
        if i < len(new) and (pi <= pj or j >= len(old)):
            pi *= new[i]; gi.append(i); i += 1  # noqa: E702
        else:
            pj *= old[j]; gj.append(j); j += 1  # noqa: E702
        if pi == pj:
            groups.append((gi, gj))
            gi, gj, pi, pj = [], [], 1, 1
    if gi or gj: groups.append((gi, gj))
    return groups


def reshape_index(idx: tuple[UOp, ...], new: tuple[int, ...], old: tuple[int, ...]) -> tuple[UOp, ...]:
    """The index into `old` of element `idx` of its reshape to `new` (row-major order is preserved)."""
    if math.prod(new) == 0: return (ZERO,) * len(old)
    out: list[UOp] = [ZERO] * len(old)
    for gnew, gold in reshape_groups(new, old):
        flat = linear_index(tuple(idx[a] for a in gnew), tuple(new[a] for a in gnew))
        for b, st in zip(gold, strides_for(tuple(old[b] for b in gold))):
            out[b] = imod(idiv(flat, st), old[b]) if old[b] != 1 else ZERO
    return tuple(out)


def land(a: UOp, b: UOp) -> UOp:
    if a is TRUE: return b
    if b is TRUE: return a
    if a.op is Ops.CONST or b.op is Ops.CONST: return a if a.op is Ops.CONST and not a.arg else b if not b.arg else a
    return a.alu(Ops.AND, b)


def cmp_const_le(c: int, i: UOp) -> UOp:
    """c <= i, folded when the bounds of i decide it."""
    if i.vmin >= c: return TRUE
    if i.vmax < c: return UOp.const(dtypes.bool, False)
    return UOp.const(i.dtype, c).alu(Ops.CMPLE, i)


def cmp_lt_const(i: UOp, c: int) -> UOp:
    if i.vmax < c: return TRUE
    if i.vmin >= c: return UOp.const(dtypes.bool, False)
    return i.alu(Ops.CMPLT, UOp.const(i.dtype, c))


def free_ranges(u: UOp) -> frozenset:
    """The RANGEs an expression depends on (an accumulator read after its loops does not depend on them).
    Kept on the nodes, computed without recursion (uop.memo_bottom_up)."""
    return memo_bottom_up(u, free_ranges, _free_ranges_of, _free_range_sources)


def _free_ranges_of(x: UOp) -> frozenset:
    if x.op is Ops.RANGE: return frozenset([x])
    parts = [memo_get(s, free_ranges) for s in _free_range_sources(x)]   # each source's is kept by now
    out = frozenset().union(*parts) if parts else frozenset()
    return out.difference(x.src[1:]) if x.op is Ops.REDUCE else out


def _free_range_sources(u: UOp) -> tuple[UOp, ...]:
    if u.op is Ops.RANGE: return ()
    if u.op is Ops.REDUCE: return u.src[:1]
    if u.op is Ops.LOAD and u.src[0].op is Ops.DEFINE_ACC and u.src[-1].op is Ops.ASSIGN:
        return u.src[:1]   # the accumulator read after its loops: outside them
    return u.src


@dataclass
class LoweredKernel:
    """A kernel as a loop-level graph: `sink` holds STORE(BUFFER, index, value) nodes over `ranges` (the output
    loops, outermost first). `evaluations` counts evaluations per tensor node after hoisting, with the loops in
    `unrolls` unrolled (choose_unrolls below: their copies share what does not depend on them)."""
    sink: UOp
    ranges: tuple[UOp, ...]
    shape: tuple[int, ...]
    evaluations: Counter = field(default_factory=Counter)
    sequential: frozenset = frozenset()   # ranges that must run in order (a scan walks them)
    realize: frozenset = frozenset()      # values a RealizeCheck decided to store while lowering
    unrolls: tuple = ()                   # (RANGE, size): the short loops the code generator unrolls


class RealizeCheck:
    """What the scheduler decides while a kernel is lowered (see schedule._RealizeCheck). `stop(u, trips, copies)`
    is told that `u` is evaluated once more, `trips` times (the iterations of the loops its index depends on), at
    the kernel's `copies`-th distinct index, and says whether it is to be stored instead; `cut(u)` whether `u` may
    be stored to cut a chain of `max_depth` elementwise operations."""
    max_depth: int

    def stop(self, u: UOp, trips: int, copies: int) -> bool: raise NotImplementedError
    def cut(self, u: UOp) -> bool: raise NotImplementedError


class Lowerer:
    def __init__(self, check: RealizeCheck | None = None):
        self.memo: dict = {}
        self.chain: dict[UOp, tuple[UOp, ...]] = {}
        self.evaluations: Counter = Counter()
        self.next_range = 0
        # with a check, lowering stops expanding values the scheduler will store: however a program repeats work
        # when everything is inlined, each value is expanded only a bounded number of times
        self.check = check
        self.copies: Counter = Counter()
        self.depth: dict = {}     # memo key -> elementwise operations on its longest chain (with a check only)
        self.realize: set = set()
        self.visits: list = []    # (node, its loops, its index) per evaluation counted (see evaluations_unrolled)

    def new_range(self, size: int, kind: str, parent: tuple[UOp, ...]) -> UOp:
        r = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, size),), (self.next_range, kind))
        self.next_range += 1
        self.chain[r] = parent + (r,)
        return r

    def scope(self, *exprs: UOp) -> tuple[UOp, ...]:
        """The loops an expression must sit in: the chain of its innermost free range."""
        deepest: tuple[UOp, ...] = ()
        for e in exprs:
            for r in free_ranges(e):
                c = self.chain[r]
                if len(c) > len(deepest): deepest = c
        return deepest

    def evaluations_unrolled(self, unrolled: frozenset) -> Counter:
        """How often each node is evaluated once the `unrolled` loops are unrolled: a node in such a loop whose
        index does not use it is computed once for all the copies."""
        out: Counter = Counter()
        for u, loops, idx in self.visits:
            used = frozenset().union(*(free_ranges(i) for i in idx))
            out[u] += math.prod(r.src[0].arg for r in loops if r not in unrolled or r in used)
        return out

    def _count(self, key: tuple) -> UOp | None:
        """Count a new evaluation (after hoisting: once per iteration of the loops its index depends on); with a
        check that says `u` is to be stored, return a stand-in load instead of expanding it again."""
        u, idx = key
        if u.op is Ops.CONST: return None
        loops = self.scope(*idx)
        trips = math.prod(r.src[0].arg for r in loops)
        self.evaluations[u] += trips
        self.visits.append((u, loops, idx))
        if self.check is None: return None
        self.copies[u] += 1
        if u in self.realize or self.check.stop(u, trips, self.copies[u]):
            self.realize.add(u)
            self.depth[key] = 0
            return UOp(Ops.LOAD, u.dtype, (_stand_in(u), linear_index(idx, u.shape)))
        return None

    def lower(self, u: UOp, idx: tuple[UOp, ...]) -> UOp:
        """`u` evaluated at `idx`. `_lower` is a generator that yields the (node, index) pairs it needs and is
        sent their lowered values; this driver runs them with an explicit stack, so a chain of a hundred
        thousand operations needs no deep recursion."""
        key = (u, idx)
        found = self.memo.get(key)
        if found is not None: return found
        found = self._count(key)
        if found is not None:
            self.memo[key] = found
            return found
        tracking = self.check is not None
        stack = [[key, self._lower(u, idx), 0]]   # (memo key, generator, deepest chain among what it needed)
        value = None
        while stack:
            frame = stack[-1]
            try:
                need = frame[1].send(value)
            except StopIteration as done:
                stack.pop()
                key, value = frame[0], done.value
                self.memo[key] = value
                if tracking:
                    assert self.check is not None
                    depth = frame[2] + (key[0].op in ELEMENTWISE)
                    if depth >= self.check.max_depth and self.check.cut(key[0]):
                        self.realize.add(key[0])   # stored: the chains above it start again from a load
                        depth = 0
                    self.depth[key] = depth
                    if stack: stack[-1][2] = max(stack[-1][2], depth)
                continue
            value = self.memo.get(need)
            if value is None:
                value = self._count(need)
                if value is not None: self.memo[need] = value
            if value is None: stack.append([need, self._lower(*need), 0])
            elif tracking: frame[2] = max(frame[2], self.depth.get(need, 0))
        assert value is not None   # the root's generator returned its lowered value
        return value

    def _lower(self, u: UOp, idx: tuple[UOp, ...]):
        """The generator `lower` runs for `u` at `idx`: the op's lowering rule from the table of primitives (the
        rules below register there), which is a generator too where it needs its sources' values."""
        rule = PRIMITIVES[u.op].lower
        if rule is None: raise NotImplementedError(f"cannot lower {u.op.name} inside a kernel")
        out = rule(self, u, idx)
        if isinstance(out, UOp): return out
        return (yield from out)


# ---------------------------------------------------------------------------------------------------------------
# lowering rules, one per op (registered in numfn.ir.primitives): rule(lowerer, node, index) returns the node's
# loop-level value, or is a generator that yields the (source, index) pairs it needs, is sent their values and
# returns the node's (SCATTER and SCAN are lowered where they are stored: lower_kernel)

def _lower_buffer(lw, u: UOp, idx: tuple[UOp, ...]) -> UOp:
    if u.arg.size == 0: return UOp.const(u.dtype, 0)
    return UOp(Ops.LOAD, u.dtype, (u, linear_index(idx, cast(tuple[int, ...], u.shape))))


def _lower_reshape(lw, u: UOp, idx: tuple[UOp, ...]):
    return (yield u.src[0], reshape_index(idx, cast(tuple[int, ...], u.shape), cast(tuple[int, ...], u.src[0].shape)))


def _lower_permute(lw, u: UOp, idx: tuple[UOp, ...]):
    inner = [ZERO] * len(idx)
    for k, a in enumerate(u.arg): inner[a] = idx[k]
    return (yield u.src[0], tuple(inner))


def _lower_expand(lw, u: UOp, idx: tuple[UOp, ...]):
    return (yield u.src[0], tuple(ZERO if s == 1 else i for i, s in zip(idx, cast(tuple[int, ...], u.src[0].shape))))


def _lower_shrink(lw, u: UOp, idx: tuple[UOp, ...]):
    return (yield u.src[0], tuple(add(i, b) for i, (b, _) in zip(idx, u.arg)))


def _lower_flip(lw, u: UOp, idx: tuple[UOp, ...]):
    return (yield u.src[0], tuple(add(mul(i, -1), n - 1) if a in u.arg else i
                                  for a, (i, n) in enumerate(zip(idx, cast(tuple[int, ...], u.shape)))))


def _lower_pad(lw, u: UOp, idx: tuple[UOp, ...]):
    # outside the source the value is 0; inside, the index is clamped into range so every load stays in bounds
    # whatever the mask says (a clamped axis the source only broadcasts disappears again)
    inner, valid = [], TRUE
    for i, (b, _), n in zip(idx, u.arg, cast(tuple[int, ...], u.src[0].shape)):
        if b: i = add(i, -b)
        here = land(cmp_const_le(0, i), cmp_lt_const(i, n))
        if here is not TRUE: i = here.alu(Ops.WHERE, i, ZERO)
        valid = land(valid, here)
        inner.append(i)
    if valid.op is Ops.CONST and not valid.arg: return UOp.const(u.dtype, 0)
    value = yield u.src[0], tuple(inner)
    return value if valid is TRUE else valid.alu(Ops.WHERE, value, UOp.const(u.dtype, 0))


def _lower_reduce_axis(lw, u: UOp, idx: tuple[UOp, ...]):
    rop, axes = u.arg
    parent = lw.scope(*idx)
    inner, ranges = list(idx), []
    for a in axes:
        n = cast(tuple[int, ...], u.src[0].shape)[a]
        if n == 1: inner[a] = ZERO
        else:
            r = lw.new_range(n, "reduce", parent)
            parent = lw.chain[r]
            inner[a] = r
            ranges.append(r)
    value = yield u.src[0], tuple(inner)
    if ranges: return UOp(Ops.REDUCE, u.dtype, (value, *ranges), rop)
    # one element: NumPy's sum still adds it to 0.0 (the sum of [-0.0] is 0.0)
    return value.alu(Ops.ADD, UOp.const(u.dtype, 0.0)) if rop is Ops.ADD and u.dtype.is_float else value


def lower_elementwise(lw, u: UOp, idx: tuple[UOp, ...]):
    """Every elementwise op: the same op on its sources' values at the same index."""
    values = []
    for s in u.src: values.append((yield s, idx))
    return UOp(u.op, u.dtype, tuple(values), u.arg)


def _lower_gather(lw, u: UOp, idx: tuple[UOp, ...]):
    at = []
    for i in u.src[1:]: at.append((yield i, idx))
    return (yield u.src[0], tuple(at))


def _lower_contiguous(lw, u: UOp, idx: tuple[UOp, ...]):
    return (yield u.src[0], idx)


def _register_lowering_rules() -> None:
    rules = {
        Ops.CONST: lambda lw, u, idx: u,
        Ops.IOTA: lambda lw, u, idx: idx[0],
        Ops.EMPTY: lambda lw, u, idx: UOp.const(u.dtype, 0),   # read before anything was written: zeros, deterministic
        Ops.BUFFER: _lower_buffer, Ops.RESHAPE: _lower_reshape, Ops.PERMUTE: _lower_permute, Ops.EXPAND: _lower_expand,
        Ops.SHRINK: _lower_shrink, Ops.FLIP: _lower_flip, Ops.PAD: _lower_pad, Ops.REDUCE_AXIS: _lower_reduce_axis,
        Ops.GATHER: _lower_gather, Ops.CONTIGUOUS: _lower_contiguous,
        **{op: lower_elementwise for op in ELEMENTWISE}}
    for op, rule in rules.items(): register(op, "lower", rule)


_register_lowering_rules()


def kernel_domain(value: UOp) -> tuple[int, ...]:
    """The loops of a kernel storing `value`: its shape, or for a SCATTER the shape of the values it writes."""
    return cast(tuple[int, ...], value.src[1].shape if value.op is Ops.SCATTER else value.shape)


def view_offset(base_shape: tuple[int, ...], chain: tuple) -> tuple[int, ...] | None:
    """The strides (in elements of the base's row-major layout) of a view of a base of `base_shape` made by the
    movement ops `chain` ((op, arg) pairs), or None when no strides describe it (a reshape NumPy would copy, a
    gather)."""
    from numfn.ir.symbolic import affine
    if any(op is Ops.GATHER for op, _ in chain): return None
    # movement NumPy has (and strided slices, see _numpy_strides): its own strides, without lowering the chain
    # (tracing asks this of every reshaped view)
    if all(op in _NUMPY_MOVEMENT or op is Ops.PAD for op, _ in chain):
        strides = _numpy_strides(base_shape, chain)
        if strides is not None or all(op is not Ops.PAD for op, _ in chain): return strides
    base = UOp(Ops.BUFFER, dtypes.int8, (), Buffer("intermediate", -1, tuple(base_shape)))
    v = base
    for op, arg in chain: v = UOp(op, v.dtype, (v,), arg)
    assert v.shape is not None
    lw = Lowerer()
    ranges = tuple(lw.new_range(n, "loop", ()) if n > 1 else ZERO for n in v.shape)
    loaded = lw.lower(v, ranges)
    loads = [u for u in loaded.toposort() if u.op is Ops.LOAD]
    if len(loads) != 1: return None
    terms, _ = affine(loads[0].src[1])
    coef = dict(terms)
    if any(a.op is not Ops.RANGE for a in coef): return _numpy_strides(base_shape, chain)
    return tuple(coef.get(r, 0) if r is not ZERO else 0 for r in ranges)


_NUMPY_MOVEMENT = (Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.SHRINK, Ops.FLIP)


def _numpy_strides(base_shape: tuple[int, ...], chain: tuple) -> tuple[int, ...] | None:
    """The view's strides as NumPy computes them, where the index expressions did not simplify to affine ones
    (a reshape of three or more axes leaves nested divisions): the movement ops applied to a strided array of
    one-byte elements over one byte of memory (nothing the size of the base is allocated). None where NumPy would
    copy (or the chain has a pad, which no strides describe)."""
    import numpy as np
    steps, acc = [], 1
    for n in reversed(base_shape):
        steps.append(acc)
        acc *= n
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), tuple(base_shape), tuple(reversed(steps)))
    chain = tuple(chain)
    at = 0
    while at < len(chain):
        op, arg = chain[at]
        at += 1
        if op is Ops.PAD:   # only as a strided slice makes it (numfn.trace.subscript._strided_slice): a[::step]
            a = _strided_slice(a, arg, chain[at:at + 2])
            if a is None: return None
            at += 2
        elif op is Ops.RESHAPE:
            try:
                a = a.reshape(arg, copy=False)
            except ValueError:
                return None
        elif op is Ops.PERMUTE: a = a.transpose(arg)
        elif op is Ops.EXPAND: a = np.broadcast_to(a, arg)
        elif op is Ops.SHRINK: a = a[tuple(slice(b, e) for b, e in arg)]
        elif op is Ops.FLIP: a = a[tuple(slice(None, None, -1) if i in arg else slice(None) for i in range(a.ndim))]
        else: return None
    return tuple(s if n > 1 else 0 for s, n in zip(a.strides, a.shape))


def _strided_slice(a, padding: tuple, then: tuple):
    """`a` padded by `padding`, then reshaped and shrunk by the two ops `then`, where the three are the steps of a
    strided slice (numfn.trace.subscript._strided_slice): one axis padded at its end to count * step elements,
    split into (count, step), and the step axis shrunk to its first element. That is a[::step] along the axis with
    an axis of 1 after it; None for any other use of a pad (no strides describe a padded view)."""
    padded = [k for k, p in enumerate(padding) if p != (0, 0)]
    if len(padded) != 1 or len(then) != 2: return None
    k = padded[0]
    lo, hi = padding[k]
    (reshape, split), (shrink, bounds) = then
    n = a.shape[k] + hi
    if lo != 0 or reshape is not Ops.RESHAPE or shrink is not Ops.SHRINK or len(split) != a.ndim + 1: return None
    count, step = split[k], split[k + 1]
    if count * step != n or hi >= step or split[:k] != a.shape[:k] or split[k + 2:] != a.shape[k + 1:]: return None
    if tuple(bounds) != tuple((0, 1) if i == k + 1 else (0, m) for i, m in enumerate(split)): return None
    out = a[tuple(slice(None, None, step) if i == k else slice(None) for i in range(a.ndim))]
    return out.reshape(out.shape[:k + 1] + (1,) + out.shape[k + 1:])


def _stand_in(u: UOp) -> UOp:
    """The memory a value the scheduler decided to store would have: a load of it stands in for its expansion."""
    return UOp(Ops.BUFFER, u.dtype, (), Buffer("intermediate", -1, cast(tuple[int, ...], u.shape)))


def lower_kernel(ast: UOp, check: RealizeCheck | None = None) -> LoweredKernel:
    """Lower a kernel AST: SINK(STORE(BUFFER, value), ...) where every value has the same shape. With a `check`,
    the values it decides to store are in `realize` of the result (and the kernel is only good for counting)."""
    stores = ast.src
    shape = kernel_domain(stores[0].src[1])
    lw = Lowerer(check)
    idx: list[UOp] = []
    ranges: list[UOp] = []
    for n in shape:
        if n == 1: idx.append(ZERO)
        else:
            r = lw.new_range(n, "loop", tuple(ranges))
            ranges.append(r)
            idx.append(r)
    sequential = set()
    out = []
    for st in stores:
        buf, value = st.src[:2]
        index = linear_index(tuple(idx), shape)
        if value.op is Ops.SCATTER:
            # the kernel runs over the written values; the old version is in the buffer already
            combine, injective, gated = value.arg
            srcs = value.src[2:-1] if gated else value.src[2:]
            index = linear_index(tuple(lw.lower(i, tuple(idx)) for i in srcs), buf.arg.shape)
            gate = (lw.lower(value.src[-1], tuple(idx)),) if gated else ()
            value = lw.lower(value.src[1], tuple(idx))
            if combine is not None:   # (the kernel's loops as further sources: the read, the combine and the store
                # stay inside every one of them, even where the index and value come to depend on none, as every
                # update into a one-element target does once its clamped index simplifies: np.add.at(c, [0, 0, 0], 1))
                value = UOp(Ops.LOAD, buf.dtype, (buf, index, *ranges), "accumulate").alu(combine, value)
            if not injective: sequential.update(ranges)   # in order: the last write wins, updates accumulate
            out.append(UOp(Ops.STORE, dtypes.void, (buf, index, value, *gate)))
            continue
        if value.op is Ops.SCAN:
            rop, axis = value.arg
            i = idx[axis]
            sequential.add(i)
            prev_idx = tuple(add(j, -1) if a == axis else j for a, j in enumerate(idx))
            prev = UOp(Ops.LOAD, buf.dtype, (buf, i.alu(Ops.CMPLT, UOp.const(dtypes.index, 1))
                                             .alu(Ops.WHERE, ZERO, linear_index(prev_idx, shape))))
            first = i.alu(Ops.CMPLT, UOp.const(dtypes.index, 1))
            # any binary op: the first element is x itself (no identity needed, and -0.0 stays -0.0)
            x = lw.lower(value.src[0], tuple(idx))
            value = first.alu(Ops.WHERE, x, prev.alu(rop, x))
        else:
            value = lw.lower(value, tuple(idx))
        gate = (lw.lower(st.src[2], tuple(idx)),) if len(st.src) > 2 else ()   # stored only where it holds
        out.append(UOp(Ops.STORE, dtypes.void, (buf, index, value, *gate)))
    lk = LoweredKernel(UOp(Ops.SINK, dtypes.void, tuple(out)), tuple(ranges), shape, lw.evaluations,
                       frozenset(sequential), frozenset(lw.realize))
    lk.unrolls = tuple(choose_unrolls(lk))
    if lk.unrolls: lk.evaluations = lw.evaluations_unrolled(frozenset(r for r, _ in lk.unrolls))
    return lk


# ---------------------------------------------------------------------------------------------------------------
# full unrolls of short loops (see codegen/opt.py's docstring), chosen here so the evaluation counts reflect them

UNROLL_MAX = 16             # loops up to this size are unrolled where their counter selects between values
UNROLL_MAX_NODES = 1 << 14  # ... as long as the unrolled kernel stays this small: its nodes that do not depend on
                            # the loop once, those that do once per copy
UNROLL_MAX_COPIES = 64      # ... and the loops unrolled make at most this many copies together: a 3x3 convolution's
                            # padded (2, 14, 14, 4) input unrolled both 14s, 196 copies of its borders' selects,
                            # 1,100 lines of LLVM IR and 0.3 s of LLVM for 6 us of work


def choose_unrolls(lk: LoweredKernel) -> list[tuple[UOp, int]]:
    """The short output loops whose counter is compared with constants (see codegen/opt.py's docstring), to be upcast by
    their whole size; loops a scan walks in order are left alone. Called by lower_kernel (LoweredKernel.unrolls);
    codegen/opt.py's upcast unrolls them (see its docstring)."""
    nodes = toposort([lk.sink])
    compared = {u.src[i] for u in nodes if u.op in (Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE)
                for i in (0, 1) if u.src[i].op is Ops.RANGE and u.src[1 - i].op is Ops.CONST}
    out, shared, copied = [], len(nodes), 0   # nodes the copies share, and nodes repeated in each copy
    copies = 1
    for r in lk.ranges:
        n = r.src[0].arg
        if r not in compared or not 1 < n <= UNROLL_MAX or r in lk.sequential: continue
        depends = sum(1 for u in nodes if r in free_ranges(u))
        if shared + (copied + depends) * n > UNROLL_MAX_NODES or copies * n > UNROLL_MAX_COPIES: continue
        copies *= n
        out.append((r, n))
        shared, copied = shared - depends, (copied + depends) * n
    return out
