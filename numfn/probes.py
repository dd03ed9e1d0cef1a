"""Calls answered from a function's trace alone, without compiling: those all of whose outputs are empty, and
one-element probe calls whose every output the compiler's own constant folding computes exactly.

Dask probes a function to learn its output type: `da.map_blocks(f, x)` calls it on 0x0 arrays (`meta`) and, without
`dtype=`, on 1x1 arrays of ones (the dtype). Neither should cost a compilation of its own.

`empty_result(nf)`: a call whose outputs have no elements has nothing to compute, so its result is made from the
trace's output shapes and dtypes. None where the call must run: an output with elements, run-time checks (their
errors must be raised), outputs of run-time length, writes into arguments, or a function sized by values.

`folded_result(nf, leaves)`: a call whose array arguments hold one element each. Each parameter of the trace is
replaced by the constant it holds, and the graph is simplified by the rules the compiler itself applies before it
schedules (numfn.ir.symbolic: constant folding with NumPy's semantics); when every output becomes a constant, that
is the result. This is the narrowest mechanism that is exact: it evaluates nothing the compiler would not, and
it answers only for graphs of operations whose compiled code rounds exactly as NumPy's does (IEEE arithmetic,
sqrt, comparisons, casts, integer and bit operations, selections, views). A graph with a transcendental function
(exp, tanh, pow, ...; compiled as a polynomial or a libm call that may differ from NumPy's in the last bit), a
complex or 16-bit float value, a reduction, a captured array, a gather, an extern call, run-time checks, or
`fastmath` is not answered: the call compiles as before. A general NumPy interpreter of the graph would answer more
(reductions) but would be a second implementation of every operation to keep bit-equal with the code generators.
The caller answers only the first call of a signature this way (a probe is one call): a function called again
with that signature compiles, so a hot loop on one-element arrays runs compiled code.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from numfn import debug
from numfn.ir.primitives import MOVEMENT, Ops
from numfn.ir.symbolic import const_value, symbolic
from numfn.ir.uop import UOp, graph_rewrite, substitute
from numfn.pytree import unflatten

__all__ = ["empty_result", "folded_result", "EXACT_OPS"]


def empty_result(nf: Any) -> Any:
    """The result of NumericalFunction `nf` when every output it returns is empty, else None (see above)."""
    if nf.size_request is not None or nf.checks or nf.cut_outputs or nf.mutated_inputs: return None
    visible = nf.out_specs[:nf.out_tree.num_leaves]
    if any(int(np.prod(shape)) != 0 for shape, _ in visible): return None
    debug.log(1, f"{nf.name}: every output is empty; returned without compiling")
    return unflatten(nf.out_tree, [np.empty(tuple(int(n) for n in shape), dt.np) for shape, dt in visible])


# the operations whose compiled code gives exactly what NumPy's (and so the constant folder's) does, bit for bit:
# correctly rounded IEEE operations, exact ones, and the structure around them
EXACT_OPS = frozenset({
    Ops.PARAM, Ops.CONST, Ops.SINK, Ops.CONTIGUOUS, *MOVEMENT,
    Ops.NEG, Ops.ABS, Ops.SQRT, Ops.FLOOR, Ops.CEIL, Ops.TRUNC, Ops.RINT, Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV,
    Ops.FLOORDIV, Ops.MOD, Ops.FMOD, Ops.IDIV, Ops.IMOD, Ops.MAX, Ops.MIN, Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ,
    Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR, Ops.NOT, Ops.SHL, Ops.SHR, Ops.WHERE, Ops.CAST, Ops.BITCAST})


def _argument_constant(param: UOp, value: Any) -> UOp:
    scalar = np.asarray(value).reshape(()).item()
    return UOp.const_like(param.dtype, scalar, param.shape) if param.shape else UOp.const(param.dtype, scalar)


def folded_result(nf: Any, leaves: list) -> Any:
    """The result of NumericalFunction `nf` on `leaves` (its flattened arguments, every array one with at most one
    element) when constant folding computes every output exactly, else None (see above)."""
    if nf.size_request is not None or nf.checks or nf.cut_outputs or nf.mutated_inputs or nf.fastmath: return None
    if nf.int_limits: return None   # a Python int the function narrows: the call checks its range (OverflowError)
    sink = nf.function_graph
    nodes = sink.toposort()
    for u in nodes:
        if u.op not in EXACT_OPS: return None
        dt = u.dtype
        if dt.is_complex or (dt.is_float and dt.itemsize < 4): return None
    bound = {u: _argument_constant(u, leaves[u.arg[0]]) for u in nodes if u.op is Ops.PARAM}
    folded = graph_rewrite(substitute(sink, bound), symbolic, name="probe: constant folding")
    visible = nf.out_specs[:nf.out_tree.num_leaves]
    outputs = []
    for out, (shape, dt) in zip(folded.src, visible):
        while out.op is Ops.CONTIGUOUS: out = out.src[0]
        value = const_value(out)
        # (a NaN made by folding has Python's sign bit, the compiled code's the CPU's: not bit-equal, so compiled)
        if value is None or (isinstance(value, float) and value != value): return None
        outputs.append(np.full(tuple(int(n) for n in shape), value, dt.np))
    debug.log(1, f"{nf.name}: a one-element call computed by constant folding; returned without compiling")
    return unflatten(nf.out_tree, outputs)
