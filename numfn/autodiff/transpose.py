"""Reverse mode's second half: transposing a linear tangent graph.

  transpose_graph(outputs, cotangents, inputs) -> the cotangent of each input (None: zero)

`outputs` are tangent values (jvp_graph's, over tangent placeholders `inputs`), linear in the placeholders: every
node that depends on a placeholder is a linear op of those of its sources that do (the others are primal values:
a MUL's other factor, a WHERE's condition, a GATHER's indices). Walking the nodes from the outputs back (reverse
topological order), each linear node's cotangent is handed to its linear sources by its primitive's transpose rule
(numfn/autodiff/rules.py) and summed where a value is used several times. A RESULT of a native routine and its
EXTERN are transposed as one op, result by result; a branch region's RESULTs' cotangents are gathered
and the LOOP is transposed once, for all of them (numfn/autodiff/loops.py).

`tangent_placeholder` makes the placeholders: PARAM nodes with a unique key in place of a slot number, which no
program ever sees (the transposed graph no longer contains them).
"""
from __future__ import annotations

import itertools

from numfn.autodiff.rules import add_tangents, transpose_extern, transpose_rule
from numfn.dtype import DType
from numfn.ir.uop import Ops, UOp
from numfn.ir.walk import fold, toposort

_placeholders = itertools.count()


def tangent_placeholder(shape: tuple[int, ...], dtype: DType) -> UOp:
    return UOp(Ops.PARAM, dtype, (), (("tangent", next(_placeholders)), tuple(shape)))


def transpose_graph(outputs: list[UOp | None], cotangents: list[UOp], inputs: list[UOp]) -> list[UOp | None]:
    roots = [o for o in outputs if o is not None]
    wanted = set(inputs)
    linear = fold(roots, lambda u, srcs: u in wanted or any(srcs))
    ct: dict[UOp, UOp | None] = {}
    results: dict[UOp, dict[int, UOp]] = {}   # a LOOP's results' cotangents, by result
    for o, given in zip(outputs, cotangents):
        if o is not None and linear[o]: ct[o] = add_tangents(ct.get(o), given)
    for u in reversed(toposort(roots)):
        if u.op is Ops.LOOP:   # after all its RESULTs: their cotangents are gathered
            if u not in results or not linear[u]: continue
            srcs, cts = u.src, transpose_rule(u.op)(u, results.pop(u), tuple(linear[s] for s in u.src))
            for s, sc in zip(srcs, cts):
                if sc is not None and linear[s]: ct[s] = add_tangents(ct.get(s), sc)
            continue
        c = ct.pop(u, None) if u not in wanted else None
        if c is None or not linear[u]: continue
        if u.op is Ops.RESULT and u.src[0].op is Ops.LOOP:
            results.setdefault(u.src[0], {})[u.arg] = c
            continue
        if u.op is Ops.RESULT and u.src[0].op is Ops.EXTERN:
            extern = u.src[0]   # (one result at a time: the transpose of a sum of linear maps is the sum)
            srcs, cts = extern.src, transpose_extern(extern, c, tuple(linear[s] for s in extern.src), u.arg)
        else:
            srcs, cts = u.src, transpose_rule(u.op)(u, c, tuple(linear[s] for s in u.src))
        for s, sc in zip(srcs, cts):
            if sc is not None and linear[s]: ct[s] = add_tangents(ct.get(s), sc)
    return [ct.get(i) for i in inputs]
