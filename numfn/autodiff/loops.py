"""Forward mode through loops and branches (LOOP nodes: Python for/while/if on traced values, fori_loop,
while_loop, scan, cond, switch): the same region with the tangents carried beside the values.

A while region gets one more state value per float state value (its tangent: zero where the initial tangent is)
and one more captured value per captured value with a tangent; its body is the body's forward-mode graph
(jvp_nodes over the region's placeholders). A cond region gets the tangents of its captures as more captures,
and every branch returns its results' tangents after them. The new LOOP's results start with the old ones, so
the rule returns it as the new primal node (NewPrimal): the loop runs once, values and tangents together.

Reverse mode through a loop is not done yet: transposing the tangent graph stops at the loop's RESULT with an
error (numfn/autodiff/transpose.py).
"""
from __future__ import annotations

from typing import cast

from numfn.autodiff.jvp import BITS, NewPrimal, jvp_nodes
from numfn.autodiff.rules import JVP_RULES, NotDifferentiable, Tangent
from numfn.dtype import DType, dtypes
from numfn.ir.primitives import register
from numfn.ir.uop import Ops, UOp
from numfn.ir.walk import toposort
from numfn.trace.control import Region, placeholder


def _sink(values: list[UOp]) -> UOp:
    return UOp(Ops.SINK, dtypes.void, tuple(values))


def _zeros(shape: tuple[int, ...], dtype: DType) -> UOp:
    return UOp.const_like(dtype, 0, shape)


def _or_zeros(t: object, shape: tuple[int, ...], dtype: DType) -> UOp:
    """A tangent, or zeros of the value's shape and dtype for a zero one (never for tcaps: those are not zero)."""
    return _zeros(shape, dtype) if t is None else cast(UOp, t)


def jvp_loop(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> NewPrimal:
    region: Region = node.arg
    tag, n = region.tag, len(region.state)
    first = 1 if region.kind == "cond" else 0          # a cond's first source is the branch index
    inputs, tins = list(primals[first:]), list(tangents[first:])
    if any(t is BITS for t in tins):
        raise NotDifferentiable("numfn cannot differentiate a float made from another float's bits inside a loop")
    subs = ([region.cond] if region.cond is not None else []) + list(region.bodies)
    old = {c.arg[1]: c for sub in subs for c in toposort([sub]) if c.op is Ops.CARRY and c.arg[0] == tag}
    # the new placeholders: state, tangents of the state, captures, tangents of the captures
    tstate = [k for k, (_, d) in enumerate(region.state) if d.is_float]
    tcaps = [k for k in range(n, len(inputs)) if tins[k] is not None]
    nt = len(tstate)
    at: dict[int, int] = {k: k for k in range(n)}
    at.update({k: k + nt for k in range(n, len(inputs))})
    tangent_at = {k: n + j for j, k in enumerate(tstate)}
    tangent_at.update({k: len(inputs) + nt + j for j, k in enumerate(tcaps)})

    def spec(k: int) -> tuple[tuple[int, ...], object]:
        u = inputs[k]
        assert u.shape is not None
        return u.shape, u.dtype

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
    floats = [r for r, (_, d) in enumerate(region.results) if d.is_float]
    bodies = []
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


# (the rule lives here, above jvp.py whose transformation it applies to the region's sub-graphs)
JVP_RULES[Ops.LOOP] = jvp_loop
register(Ops.LOOP, "jvp", jvp_loop)
