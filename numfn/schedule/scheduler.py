"""The scheduler's driver: a CALL (numfn/schedule/callify.py) becomes a Schedule and its memory plan.

`create_schedule(call, first, blocks)` binds the body's PARAMs to the CALL's buffers and makes the roots: the
outputs (their buffers from CALL.arg), the last versions of arguments written into (entries of the SINK past the
outputs), scans and explicit `.contiguous()`; regions.py and externs.py add what loops and extern calls need. Then
it builds kernels (kernels.py) in rounds:
  - each round plans the versions of written memory (versions.py) and builds the kernels, lowering each with the
    fusion rule (realize.py), which decides while lowering which further values to store; a round that asks to
    change the plan of writes (kernels.Replan) is applied and the round repeated;
  - the values the round decided to store, and those whose evaluation counts say so once they are stored, become
    roots of the next round (reductions first: while one repeats, everything inside it repeats too);
  - when a round adds nothing, intermediates that every consumer ended up computing inline are dropped (their
    stores removed from the kernels).
Returns (Schedule, MemoryPlan): the steps in execution order (numfn/schedule/items.py) and the arena plan of their
intermediate buffers (memory.py). Intermediates are numbered from `first`; loops' inner schedules take fresh
blocks of numbers from `blocks`.
"""
from __future__ import annotations

import itertools
from collections import Counter

from numfn.codegen.lower import lower_kernel
from numfn.dtype import dtypes
from numfn.ir.symbolic import constant_branches
from numfn.ir.uop import ELEMENTWISE, Ops, UOp, fold, graph_rewrite, preorder, substitute, toposort
from numfn.schedule.externs import prepare_externs, transpose_products
from numfn.schedule.items import ExecItem, Kernel, Schedule
from numfn.schedule.interchange import interchange_loops
from numfn.schedule.kernels import Built, Replan, build_kernels
from numfn.schedule.memory import MemoryPlan, plan_memory
from numfn.schedule.realize import RealizeRule, should_realize, split_reductions
from numfn.schedule.regions import prepare_loops
from numfn.schedule.roots import Root, alone, is_copy
from numfn.schedule.versions import Versions, readers_gate, roots_parents


def create_schedule(call: UOp, first: int = 0, blocks=None) -> tuple[Schedule, MemoryPlan]:
    """Fuse the CALL's body into kernels and order them; returns the schedule and the intermediate memory plan.

    The body's SINK holds the outputs (bound to CALL.arg's output buffers), then values with no buffer of their
    own: checks' arrays are outputs too; writes into arguments are SCATTER chains on input buffers. Intermediate
    buffers are numbered from `first`; loops' inner schedules take fresh blocks of numbers from `blocks`."""
    blocks = itertools.count(1) if blocks is None else blocks
    body, bindings = call.src[0], call.src[1:]
    # (a loop's operand may be a buffer of another shape with its elements: regions.reshaped_buffer)
    params = {u: bindings[u.arg[0]] if bindings[u.arg[0]].shape == u.shape else bindings[u.arg[0]].reshape(u.shape)
              for u in toposort([body]) if u.op is Ops.PARAM}
    graph = substitute(body, params)
    if any(u.op is Ops.LOOP and u.src[0].op is Ops.CONST and u.arg.kind == "cond" for u in toposort([graph])):
        graph = graph_rewrite(graph, constant_branches)   # a branch on a constant the enclosing loop binds
    graph = transpose_products(split_reductions(graph))
    graph, roots, writebacks = _initial_roots(graph, call)
    loops = prepare_loops(graph, roots, blocks, create_schedule, writebacks)
    externs = prepare_externs(graph, roots) + loops

    continued = {r: memory for loop in loops for r, memory in loop.continues.items()}
    versions = Versions(writebacks, continued)
    fixes = 0
    # kernels evaluate copies of graph nodes whose realized parts became loads; `origin` maps them back, so that a
    # value realized later is the graph's own node (a copy would hold the buffers of this round's numbering)
    origin: dict[UOp, UOp] = {}
    while True:
        versions.plan(roots)
        try:
            kernels = build_kernels(roots, versions, externs, origin, RealizeRule(set(roots), origin), first)
        except Replan as replan:   # a write that cannot happen in place as planned: plan again with the fix
            fixes += 1
            if fixes > 10 * len(roots) + 100:
                raise RuntimeError("the scheduler cannot order the writes of this program") from None
            replan.fix()
            continue
        new = _realized_by_round(kernels, origin, roots)
        if not new: break
        # a value only gated writes read is needed only under their gate (a window's product: narrowed)
        parents = roots_parents(roots)   # (the new values are nodes of the same graph: its parents do not change)
        for v in new: roots[v] = Root(v, gate=readers_gate(v, roots, parents))

    unused = _unused_intermediates(roots, kernels, versions)
    if unused: kernels = _without_stores(kernels, {t for v in unused for t in roots[v].targets})

    items = interchange_loops(Schedule(ExecItem(k, lk) for k, lk in kernels))
    return items, plan_memory(items)


