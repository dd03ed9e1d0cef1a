"""Forward mode through loops and branches (LOOP nodes: Python for/while/if on traced values, fori_loop,
while_loop, scan, cond, switch): the same region with the tangents carried beside the values.

A while region gets one more state value per float state value (its tangent: zero where the initial tangent is)
and one more captured value per captured value with a tangent; its body is the body's forward-mode graph
(jvp_nodes over the region's placeholders). A cond region gets the tangents of its captures as more captures,
and every branch returns its results' tangents after them. The new LOOP's results start with the old ones, so
the rule returns it as the new primal node (NewPrimal): the loop runs once, values and tangents together.

Reverse mode (jvp_loop with `linearizing`): a branch keeps its primal region, and its tangents come from a second
branch region computing only them, linear in the captured tangents; `transpose_loop` transposes that into a
branch region of transposed branches. Loops (while regions) are linearized and transposed by
numfn/autodiff/reverse_loops.py (a recording loop storing the carries, a loop running backwards over them).
"""
from __future__ import annotations

import itertools
from typing import cast

from numfn.autodiff.custom import custom_call_of, is_vjp_marker, jvp_custom, transpose_custom
from numfn.autodiff.jvp import BITS, NewPrimal, jvp_nodes
from numfn.autodiff.reverse_loops import is_tangent_loop, linearize_while, transpose_tangent_loop
from numfn.autodiff.transpose import transpose_graph
from numfn.autodiff.rules import JVP_RULES, TRANSPOSE_RULES, NotDifferentiable, Tangent
from numfn.dtype import DType, dtypes
from numfn.ir.primitives import register
from numfn.ir.uop import Ops, UOp, substitute
from numfn.ir.walk import toposort
from numfn.trace.control import Region, placeholder


def _sink(values: list[UOp]) -> UOp:
    return UOp(Ops.SINK, dtypes.void, tuple(values))


def _zeros(shape: tuple[int, ...], dtype: DType) -> UOp:
    return UOp.const_like(dtype, 0, shape)


def _or_zeros(t: object, shape: tuple[int, ...], dtype: DType) -> UOp:
    """A tangent, or zeros of the value's shape and dtype for a zero one (never for tcaps: those are not zero)."""
    return _zeros(shape, dtype) if t is None else cast(UOp, t)


def jvp_loop(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...],
             linearizing: bool = False) -> NewPrimal:
    """The rule (see the module docstring). `linearizing` (reverse mode): a branch's tangents come from a second
    branch region of their own, linear in the tangents, which transpose_loop can transpose; a loop is linearized
    by reverse_loops.linearize_while."""
    region: Region = node.arg
    custom = custom_call_of(region)
    if custom is not None: return jvp_custom(node, primals, tangents, custom, linearizing)
    if linearizing and region.kind != "cond": return linearize_while(node, primals, tangents)
    tag, n = region.tag, len(region.state)
    first = 1 if region.kind == "cond" else 0          # a cond's first source is the branch index
    inputs, tins = list(primals[first:]), list(tangents[first:])
    if any(t is BITS for t in tins):
        raise NotDifferentiable("numfn cannot differentiate a float made from another float's bits inside a loop")
    subs = ([region.cond] if region.cond is not None else []) + list(region.bodies)
    old = {c.arg[1]: c for sub in subs for c in toposort([sub]) if c.op is Ops.CARRY and c.arg[0] == tag}
    # the new placeholders: state, tangents of the state, captures, tangents of the captures
    tstate = [k for k, (_, d) in enumerate(region.state) if d.is_inexact]
    tcaps = [k for k in range(n, len(inputs)) if tins[k] is not None]
    nt = len(tstate)
    at: dict[int, int] = {k: k for k in range(n)}
    at.update({k: k + nt for k in range(n, len(inputs))})
    tangent_at = {k: n + j for j, k in enumerate(tstate)}
    tangent_at.update({k: len(inputs) + nt + j for j, k in enumerate(tcaps)})

    leaves: dict[UOp, tuple[UOp, Tangent]] = {}
    for k, c in old.items():
        shape, dt = c.arg[2], c.dtype
        bounds = c.arg[3] if len(c.arg) > 3 else None
        t = placeholder(tag, tangent_at[k], shape, dt) if k in tangent_at else None
        leaves[c] = (placeholder(tag, at[k], shape, dt, bounds), t)
    names = tuple(region.names)
    if region.kind == "while":
        assert region.cond is not None
        cond = jvp_nodes([region.cond], leaves)
        new_cond = _sink([cond[v][0] for v in region.cond.src])
        done = jvp_nodes([region.bodies[0]], leaves)
        body = region.bodies[0].src
        values = [done[v][0] for v in body]
        tvalues = [_or_zeros(done[body[k]][1], *region.state[k]) for k in tstate]
        state = tuple(region.state) + tuple(region.state[k] for k in tstate)
        names = names + tuple(f"the derivative of {names[k] if k < len(names) else 'a state value'}" for k in tstate)
        new_region = Region("while", tag, state, new_cond, (_sink(values + tvalues),), state, names)
        init_t = [_or_zeros(tins[k], *region.state[k]) for k in tstate]
        srcs = tuple(inputs[:n]) + tuple(init_t) + tuple(inputs[n:]) + tuple(_or_zeros(tins[k], (), node.dtype)
                                                                              for k in tcaps)
        loop = UOp(Ops.LOOP, node.dtype, srcs, new_region)
        return NewPrimal(loop, [UOp(Ops.RESULT, region.state[k][1], (loop,), n + tstate.index(k))
                                if k in tstate else None for k in range(n)])
    # cond: every branch computes the results and then their tangents
    floats = [r for r, (_, d) in enumerate(region.results) if d.is_inexact]
    bodies = []
    if linearizing:   # the values from the branch as it was; the tangents from a branch region of their own
        tbodies = []
        for b in region.bodies:
            done = jvp_nodes([b], leaves, linearizing=True)
            tbodies.append(_sink([_or_zeros(done[b.src[r]][1], *region.results[r]) for r in floats]))
        tresults = tuple(region.results[r] for r in floats)
        srcs = (primals[0],) + tuple(inputs) + tuple(_or_zeros(tins[k], (), node.dtype) for k in tcaps)
        tloop = UOp(Ops.LOOP, node.dtype, srcs, Region("cond", tag, (), None, tuple(tbodies), tresults))
        return NewPrimal(node, [UOp(Ops.RESULT, region.results[r][1], (tloop,), floats.index(r)) if r in floats
                                else None for r in range(len(region.results))])
    for b in region.bodies:
        done = jvp_nodes([b], leaves)
        values = [done[v][0] for v in b.src]
        tvalues = [_or_zeros(done[b.src[r]][1], *region.results[r]) for r in floats]
        bodies.append(_sink(values + tvalues))
    results = tuple(region.results) + tuple(region.results[r] for r in floats)
    new_region = Region("cond", tag, (), None, tuple(bodies), results, names)
    srcs = (primals[0],) + tuple(inputs) + tuple(_or_zeros(tins[k], (), node.dtype) for k in tcaps)
    loop = UOp(Ops.LOOP, node.dtype, srcs, new_region)
    m = len(region.results)
    return NewPrimal(loop, [UOp(Ops.RESULT, region.results[r][1], (loop,), m + floats.index(r)) if r in floats
                            else None for r in range(m)])


