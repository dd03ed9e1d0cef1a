"""The fusion rule: which values are stored in buffers ("realized") rather than computed inside their consumers.

Outputs, scans and explicit `.contiguous()` are always realized (numfn/schedule/scheduler.py makes them roots); any
other value only where computing it inside its consumers would repeat work. Lowering a kernel counts how many times
each value is evaluated once loop-invariant code is hoisted (see codegen/lower.py). A value is realized when
  - it is a reduction evaluated more times than it has elements (it would run again for every repeat:
    `(A @ B) @ C`, or a reduction broadcast along a loop outside its own), or
  - it is elementwise and the repeated evaluations cost more than storing it: (evaluations - size) * cost >
    RECOMPUTE_LIMIT * size, with cost counting the ALU ops per element (transcendental ones as
    TRANSCENDENTAL_COST, GCD as GCD_COST, loads and reductions as 1: a reduction is hoisted, not repeated per
    element), or
  - it is inlined at more than MAX_COPIES distinct indices of one kernel (code size).
So `sum(a * a)` is one kernel, softmax over rows is one kernel (each row's max and sum are inner loops hoisted
out of the column loop), and a matmul followed by bias and relu is one kernel.

Interface: `should_realize(value, evaluations, realized, memo[, copies])` is the rule; `RealizeRule` applies it while
a kernel is lowered (codegen.lower.RealizeCheck: a value is stored as soon as it crosses its threshold and never
expanded again), its `realized` set growing with each decision; `realizable` says which values may be stored at all
(never buffers, constants, views, empty values or `index_arithmetic`: small integer arithmetic on positions that
kernels must see as expressions). `chain_depth` measures the elementwise chain a value adds to a kernel (kernels are
bounded by MAX_KERNEL_DEPTH and MAX_KERNEL_OPS, see numfn/schedule/kernels.py). `split_reductions` rewrites a graph
before scheduling: a large reduction into few results becomes a realized reduction of partial results.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import cast

from numfn.codegen.lower import RealizeCheck
from numfn.dtype import dtypes
from numfn.ir.uop import ELEMENTWISE, MOVEMENT, TRANSCENDENTAL, Ops, UOp, bottom_up, substitute, toposort

RECOMPUTE_LIMIT = 16
TRANSCENDENTAL_COST = 8
GCD_COST = 64   # a loop of up to 2 * bits steps (binary GCD): about 100 operations for random 64-bit operands


def element_cost(u: UOp, realized, memo: dict) -> int:
    """Estimated ALU work to compute one element of `u` inside a consumer (realized values cost a load)."""
    def leaf(x: UOp) -> bool:
        return x.op in (Ops.CONST, Ops.IOTA, Ops.BUFFER, Ops.REDUCE_AXIS) or x in realized

    def sources(x: UOp) -> tuple[UOp, ...]:
        return () if leaf(x) else x.src[:1] if x.op in MOVEMENT else x.src

    def operand(s: UOp) -> int:
        # an operand of one element (a window's start, a loop's scalars) is computed once per kernel, hoisted out
        # of its loops, and read per element: it costs a load, however long its own arithmetic
        return min(memo[s], 1) if s.size == 1 else memo[s]

    def cost(x: UOp) -> int:
        if x.op in (Ops.CONST, Ops.IOTA): return 0
        # a reduction costs a load here: were it evaluated again at another index, the reduction rule realizes it
        if leaf(x): return 1
        if x.op in MOVEMENT: return operand(x.src[0])
        return (TRANSCENDENTAL_COST if x.op in TRANSCENDENTAL else GCD_COST if x.op is Ops.GCD else 1) + \
            sum(operand(s) for s in x.src)
    return bottom_up(u, memo, cost, sources)


def index_arithmetic(u: UOp, realized, memo: dict, budget: int = 32) -> bool:
    """Whether `u` is a little integer or boolean arithmetic on positions (IOTA), constants and scalars (a window's
    indices and its mask `i < length`): recomputed wherever it is used, never stored, so that kernels see the
    expressions themselves (codegen narrows loops to the window from them) rather than loads of stored arrays.
    "Little": at most `budget` operations deep. `memo` keeps each node's depth (the operations an answer needs
    below it, infinite where it is no such arithmetic: the same for every budget), so a question is answered by
    one walk over what no earlier question walked: a key of node and remaining budget made the 20 rounds of integer
    arithmetic of a random-number kernel walk each shared node once per budget it was reached with (0.3 s of one
    kernel's scheduling)."""
    never = math.inf

    def leaf(x: UOp) -> bool:
        return x.op in (Ops.CONST, Ops.IOTA, Ops.BUFFER) or x in realized

    def arithmetic(x: UOp) -> bool:
        return (x.dtype.is_int or x.dtype is dtypes.bool) and x.op is not Ops.GCD and \
            (x.op in MOVEMENT or x.op in ELEMENTWISE)

    def sources(x: UOp) -> tuple[UOp, ...]:
        return x.src if not leaf(x) and arithmetic(x) else ()

    def depth(x: UOp) -> float:
        if x.op in (Ops.CONST, Ops.IOTA): return 0
        if leaf(x): return 0 if x.size == 1 else never
        if not arithmetic(x): return never
        return 1 + max(memo[s] for s in x.src)
    if u not in memo and not sources(u):   # (most values asked about are not integer arithmetic: no walk)
        memo[u] = depth(u)
    return bottom_up(u, memo, depth, sources) <= budget


def realizable(u: UOp, realized, index_memo: dict | None = None) -> bool:
    return not (u.op in (Ops.BUFFER, Ops.CONST, Ops.IOTA, Ops.EMPTY) or u.op in MOVEMENT or u in realized
                or u.size == 0 or index_arithmetic(u, realized, {} if index_memo is None else index_memo))


def should_realize(u: UOp, evaluations: int, realized, cost_memo, copies: int = 1) -> bool:
    if not realizable(u, realized, cost_memo.setdefault(("index",), {})): return False   # (its own memo)
    # a value inlined at more than MAX_COPIES distinct places of one kernel multiplies the program's size,
    # whatever the evaluation counts say (values hoisted out of loops are evaluated few times each)
    if copies > MAX_COPIES and u.op is not Ops.REDUCE_AXIS: return True
    extra = evaluations - u.size
    if extra <= 0: return False
    if u.op is Ops.REDUCE_AXIS: return True
    return extra * element_cost(u, realized, cost_memo) > RECOMPUTE_LIMIT * u.size


# A value inlined at more distinct indices of one kernel than this is stored (bounds code size)
MAX_COPIES = 32
# Kernels compute chains of at most MAX_KERNEL_DEPTH elementwise operations per element, and at most MAX_KERNEL_OPS
# operations in all: LLVM's time grows faster than a loop body's length (a chain of 800 operations compiles at
# 0.8 ms an operation, 2000 at 3 ms; 400 independent ones in one loop at 1.1 ms, 3200 at 2.3 ms), so a longer chain
# is cut by storing a value in the middle, and realized values are not grouped into one kernel beyond either bound
MAX_KERNEL_DEPTH = 256
MAX_KERNEL_OPS = 1024


class RealizeRule(RealizeCheck):
    """The realization rule applied while kernels are lowered (codegen.lower.RealizeCheck): a value is stored as
    soon as its evaluations so far make `should_realize` true, and from then on is not expanded again, so the
    analysis of a program that inlines everything costs time bounded by its size times a constant, however many
    times that program would repeat work (stencils of stencils: 5**steps)."""
    max_depth = MAX_KERNEL_DEPTH

    def __init__(self, realized: set, origin: dict):
        self.realized, self.origin = set(realized), origin
        self.evaluations: Counter = Counter()
        self.cost_memo: dict = {}

    def stop(self, u: UOp, trips: int, copies: int) -> bool:
        u = self.origin.get(u, u)
        self.evaluations[u] += trips
        # only a value evaluated at several indices can multiply work; one evaluated once per iteration of loops
        # larger than itself (a pad's border, a broadcast) is decided after the round, with the costs it leaves
        if copies < 2: return False
        return self._decided(u, should_realize(u, self.evaluations[u], self.realized, self.cost_memo, copies))

    def cut(self, u: UOp) -> bool:
        u = self.origin.get(u, u)
        return self._decided(u, realizable(u, self.realized))

    def _decided(self, u: UOp, realize: bool) -> bool:
        if realize:   # values above it now cost a load of it, not its recomputation
            self.realized.add(u)
            self.cost_memo.clear()
        return realize


def chain_depth(u: UOp, realized: set, memo: dict) -> int:
    """Elementwise operations on the longest chain of `u`'s kernel value (values in `realized` are loads)."""
    def sources(x: UOp) -> tuple[UOp, ...]:
        return () if x in realized else x.src

    def depth(x: UOp) -> int:
        if x in realized: return 0
        return max((memo[s] for s in x.src), default=0) + (x.op in ELEMENTWISE)
    return max((bottom_up(s, memo, depth, sources) for s in u.src), default=0) + (u.op in ELEMENTWISE)


# A reduction of at least SPLIT_MIN_ELEMENTS elements into at most SPLIT_MAX_OUTPUTS results is split in two: partial
# results over SPLIT_PARTS chunks first (a kernel with a parallel outer loop), then a small reduction of those.
SPLIT_MIN_ELEMENTS = 1 << 15
SPLIT_MAX_OUTPUTS = 16
SPLIT_PARTS = 256


def _windowed(src: UOp) -> bool:
    """Whether a reduction's operand is gated by a window of run-time length: somewhere in it, positions compared
    with a scalar known when the program runs (`where(i < L, x, c)`, a count of `i < L`). codegen/narrow.py runs
    such a reduction to L, which a split into partial reductions over the static bound would undo (a row of a
    sparse matrix would cost the whole matrix, a window's mean the whole array). A comparison of data with a
    scalar (`x < t`) is no window."""
    return any(u.op is Ops.CMPLT and _scalar(u.src[1]) and _positions(u.src[0]) for u in toposort([src]))


def _positions(u: UOp) -> bool:
    """Arithmetic on positions (IOTA) and scalars, reading no array."""
    nodes = toposort([u])
    return any(x.op is Ops.IOTA for x in nodes) and not any(x.op in (Ops.BUFFER, Ops.PARAM) for x in nodes)


def _scalar(u: UOp) -> bool:
    """A value of one element broadcast (not a constant): a run-time length."""
    while u.op in MOVEMENT: u = u.src[0]
    return u.size == 1 and u.op is not Ops.CONST


def split_reductions(graph: UOp) -> UOp:
    """Large reductions into few results, rewritten as a reduction of realized partial reductions."""
    mapping = {}
    for u in toposort([graph]):
        if u.op is not Ops.REDUCE_AXIS or u.size > SPLIT_MAX_OUTPUTS: continue
        src, (op, axes) = u.src[0], u.arg
        assert src.shape is not None
        n = math.prod(src.shape[a] for a in axes)
        parts = max((p for p in range(2, SPLIT_PARTS + 1) if n % p == 0), default=1)
        if n < SPLIT_MIN_ELEMENTS or parts < 8 or _windowed(src): continue
        keep = tuple(a for a in range(len(src.shape)) if a not in axes)
        kept = tuple(src.shape[a] for a in keep)
        chunks = src.permute(keep + axes).reshape(kept + (parts, n // parts))
        partial = UOp(Ops.CONTIGUOUS, u.dtype, (chunks.reduce(op, (len(kept) + 1,)),))
        mapping[u] = partial.reduce(op, (len(kept),)).reshape(cast(tuple[int, ...], u.shape))
    return substitute(graph, mapping) if mapping else graph

