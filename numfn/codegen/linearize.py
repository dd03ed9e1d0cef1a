"""From a loop-level graph to a linear program: accumulators for reductions, then one instruction list with
explicit loop blocks.

Placement rule: every node sits in the innermost loop among the RANGEs it depends on, so loop-invariant work is
hoisted as far out as it can go. Loops form a tree: the output loops nest in order, and the loops of a reduction
open inside the scope of the reduction's result. Within one scope, nodes and child loops are emitted in
dependency order.
"""
from __future__ import annotations

import heapq

from numfn.codegen.lower import free_ranges
from numfn.dtype import DType, dtypes
from numfn.ir.uop import Ops, UOp, cast_scalar, fold, rebuild, substitute, toposort


def reduce_identity(op: Ops, dt: DType):
    if op is Ops.ADD: return 0
    if op is Ops.MUL: return 1
    if op is Ops.MAX: return dt.min
    if op is Ops.MIN: return dt.max
    raise ValueError(f"no identity for reduction {op}")


def separate_reduce_loops(sink: UOp) -> UOp:
    """The sink with every reduction loop shared only by reductions nested in the same loops. Copies of a
    reduction (an unrolled output loop) share their loops, but a copy whose value stopped depending on an outer
    loop (a padded row folded to a constant) would open the shared loop outside that loop: its accumulator would
    start once instead of once per outer iteration. Such a reduction gets loops of its own. Renaming an outer
    reduction's loops makes new copies of the reductions inside it, so this repeats until nothing conflicts."""
    ids = iter(range(max((u.arg[0] for u in toposort([sink]) if u.op is Ops.RANGE), default=-1) + 1, 1 << 30))
    while True:
        claimed: dict[UOp, frozenset] = {}
        renamed = False

        def separate(u: UOp, src: tuple[UOp, ...]) -> UOp | None:
            nonlocal renamed
            if u.op is not Ops.REDUCE: return None
            value, ranges = src[0], src[1:]
            outer = free_ranges(value).difference(ranges)
            if all(claimed.setdefault(r, outer) == outer for r in ranges): return None
            renamed = True
            fresh = {r: UOp(Ops.RANGE, r.dtype, r.src, (next(ids),) + tuple(r.arg[1:])) for r in ranges}
            return UOp(Ops.REDUCE, u.dtype, (substitute(value, fresh), *fresh.values()), u.arg)

        sink = rebuild(sink, separate)
        if not renamed: return sink


def share_sibling_loops(sink: UOp) -> UOp:
    """The sink with reductions that run over loops of the same constant bounds, inside the same loops, and that do
    not read one another, made to share one set of loops: one pass over the data instead of one per reduction (a
    program's checks before a loop, which index was first out of bounds and which value could not be converted,
    each walked the same array). The reductions over one set of loops (a reduction's copies, when a loop was
    upcast) move together. Loops of run-time length are left alone: their ends are computed, by reductions too."""
    units: dict[tuple[UOp, ...], list[UOp]] = {}   # the reductions over each set of loops, in order
    for red in toposort([sink]):
        if red.op is Ops.REDUCE and all(r.src[0].op is Ops.CONST and len(r.src) == 1 for r in red.src[1:]):
            units.setdefault(red.src[1:], []).append(red)
    if len(units) < 2: return sink
    # the reductions inside each node's value and loop bounds (its own excluded)
    below = fold([sink], lambda u, inside: frozenset().union(
        *(b | {s} if s.op is Ops.REDUCE else b for s, b in zip(u.src, inside))))
    # per kind of loops, its groups: (the loops they share, their reductions, what those read)
    groups: dict[tuple, list[tuple[tuple[UOp, ...], set, set]]] = {}
    moved: dict[UOp, UOp] = {}
    for ranges, members in units.items():
        key = (tuple((r.src, r.arg[1:]) for r in ranges), frozenset().union(*map(free_ranges, members)))
        reads = set().union(*(below[m] for m in members))
        for loops, reductions, their_reads in groups.setdefault(key, []):
            if not (reads & reductions or their_reads & set(members)):
                moved.update(zip(ranges, loops))
                reductions.update(members)
                their_reads.update(reads)
                break
        else: groups[key].append((ranges, set(members), reads))
    return substitute(sink, moved) if moved else sink