_tags = itertools.count(1 << 40)   # transposed regions' tags: apart from every traced region's


def transpose_loop(loop: UOp, cts: dict[int, UOp], linear: tuple[bool, ...]) -> tuple[UOp | None, ...]:
    """The cotangents of a branch region's sources from its results' (`cts`, by result): a branch region whose
    branches are the transposed branches, capturing the sources the branches are not linear in (primal values)
    and the results' cotangents, and returning the cotangents of the sources they are linear in."""
    if is_tangent_loop(loop): return transpose_tangent_loop(loop, cts, linear)
    if is_vjp_marker(loop): return transpose_custom(loop, cts, linear)
    region: Region = loop.arg
    assert region.kind == "cond", "reverse mode transposes branch regions and tangent loops only"
    tag, new_tag = region.tag, next(_tags)
    inputs, flags = loop.src[1:], linear[1:]
    kept = [k for k, lin in enumerate(flags) if not lin]        # captured again, as they are
    wanted = [k for k, lin in enumerate(flags) if lin]          # their cotangents are the results
    specs = []
    for k in wanted:
        shape = inputs[k].shape
        assert shape is not None
        specs.append((shape, inputs[k].dtype))
    ct_values = [cts.get(r, _zeros(*region.results[r])) for r in range(len(region.results))]
    ct_holders = [placeholder(new_tag, len(kept) + r, *region.results[r]) for r in range(len(region.results))]
    bodies = []
    for b in region.bodies:
        carries = {c.arg[1]: c for c in toposort([b]) if c.op is Ops.CARRY and c.arg[0] == tag}
        outs = [v for v in b.src]
        holders = [carries.get(k, placeholder(tag, k, *specs[j])) for j, k in enumerate(wanted)]
        found = transpose_graph(list(outs), ct_holders, holders)
        renumber = {c: placeholder(new_tag, kept.index(k), c.arg[2], c.dtype, c.arg[3] if len(c.arg) > 3 else None)
                    for k, c in carries.items() if k in kept}
        back = [_or_zeros(g, *specs[j]) for j, g in enumerate(found)]
        bodies.append(substitute(_sink(back), renumber))
    new = Region("cond", new_tag, (), None, tuple(bodies), tuple(specs))
    tloop = UOp(Ops.LOOP, loop.dtype, (loop.src[0],) + tuple(inputs[k] for k in kept) + tuple(ct_values), new)
    out: list[UOp | None] = [None] * len(loop.src)
    for j, k in enumerate(wanted): out[1 + k] = UOp(Ops.RESULT, specs[j][1], (tloop,), j)
    return tuple(out)


# (the rules live here, above jvp.py whose transformation they apply to the region's sub-graphs)
JVP_RULES[Ops.LOOP] = jvp_loop
TRANSPOSE_RULES[Ops.LOOP] = transpose_loop
register(Ops.LOOP, "jvp", jvp_loop)
register(Ops.LOOP, "transpose", transpose_loop)
