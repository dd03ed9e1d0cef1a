"""Callification: a traced function graph as a CALL of its body on buffers, the scheduler's input.

`callify(function_graph, input_count, writes)` takes the function graph (a SINK of the outputs, then the checks'
arrays, then the last versions of the inputs written into) and returns CALL(body, *buffers, arg=output buffers):
  - the body, simplified (numfn.ir.symbolic), with every captured constant turned into a PARAM numbered after the
    inputs;
  - the buffers the body's PARAMs are bound to, in slot order: one "input" BUFFER per argument (a void one for an
    argument the body does not read), then one "constant" BUFFER per captured constant;
  - CALL.arg, one "output" Buffer for every entry of the SINK but the last `writes` (writes into arguments have
    their arguments' buffers).
create_schedule (numfn/schedule/scheduler.py) binds the PARAMs to those buffers and schedules the body.
"""
from __future__ import annotations

from typing import cast

from numfn.dtype import dtypes
from numfn.ir.symbolic import symbolic
from numfn.ir.uop import Buffer, Ops, UOp, graph_rewrite, substitute, toposort


def callify(function_graph: UOp, input_count: int, writes: int = 0) -> UOp:
    """CALL(body, *buffers): the simplified function graph with captured constants turned into PARAMs (slots after
    the inputs), bound to the input and constant BUFFERs in slot order. CALL.arg holds the output buffers: one for
    every entry of the graph's SINK but the last `writes` (writes into inputs, which have their inputs' buffers)."""
    body = graph_rewrite(function_graph, symbolic, name="callify: symbolic")
    consts = [u for u in toposort([body]) if u.op is Ops.BUFFER and u.arg.category == "constant"]
    params, bindings = {}, []
    for i, u in enumerate(consts):
        assert u.shape is not None
        slot = input_count + i
        params[u] = UOp(Ops.PARAM, u.dtype, (), (slot, u.shape))
        bindings.append(UOp(Ops.BUFFER, u.dtype, (), Buffer("constant", i, u.shape, u.arg.data, u.arg.data_hash)))
    if params: body = substitute(body, params)
    inputs = {}
    for u in toposort([body]):
        if u.op is Ops.PARAM and u.arg[0] < input_count: inputs[u.arg[0]] = u
    input_bufs = [UOp(Ops.BUFFER, inputs[i].dtype, (), Buffer("input", i, cast(tuple[int, ...], inputs[i].shape)))
                  if i in inputs else
                  UOp(Ops.BUFFER, dtypes.void, (), Buffer("input", i, ())) for i in range(input_count)]
    outputs = tuple(Buffer("output", i, cast(tuple[int, ...], o.shape))
                    for i, o in enumerate(body.src[:len(body.src) - writes]))
    return UOp(Ops.CALL, dtypes.void, (body, *input_bufs, *bindings), outputs)
