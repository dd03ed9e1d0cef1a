"""Forward mode as a graph transformation: a traced function graph, evaluated on new inputs, with the tangent of
every value carried beside it.

  jvp_graph(sink, inputs, tangents) -> (primal outputs, tangent outputs)

`sink` is a function graph (SINK of CONTIGUOUS outputs over PARAM placeholders, NumericalFunction.function_graph);
`inputs` maps each PARAM slot to the value it stands for (the caller's traced value), `tangents` maps a slot to its
tangent (absent or None: zero). Every node is rebuilt over its sources' new values, and its tangent is its
primitive's jvp rule (numfn/autodiff/rules.py) applied to them; a node none of whose sources has a tangent, or
whose value is not a float, has none (symbolic zero: nothing is computed for it). The tangent outputs are None
where zero.
"""
from __future__ import annotations

from numfn.autodiff.rules import NO_TANGENT, NotDifferentiable, Tangent, jvp_rule
from numfn.ir.primitives import COMPARISON
from numfn.ir.uop import Ops, UOp
from numfn.ir.walk import fold, toposort

# the "tangent" of integers made from a float's bits (BITCAST): a float rebuilt from them (np.copysign, nextafter,
# ldexp) would silently get a zero derivative, so that is an error; a comparison of them (signbit) has none
BITS = object()


def carries_tangent(u: UOp) -> bool:
    """Whether a value can have a nonzero tangent: floats only (integers and bools have none, as in JAX)."""
    return u.dtype.is_inexact or u.op in (Ops.EXTERN, Ops.LOOP)


class NewPrimal:
    """What a rule returns when the primal node itself changes (a loop carrying its tangents as more state): the
    new node, whose results come first, and the tangent of each result."""

    def __init__(self, node: UOp, tangents: list[Tangent]):
        self.node, self.tangents = node, tangents


def jvp_nodes(roots: list[UOp], leaves: dict[UOp, tuple[UOp, Tangent]],
              linearizing: bool = False) -> dict[UOp, tuple[UOp, object]]:
    """{node: (its new value, its tangent)} for every node below `roots`; `leaves` gives them for the inputs (PARAMs,
    or a region's placeholders). A tangent is a UOp, None (zero), or a list of them for a node with several results
    (EXTERN, LOOP). `linearizing`: the tangents are placeholders reverse mode transposes (not through loops yet)."""
    def visit(u: UOp, srcs: tuple) -> tuple[UOp, object] | None:
        if u in leaves: return leaves[u]
        if u.op is Ops.SINK: return None
        primals = tuple(p for p, _ in srcs)
        node = u if primals == u.src else UOp(u.op, u.dtype, primals, u.arg)
        ts = tuple(t for _, t in srcs)
        if all(t is None for t in ts): return node, None
        if u.op is Ops.BITCAST or any(t is BITS for t in ts):
            if u.op in COMPARISON: return node, None
            if u.dtype.is_inexact:
                raise NotDifferentiable("numfn cannot differentiate a float made from another float's bits "
                                        "(np.copysign, nextafter, ldexp, frexp reinterpret them as integers)")
            return node, BITS
        if u.op in NO_TANGENT or not carries_tangent(u): return node, None
        rule = jvp_rule(u.op)
        found = rule(node, primals, ts, linearizing=True) if linearizing and u.op is Ops.LOOP else \
            rule(node, primals, ts)
        if isinstance(found, NewPrimal): return found.node, found.tangents
        return node, found

    return fold(roots, visit)


def jvp_graph(sink: UOp, inputs: dict[int, UOp], tangents: dict[int, UOp | None],
              linearizing: bool = False) -> tuple[list[UOp], list[Tangent]]:
    leaves = {u: (inputs[u.arg[0]], tangents.get(u.arg[0])) for u in toposort([sink]) if u.op is Ops.PARAM}
    done = jvp_nodes([sink], leaves, linearizing)
    outs = [done[o] for o in sink.src]
    return [p for p, _ in outs], [None if t is BITS else t for _, t in outs]   # type: ignore[misc]