def expand_reduces(sink: UOp) -> UOp:
    """REDUCE(value, *ranges) -> an accumulator: DEFINE_ACC before the loops, acc = op(acc, value) in the
    innermost loop (ASSIGN), and a read of the accumulator after the loops (LOAD(acc, ASSIGN))."""
    sink = separate_reduce_loops(share_sibling_loops(sink))
    count = 0

    def expand(u: UOp, src: tuple[UOp, ...]) -> UOp | None:
        nonlocal count
        if u.op is not Ops.REDUCE: return None
        value, ranges = src[0], src[1:]
        outer = tuple(sorted(free_ranges(value).difference(ranges), key=lambda r: r.arg[0]))
        acc = UOp(Ops.DEFINE_ACC, u.dtype, outer, (cast_scalar(reduce_identity(u.arg, u.dtype), u.dtype), count))
        count += 1
        current = UOp(Ops.LOAD, u.dtype, (acc, *ranges))
        # the ranges are sources of the ASSIGN, so it stays in its loops even if its value stops depending on
        # them (x * 0 folds to 0, and the product of an empty axis must still be 1)
        update = UOp(Ops.ASSIGN, dtypes.void, (acc, current.alu(u.arg, value), *ranges))
        return UOp(Ops.LOAD, u.dtype, (acc, update))

    return rebuild(sink, expand)


def loop_chains(nodes: list[UOp]) -> dict[UOp, tuple[UOp, ...]]:
    """For every RANGE, the loops enclosing it (outermost first) and itself."""
    chain: dict[UOp, tuple[UOp, ...]] = {}
    prev: tuple[UOp, ...] = ()
    for r in sorted((u for u in nodes if u.op is Ops.RANGE and u.arg[1] != "reduce"), key=lambda r: r.arg[0]):
        prev += (r,)
        chain[r] = prev
    # ASSIGN(acc, value, *ranges) names the loops of each accumulator, innermost last
    accs = {u.src[0]: u.src[2:] for u in nodes if u.op is Ops.ASSIGN}
    pending = list(accs)
    while pending:
        for acc in pending:
            outer = [r for r in acc.src if r.op is Ops.RANGE]   # (a last source may be its initial value)
            if all(r in chain for r in outer):
                base = max((chain[r] for r in outer), key=len, default=())
                for r in accs[acc]:
                    base += (r,)
                    chain[r] = base
                pending.remove(acc)
                break
        else:
            raise RuntimeError("accumulators with cyclic loop nesting")
    return chain


def linearize(sink: UOp) -> list[UOp]:
    """The instructions of a kernel in execution order; RANGE opens a loop and END(range) closes it."""
    nodes = toposort([sink])
    pos = {u: i for i, u in enumerate(nodes)}
    chain = loop_chains(nodes)

    def scope_of(u: UOp) -> tuple[UOp, ...]:
        if u.op is Ops.RANGE: return chain[u][:-1]
        deepest: tuple[UOp, ...] = ()
        for r in free_ranges(u):
            if len(chain[r]) > len(deepest): deepest = chain[r]
        return deepest

    scope = {u: scope_of(u) for u in nodes if u.op not in (Ops.CONST, Ops.SINK, Ops.BUFFER)}
    by_scope: dict[tuple, list[UOp]] = {}
    for u, s in scope.items():
        by_scope.setdefault(s, []).append(u)

    def subtree(s: tuple) -> list[UOp]:
        return [u for sc, us in by_scope.items() if sc[:len(s)] == s for u in us]

    def emit(s: tuple) -> list[UOp]:
        depth = len(s)
        here = [u for u in by_scope.get(s, []) if u.op is not Ops.RANGE]
        blocks = [u for u in by_scope.get(s, []) if u.op is Ops.RANGE]
        members = {r: subtree(chain[r]) for r in blocks}

        def item_of(u: UOp):
            sc = scope.get(u)
            if sc is None or len(sc) < depth or sc[:depth] != s: return None   # outer scope or a constant
            return u if len(sc) == depth and u.op is not Ops.RANGE else (chain[u][depth] if sc == s else sc[depth])

        deps: dict[UOp, set] = {}
        for item in here + blocks:
            # a loop depends on what its body uses and on its own end (a run-time end is computed before it)
            inner = members[item] + [item] if item in members else [item]
            found = set()
            for m in inner:
                for src in m.src:
                    it = item_of(src)
                    if it is not None and it is not item: found.add(it)
            deps[item] = found
        users: dict[UOp, list] = {item: [] for item in deps}
        for item, ds in deps.items():
            for d in ds: users[d].append(item)
        prio = {item: min(pos[m] for m in members[item]) if item in members else pos[item] for item in deps}
        ready = [(prio[i], pos[i], i) for i, ds in deps.items() if not ds]
        heapq.heapify(ready)
        waiting = {i: len(ds) for i, ds in deps.items()}
        out: list[UOp] = []
        while ready:
            _, _, item = heapq.heappop(ready)
            if item in members: out += [item, *emit(chain[item]), UOp(Ops.END, dtypes.void, (item,))]
            else: out.append(item)
            for user in users[item]:
                waiting[user] -= 1
                if waiting[user] == 0: heapq.heappush(ready, (prio[user], pos[user], user))
        if any(waiting.values()): raise RuntimeError("cyclic dependencies between the instructions of a kernel")
        return out

    return emit(())