def _initial_roots(graph: UOp, call: UOp) -> tuple[UOp, dict[UOp, Root], set[UOp]]:
    """(the graph without CONTIGUOUS markers, the roots every schedule of it has, the last versions of the arguments
    written into): a root per output (holding its output buffers), per scan and per `.contiguous()` value."""
    roots: dict[UOp, Root] = {}
    writebacks = set()
    for i, out in enumerate(graph.src):
        value = out.src[0] if out.op is Ops.CONTIGUOUS else out
        root = roots.setdefault(value, Root(value))
        if i < len(call.arg): root.outputs.append(UOp(Ops.BUFFER, value.dtype, (), call.arg[i]))
        else: writebacks.add(value)
    for u in toposort([graph]):
        if u.op is Ops.SCAN or (u.op is Ops.CONTIGUOUS and u not in graph.src):
            v = u if u.op is Ops.SCAN else u.src[0]
            if v.op not in (Ops.BUFFER, Ops.CONST): roots.setdefault(v, Root(v))
    stripped = _without_contiguous(graph)
    # values that differ only by CONTIGUOUS are one root, holding every output of them (x.contiguous() returned,
    # or a copy returned next to the value it copies)
    merged: dict[UOp, Root] = {}
    for v, r in roots.items():
        value = stripped[v]
        if value.op is Ops.BUFFER and not r.outputs: continue
        if value in merged: merged[value].outputs += r.outputs
        else:
            r.value = value
            merged[value] = r
    return stripped[graph], merged, {stripped.get(w, w) for w in writebacks}


def _without_contiguous(graph: UOp) -> dict[UOp, UOp]:
    """Every node of `graph` mapped to itself with the CONTIGUOUS markers removed, in its sources too (a realized
    value that reads another one, x.contiguous() inside y.contiguous(), must not keep the inner marker: the roots
    are the stripped values, and a marker left in place would be a second, unrealized copy of one)."""
    def strip(u: UOp, src: tuple[UOp, ...]) -> UOp:
        if u.op is Ops.CONTIGUOUS and not is_copy(u): return src[0]
        return u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
    return fold([graph], strip)


def _realized_by_round(kernels: list[Built], origin: dict[UOp, UOp], roots: dict[UOp, Root]) -> list[UOp]:
    """The values to store next round: those decided while the kernels were lowered (see realize.RealizeRule),
    then those whose evaluations say so once they are stored."""
    lowered = [lk for _, lk in kernels if lk is not None]   # (extern calls have no loops)
    new = list(dict.fromkeys(origin.get(u, u) for lk in lowered for u in lk.realize))
    evaluations: Counter = Counter()
    for lk in lowered: evaluations.update({origin.get(u, u): n for u, n in lk.evaluations.items()})
    realized = set(roots) | set(new)
    cost_memo: dict[UOp, int] = {}
    repeated = [u for u, n in evaluations.items() if should_realize(u, n, realized, cost_memo)]
    # a gather of a gather (x[k, :k][:, None]) repeats as often as what it reads: storing the outer one alone
    # (one copy) makes the inner ones evaluated once per element of it, decided again in the next round
    read_by_gathers = {v.src[0] for v in repeated if v.op is Ops.GATHER}
    new += [u for u in _outermost(repeated, realized) if u not in read_by_gathers]
    # reductions first: while one repeats, everything inside it repeats too, so elementwise counts mislead
    new = [u for u in new if u.op is Ops.REDUCE_AXIS] or new
    return [u for u in new if u not in roots]


def _outermost(values: list[UOp], realized: set[UOp]) -> list[UOp]:
    """`values` without those that another of them computes at its own index (reached through elementwise ops
    only, not through a realized value): storing the outer one ends the repetition of what it computes inside, so
    the inner ones wait for the next round's counts. (Storing every repeated value of a chain at once made a
    300-statement program's last round twice as large, half of it values every consumer then computed inline.)"""
    candidates = set(values)

    def below(u: UOp) -> tuple[UOp, ...]:
        return u.src if u.op in ELEMENTWISE and u not in realized else ()
    inside = {u for u in preorder([s for v in values if v.op in ELEMENTWISE for s in v.src], below)
              if u in candidates}
    return [v for v in values if v not in inside]


def _without_stores(kernels: list[Built], dropped: set[UOp]) -> list[Built]:
    """The kernels without their stores into the `dropped` buffers (of intermediates no step loads): a kernel that
    stores nothing else goes, one that does is lowered again without them. (The kernels are not built anew: that
    lowered every kernel once more, a fifth of a long program's scheduling; the buffers left keep their numbers.)"""
    out: list[Built] = []
    for k, lowered in kernels:
        if not isinstance(k, Kernel) or not any(st.src[0] in dropped for st in k.ast.src):
            out.append((k, lowered))
            continue
        stores = tuple(st for st in k.ast.src if st.src[0] not in dropped)
        if not stores: continue
        ast = UOp(Ops.SINK, dtypes.void, stores)
        out.append((Kernel(k.name, ast, k.shape), lower_kernel(ast, None)))
    return out


def _unused_intermediates(roots: dict[UOp, Root], kernels: list[Built], versions: Versions) -> list[UOp]:
    """Intermediates that every consumer ended up computing inline: they need no buffer (a version of memory
    written in place by later writes is needed whoever reads it)."""
    loaded = {u.arg for k, _ in kernels for u in k.inputs}
    return [v for v, r in roots.items() if r.targets[0].arg.category == "intermediate"
            and r.targets[0].arg not in loaded and v not in versions.chain_of and v.op is not Ops.RESULT
            and r.alias is None and not r.outputs and not r.keep
            and not alone(v)]   # a scan has a kernel of its own even when it is empty
