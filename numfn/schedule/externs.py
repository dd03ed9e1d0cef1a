"""Extern calls (EXTERN nodes, numfn/ir/extern.py) as steps of a schedule, and the program each step renders to.

The scheduler gives every extern call a step of its own: fusion stops at its boundary. Its inputs are realized
buffers, passed with their strides where the routine takes them (a transposed operand of a matrix product is passed
as it is, with the transpose flag); its results are buffers planned like any other (an output written by the
routine is the caller's output array itself).

Interface:
  - `prepare_externs(graph, roots)` adds to `roots` (numfn/schedule/roots.py) what every EXTERN of the graph needs
    stored, and returns a `ScheduledExtern` per call: its results (each has a buffer; a result returned twice is
    written once and copied), its in-out inputs (roots computed right into the result's buffer, `Root.alias`), and
    per other input the realized value it is a view of (`strided_view`), or the input itself, realized row-major,
    where the routine cannot take the view's strides. kernels.py orders the call after the roots it `reads` and
    makes its ExternKernel (numfn/schedule/items.py) with `kernel(name, roots, home)`.
  - `transpose_products(graph)`: the graph with every matrix product whose result is only read transposed
    ((a @ b).T, einsum's 'ki,kj->ji') made the transposed product b.T @ a.T instead, so the routine writes the
    layout its readers want and no kernel copies the result to transpose it.
  - `build_extern_program(kernel, table)`: a scheduled ExternKernel as an `ExternProgram`, the function the
    renderers print (numfn/function.py calls it when rendering), its calls' arguments per the routine's table.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from numfn.codegen.lower import reshape_groups
from numfn.dtype import DType
from numfn.ir.extern import ROUTINES, Call, Operand, contiguous_strides
from numfn.ir.uop import MOVEMENT, Ops, UOp, substitute, toposort
from numfn.schedule.items import ExternKernel
from numfn.schedule.roots import Root, copy_of


def _shape(u: UOp) -> tuple[int, ...]:
    """A tensor-level node's shape (only loop-level nodes have none)."""
    assert u.shape is not None, u
    return u.shape


# ---------------------------------------------------------------------------------------------------------------
# strided views: what a routine is handed for an input

def strided_view(u: UOp, is_base: Callable[[UOp], bool]) -> tuple[UOp, int, tuple[int, ...]] | None:
    """`u` as (base, offset, strides) in elements of the base's row-major buffer, when u is a chain of views down
    to a node `is_base` accepts (a buffer or a realized value) that needs no copy; else None. Also None where
    the chain stops at another node: the caller realizes that node first."""
    chain: list[UOp] = []
    while not is_base(u):
        if u.op not in MOVEMENT or u.op is Ops.PAD: return None
        chain.append(u)
        u = u.src[0]
    base, offset, strides = u, 0, contiguous_strides(_shape(u))
    for v in reversed(chain):
        src_shape = _shape(v.src[0])
        if v.op is Ops.PERMUTE: strides = tuple(strides[i] for i in v.arg)
        elif v.op is Ops.EXPAND: strides = tuple(0 if o == 1 and n != 1 else s for o, n, s in zip(src_shape, v.arg,
                                                                                                  strides))
        elif v.op is Ops.SHRINK:
            offset += sum(b * s for (b, _), s in zip(v.arg, strides))
        elif v.op is Ops.FLIP:
            flipped = list(strides)
            for a in v.arg:
                offset += (src_shape[a] - 1) * flipped[a]
                flipped[a] = -flipped[a]
            strides = tuple(flipped)
        elif v.op is Ops.RESHAPE:
            reshaped = _reshape_strides(src_shape, strides, v.arg)
            if reshaped is None: return None
            strides = reshaped
    return base, offset, strides


