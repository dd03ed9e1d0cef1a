"""Values of a graph with one more leading axis, by the batching rules of the table of primitives
(numfn.ir.primitives: `Primitive.batch`, registered by numfn.transforms for vmap).

`batched(roots, given, size)` re-evaluates `roots` with some of their sources replaced: `given` maps a node to
(its replacement, whether that has a leading batch axis of `size`). A node no batched value reaches is kept (with
its sources replaced); one that a batched value reaches is rebuilt by its op's rule, with a batch axis. Two users:
vmap (numfn.transforms: a region's sub-graphs, with batched placeholders) and the tracer's loops
(numfn.trace.hoisted_checks: a loop body's checks evaluated for every value of its index at once)."""
from __future__ import annotations

from collections.abc import Sequence

from numfn.ir.primitives import PRIMITIVES
from numfn.ir.uop import UOp, fold


class NoBatchingRule(NotImplementedError):
    """A node a batched value reaches whose op has no batching rule (vmap names it; other callers give up)."""


def batched(roots: Sequence[UOp], given: dict[UOp, tuple[UOp, bool]], size: int) -> list[tuple[UOp, bool]]:
    """(value, batched) for each of `roots` with the nodes of `given` replaced (see the module's docstring)."""
    def visit(u: UOp, srcs: tuple) -> tuple[UOp, bool]:
        if u in given: return given[u]
        if not any(b for _, b in srcs):
            src = tuple(s for s, _ in srcs)
            return (u if src == u.src else UOp(u.op, u.dtype, src, u.arg)), False
        rule = PRIMITIVES[u.op].batch
        if rule is None: raise NoBatchingRule(f"vmap has no batching rule for {u.op.name}")
        return rule(u, list(srcs), size), True

    done = fold(list(roots), visit)
    return [done[r] for r in roots]