def _reshape_strides(old: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of a reshape that needs no copy (each run of axes it merges is evenly strided), else None."""
    if math.prod(new) == 0: return contiguous_strides(new)
    out = [0] * len(new)
    for gnew, gold in reshape_groups(new, old):
        axes = [a for a in gold if old[a] != 1]
        for a, b in zip(axes, axes[1:]):
            if strides[a] != strides[b] * old[b]: return None
        step = strides[axes[-1]] if axes else 0
        for a in reversed(gnew):
            out[a] = step
            step *= new[a]
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------------
# products read transposed

def transpose_products(graph: UOp) -> UOp:
    """`graph` with each real GEMM call whose result every reader takes transposed (a PERMUTE swapping its two
    matrix axes) replaced by the call of the transposed product, (a @ b).T = b.T @ a.T: the operands are passed
    with the other transpose flags, and the readers read the new result as it is. Without it the result is
    stored, then copied transposed (a kernel moving the whole matrix with strided reads or writes)."""
    nodes = toposort([graph])
    readers: dict[UOp, list[UOp]] = {}
    for u in nodes:
        for s in u.src: readers.setdefault(s, []).append(u)
    mapping: dict[UOp, UOp] = {}
    for node in nodes:
        call = node.arg
        if node.op is not Ops.EXTERN or call.routine != "gemm" or call.dtype.is_complex: continue
        result = next((r for r in readers.get(node, []) if r.op is Ops.RESULT and r.arg == 0), None)
        if result is None or len(readers[node]) != 1: continue
        nb = len(call.batch)
        swap = tuple(range(nb)) + (nb + 1, nb)
        users = readers.get(result, [])
        if not users or any(v.op is not Ops.PERMUTE or v.arg != swap for v in users): continue
        rows, cols, k = call.params
        a, b = node.src
        (shape, dt), = call.results
        swapped = replace(call, params=(cols, rows, k), results=((shape[:nb] + (cols, rows), dt),))
        new = UOp(Ops.RESULT, dt, (UOp(Ops.EXTERN, node.dtype, (b.permute(swap), a.permute(swap)), swapped),), 0)
        for v in users: mapping[v] = new
    return substitute(graph, mapping) if mapping else graph


# ---------------------------------------------------------------------------------------------------------------
# scheduling

@dataclass
class ScheduledExtern:
    """An EXTERN node being scheduled: its RESULT nodes (every result, used or not, has a buffer), and per input
    either its in-out copy (a root aliasing a result) or the realized value it is a view of."""
    node: UOp
    results: list
    inputs: list   # per input: ("inout", wrapper root key) or ("view", value, base)

    @property
    def read_values(self) -> list[UOp]:
        return [i[1] for i in self.inputs]

    def name_hint(self) -> str:
        return f"X_{self.node.arg.routine}"

    def reads(self, roots: dict) -> list[UOp]:
        """The realized values (roots) whose buffers this call needs written first."""
        out = []
        for i in self.inputs:
            if i[0] == "inout": out.append(i[1])
            elif i[2] in roots: out.append(i[2])
        return out

    def memory_reads(self) -> list[UOp]:
        """Every value whose memory the call reads, buffers of the arguments included (see ScheduledLoop's)."""
        return [i[1] if i[0] == "inout" else i[2] for i in self.inputs]

    def kernel(self, name: str, roots: dict, home: dict) -> ExternKernel:
        results = tuple(roots[r].targets[0] for r in self.results)
        operands: list[tuple[UOp, int, tuple[int, ...]] | None] = []
        for i in self.inputs:
            if i[0] == "inout":
                operands.append(None)
                continue
            _, value, base = i
            buf = home.get(base, base)
            view = strided_view(value, lambda u, base=base: u is base)  # type: ignore[misc]  # lambda with defaults
            assert view is not None   # prepare_externs passes a value as a view only where it is one
            _, offset, strides = view
            operands.append((buf, offset, strides))
        return ExternKernel(name, self.node, results, tuple(operands))


def prepare_externs(graph: UOp, roots: dict[UOp, Root]) -> list[ScheduledExtern]:
    """Roots for every extern call: its results (a result that is an output is written there directly), its in-out
    inputs (computed into the result's buffer), and the values its other inputs are views of (or the inputs
    themselves, copied row-major, where the routine cannot take the view's strides)."""
    externs = []
    for node in (u for u in toposort([graph]) if u.op is Ops.EXTERN):
        call = node.arg
        results = [UOp(Ops.RESULT, dt, (node,), i) for i, (_, dt) in enumerate(call.results)]
        for r in results:
            root = roots.setdefault(r, Root(r))
            if len(root.outputs) > 1:   # a result returned twice: the call writes the first, a kernel copies it
                for t in root.outputs[1:]:
                    key = copy_of(r, ("output", t.arg.number))
                    roots[key] = Root(key, [t], [t])
                del root.outputs[1:]
        inputs: list[tuple[Any, ...]] = []   # as ScheduledExtern.inputs
        for j, v in enumerate(node.src):
            if j in call.inout:
                key = UOp(Ops.CONTIGUOUS, v.dtype, (v,), ("extern input", j, id(node)))
                roots[key] = Root(key, alias=results[call.inout.index(j)])
                inputs.append(("inout", key))
                continue
            # passed as a view of a buffer or a realized value, or of the value under its views, realized for it;
            # else copied row-major
            def is_base(u: UOp) -> bool: return u.op is Ops.BUFFER or u in roots
            base = v
            while base.op in MOVEMENT and base.op is not Ops.PAD and not is_base(base): base = base.src[0]
            view = None if base.op in (Ops.CONST, Ops.IOTA, Ops.PAD) else \
                strided_view(v, lambda u, base=base, is_base=is_base: u is base or is_base(u))  # type: ignore[misc]
            assert v.shape is not None
            nb = len(call.batch)
            if view is not None and ROUTINES[call.routine].accepts(call, j, v.shape[nb:], view[2][nb:]):
                if not is_base(base): roots.setdefault(base, Root(base))
                inputs.append(("view", v, base))
            elif v.op is Ops.PERMUTE and ROUTINES[call.routine].accepts(
                    call, j, v.shape[nb:], tuple(contiguous_strides(_shape(v.src[0]))[a] for a in v.arg)[nb:]):
                # a transposed operand that needs a copy (a reversed or a strided view): copied in its own
                # order, which reads and writes memory in runs, and passed transposed
                roots.setdefault(v.src[0], Root(v.src[0]))
                inputs.append(("view", v, v.src[0]))
            else:
                roots.setdefault(v, Root(v))
                inputs.append(("view", v, v))
        externs.append(ScheduledExtern(node, results, inputs))
    return externs


# ---------------------------------------------------------------------------------------------------------------
# the program a scheduled call renders to

@dataclass(frozen=True)
class ExternProgram:
    """An extern call ready to render: a function over the externs table and `params` (buffers, written first)
    that runs `calls` once per batch element (the flat batch index decomposes over `batch`)."""
    name: str
    params: tuple[UOp, ...]
    batch: tuple[int, ...]
    calls: tuple[Call, ...]
    dtype: DType
    int_bits: int
    written: int          # the first `written` params are written, the rest only read
    # True when the batch loop may be split across numfn's thread pool (see build_extern_program)
    parallel: bool | None = None
    externs: bool = True

    def __str__(self) -> str:
        return f"{self.name}({', '.join(repr(p.arg) for p in self.params)}) batch={self.batch}\n" + \
            "\n".join(f"  call externs[{c.symbol}]{c.args}" for c in self.calls)


def build_extern_program(kernel: ExternKernel, table: tuple[str, ...]) -> ExternProgram:
    """The renderable program of a scheduled extern call; `table` is the program's externs table (symbols)."""
    call = kernel.call
    params = kernel.buffers
    index = {p: i for i, p in enumerate(params)}
    outs = [Operand(index[b], 0, contiguous_strides(_shape(b))) for b in kernel.results]
    ins = []
    for j, op in enumerate(kernel.operands):
        if op is None: ins.append(outs[call.inout.index(j)])
        else: ins.append(Operand(index[op[0]], op[1], op[2]))
    routine = ROUTINES[call.routine]
    slots = [table.index(s) for s in kernel.symbols()]
    calls = tuple(Call(slots[c.symbol], c.args) for c in routine.calls(call, ins, outs))
    # a batch of small calls runs on numfn's threads, each call on one (BLAS does not thread calls this small):
    # no shared scratch (every element has its own buffers), and the whole batch worth waking the pool
    per_call = kernel.flops // max(call.batch_size, 1)
    parallel = call.batch_size >= 2 and not any(call.shared) and per_call <= PARALLEL_MAX_CALL_FLOPS and \
        kernel.flops >= PARALLEL_MIN_FLOPS
    return ExternProgram(kernel.name, params, call.batch, calls, call.dtype, call.int_bits, len(kernel.outputs),
                         True if parallel else None)


# batched extern calls run on numfn's thread pool when each call is at most this much work (BLAS keeps calls this
# small on one thread) and the whole batch at least this much
PARALLEL_MAX_CALL_FLOPS = 1 << 20
PARALLEL_MIN_FLOPS = 1 << 18
