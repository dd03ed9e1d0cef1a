"""Loops and branches (LOOP nodes, numfn.trace.control.Region) as steps of a schedule.

A region is scheduled as one step, a LoopKernel (numfn/schedule/items.py): fusion stops at its boundary. Its
sub-graphs (a while loop's condition and body, a branch's bodies) are scheduled as programs of their own, by the
scheduling function the caller passes in (create_schedule: given as a parameter, so this module does not import the
scheduler that imports it), with fresh blocks of intermediate numbers.

`prepare_loops(graph, roots, blocks, schedule)` adds to `roots` (numfn/schedule/roots.py) what every LOOP of the
graph needs stored and returns a `ScheduledLoop` per LOOP:
  - its results (RESULT nodes), each with a buffer of its own: a loop swaps a state buffer with a next one each
    iteration, so a result that is an output is copied there after the loop, unless the body writes that state in
    place (`writes_in_place`): then the output itself is the state's buffer;
  - a while loop's initial state, computed into the results' buffers: a value nothing else reads is computed there
    with the writes that made it (`starts`), any other is copied in (a root aliasing the result);
  - the values it reads (captures; a branch's index and operands).
kernels.py orders a ScheduledLoop among the kernels by `reads(roots)` and its results, and makes its LoopKernel
with `kernel(name, roots, home)` once every root has its home buffer. `swapped_state` tells versions.py which
loop results cannot live at a fixed place (an output, an argument's memory).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from numfn.dtype import dtypes
from numfn.ir.uop import Buffer, Ops, UOp, preorder, substitute, toposort
from numfn.schedule.items import LoopKernel, Schedule
from numfn.schedule.roots import Root, chain_down, copy_of, parents_of

if TYPE_CHECKING:
    from numfn.schedule.memory import MemoryPlan

# create_schedule's signature: (CALL, first intermediate number, blocks of numbers) -> (schedule, memory plan)
ScheduleFunction = Callable[..., "tuple[Schedule, MemoryPlan]"]


@dataclass
class ScheduledLoop:
    """A LOOP node being scheduled: its RESULT nodes (every one has a buffer), the roots that write the initial state
    into them (while loops), and the realized values it reads (captures; a branch's index and operands)."""
    node: UOp
    results: list
    inits: list
    values: list
    blocks: Any          # fresh blocks of intermediate numbers for its inner schedules
    schedule: ScheduleFunction   # schedules its sub-graphs (create_schedule)
    starts: dict = field(default_factory=dict)   # initial states computed in place: value -> its RESULT
    # results whose state lives in memory the loop continues to write in place: RESULT -> that BUFFER (a loop in a
    # loop's body writing the outer state, or an argument: see _continues_in)
    continues: dict = field(default_factory=dict)
    built: dict = field(default_factory=dict)

    def reads(self, roots: dict) -> list[UOp]:
        return self.inits + [v for v in self.values if v in roots]

    def memory_reads(self) -> list[UOp]:
        """Every value whose memory the loop reads, buffers of the arguments included: a later write into that
        memory (x += 1 after the loop) must wait for the loop (KernelGroups.order_extern_reads_before_writes). An
        operand that is a reshape of a buffer is read in that buffer's memory (reshaped_buffer)."""
        return self.inits + [reshaped_buffer(v) or v for v in self.values]

    def name_hint(self) -> str:
        return "L" if self.node.arg.kind == "while" else "B"

    def kernel(self, name: str, roots: dict, home: dict) -> LoopKernel:
        state = tuple(roots[r].targets[0] for r in self.results)
        bound = tuple(v if v.op is Ops.CONST else reshaped_buffer(v) or home.get(v, v) for v in self.node.src)
        key = (state, bound)
        if key not in self.built:
            self.built[key] = _loop_kernel(name, self.node.arg, state, bound, self.blocks, self.schedule)
        return self.built[key]


def prepare_loops(graph: UOp, roots: dict[UOp, Root], blocks, schedule: ScheduleFunction,
                  writebacks: frozenset | set = frozenset()) -> list[ScheduledLoop]:
    """Roots for every loop and branch: its results (in intermediate buffers: a loop swaps them; a result that is
    an output is copied there after it, unless the loop writes it in place: then the output is its buffer), the
    initial state (computed into the results' buffers: a value nothing else reads is computed there, with the
    writes that made it, instead of being copied; or, for a state written in place that starts from an argument's
    memory and ends as its last version (`writebacks`), in that memory itself) and the values it reads."""
    loops = []
    parents: dict[UOp, list[UOp]] | None = None
    continued: dict[UOp, UOp] = {}   # RESULT -> the BUFFER its loop wrote in place (earlier loops of this graph)
    for node in (u for u in toposort([graph]) if u.op is Ops.LOOP):
        region = node.arg
        results = [UOp(Ops.RESULT, dt, (node,), k) for k, (_, dt) in enumerate(region.results)]
        continues: dict[UOp, UOp] = {}
        if region.kind == "while":
            if parents is None: parents = parents_of(graph)
            before = set(toposort(list(node.src)))   # what is computed before the loop runs
            for k, v in enumerate(node.src[:len(region.state)]):
                memory = _continues_in(v, results[k], node, parents, before, writebacks, continued)
                if memory is not None: continues[results[k]] = continued[results[k]] = memory
        for k, r in enumerate(results):
            root = roots.setdefault(r, Root(r))
            # no pointer swaps move a state the body writes in place: its buffer can be the output itself (not
            # when it is an argument's memory: the output is a copy)
            own = region.kind == "while" and writes_in_place(region.bodies[0].src[k], region.tag, k) and \
                r not in continues
            for t in root.outputs[1 if own else 0:]:   # the loop's buffers are its own: outputs are copies of them
                key = copy_of(r, ("output", t.arg.number))
                roots[key] = Root(key, [t], [t])
            root.outputs = root.outputs[:1] if own else []
        inits, values, starts = [], [], {}
        reads = node.src
        if region.kind == "while":
            assert parents is not None
            for k, v in enumerate(node.src[:len(region.state)]):
                if results[k] in continues:   # computed in place in that memory, which the loop goes on writing
                    if v.op is not Ops.BUFFER:
                        roots.setdefault(v, Root(v)).keep = True
                        inits.append(v)
                    continue
                if _starts_in_state(v, node, parents, before, roots, _may_end_in_output(results[k], parents, roots)):
                    roots.setdefault(v, Root(v)).keep = True   # the loop reads it (as its state's buffer)
                    starts[v] = results[k]
                    inits.append(v)
                    continue
                key = UOp(Ops.CONTIGUOUS, v.dtype, (v,), ("loop state", k, id(node)))
                roots[key] = Root(key, alias=results[k])
                inits.append(key)
            reads = node.src[len(region.state):]
        for v in reads:
            if v.op not in (Ops.BUFFER, Ops.CONST) and reshaped_buffer(v) is None:
                roots.setdefault(v, Root(v))
            values.append(v)
        loops.append(ScheduledLoop(node, results, inits, values, blocks, schedule, starts, continues))
    return loops


def _continues_in(v: UOp, result: UOp, node: UOp, parents: dict[UOp, list[UOp]], before: set[UOp],
                  writebacks, continued: dict[UOp, UOp]) -> UOp | None:
    """The memory (a BUFFER) a while loop's state `v` can live in without copies, or None: the loop writes the state
    in place, `v` is writes on an argument's memory (a loop's state, in an enclosing loop's body) or on the result of
    an earlier loop that continued in it, the loop's result is on the way to that memory's last version (a
    writeback), and the loop may take the memory as its state's own (_read_only_by, as _starts_in_state asks). A
    dynamic-programming table filled by two nested loops is then written in place, instead of copied in and out of
    the inner loop at every outer step."""
    if sum(s is v for s in node.src) != 1 or not loop_writes_in_place(result): return None
    memory = [*chain_down(v)]
    base = memory[-1].src[0] if memory else v
    target = base if base.op is Ops.BUFFER else continued.get(base)
    if target is None: return None
    if not any(result in versions_down(w) for w in writebacks): return None
    memory.append(base)
    return target if _read_only_by(node, memory, v, parents, before) else None


def _read_only_by(node: UOp, memory: list[UOp], v: UOp, parents: dict[UOp, list[UOp]], before: set[UOp]) -> bool:
    """Whether the loop `node` may take `memory` (the versions its initial state `v` was written from) as its
    state's own: the loop reads none of it but `v` (no capture), and everything built from it, however far up, is
    computed for the loop, before it (an ancestor of it)."""
    if any(p is node and u is not v for u in memory for p in parents.get(u, ())): return False
    seen, stack = set(memory), list(memory)
    while stack:   # everything built from the memory, up to the loop
        for p in parents.get(stack.pop(), ()):
            if p is node or p in seen: continue
            if p not in before: return False
            seen.add(p)
            stack.append(p)
    return True


def _starts_in_state(v: UOp, node: UOp, parents: dict[UOp, list[UOp]], before: set[UOp],
                     roots: dict[UOp, Root], fixed: bool = False) -> bool:
    """Whether a loop's initial state `v` can be computed in the state's own buffer (no copy): v and the versions
    of memory it was written from (`L = zeros(...); L[0] = ...`) are computed memory that is no output, that the
    loop reads only as this state, and that nothing computed after the loop starts depends on: every value built
    from that memory (however far up) is computed for the loop, before it (an ancestor of it). A value computed
    from it before the loop may still be recomputed in a kernel after the loop, where the memory holds the loop's
    state: `t = L * 2` used by the loop and returned beside its result. Not when the state's buffer is `fixed` (an
    output) and the memory is an earlier loop's state that swaps buffers (it would swap the output away)."""
    if v.op in (Ops.BUFFER, Ops.CONST) or sum(s is v for s in node.src) != 1: return False
    memory = [*chain_down(v)]
    memory.append(memory[-1].src[0] if memory else v)
    if memory[-1].op is Ops.BUFFER: return False   # writes into an argument
    if fixed and swapped_state(memory[-1]): return False
    if any(u in roots and roots[u].outputs for u in memory): return False
    return _read_only_by(node, memory, v, parents, before)


def _may_end_in_output(result: UOp, parents: dict[UOp, list[UOp]], roots: dict[UOp, Root]) -> bool:
    """Whether a loop result's buffer may become an output's: the result, or a version written over it (`y[0] =
    -1` after the loop), or the result of a later loop whose state starts from it (and so on), is an output. Then
    the buffer is fixed, and an earlier loop's swapping state cannot start in it (see _starts_in_state)."""
    def later(u: UOp) -> list[UOp]:   # the writes over u, and the results of loops whose state starts from u
        out = []
        for p in parents.get(u, ()):
            if p.op is Ops.SCATTER and p.src[0] is u: out.append(p)
            elif p.op is Ops.LOOP and p.arg.kind == "while":
                out += [UOp(Ops.RESULT, p.arg.results[k][1], (p,), k)
                        for k, s in enumerate(p.src[:len(p.arg.state)]) if s is u]
        return out
    return any(u in roots and roots[u].outputs for u in preorder([result], later))


BLOCK = 100_000   # intermediate numbers of one inner schedule (tmp<block * BLOCK + n>)


def _loop_kernel(name: str, region, state: tuple[UOp, ...], bound: tuple[UOp, ...], blocks,
                 schedule: ScheduleFunction) -> LoopKernel:
    """The schedules of a region's sub-graphs, their placeholders bound to the state buffers and to the buffers of
    the values the LOOP reads (`bound`, its sources' buffers in order)."""
    numbers = (next(blocks) * BLOCK for _ in iter(int, 1))
    if region.kind == "while":
        n = len(region.state)
        slots = {k: b for k, b in enumerate(state)}
        slots.update({n + j: b for j, b in enumerate(bound[n:])})
        flag = UOp(Ops.BUFFER, dtypes.bool, (), Buffer("intermediate", next(numbers), ()))
        cond_first = next(numbers)
        body_sink = region.bodies[0]
        # a state value the body writes in place (a chain of writes on its own placeholder) needs no next buffer
        in_place = [writes_in_place(v, region.tag, k) for k, v in enumerate(body_sink.src)]
        nexts = tuple(None if in_place[k] else UOp(Ops.BUFFER, b.dtype, (), Buffer("intermediate", next(numbers),
                                                                                    b.arg.shape))
                      for k, b in enumerate(state))
        body_first = next(numbers)

        def while_parts() -> tuple[Schedule, tuple[Schedule]]:
            cond, _ = _sub_schedule(region.cond, region.tag, slots, [flag], cond_first, blocks, schedule)
            body, _ = _sub_schedule(body_sink, region.tag, slots, list(nexts), body_first, blocks, schedule,
                                    in_place)
            return cond, (body,)
        return LoopKernel(name, "while", state, nexts, flag, tuple(dict.fromkeys(
            b for b in bound[n:] if b.op is Ops.BUFFER)), while_parts)
    n = len(region.state)
    slots = {k: b for k, b in enumerate(bound[1:1 + n])}
    slots.update({n + j: b for j, b in enumerate(bound[1 + n:])})
    firsts = [next(numbers) for _ in region.bodies]

    def branch_parts() -> tuple[None, tuple[Schedule, ...]]:
        return None, tuple(_sub_schedule(b, region.tag, slots, list(state), first, blocks, schedule)[0]
                           for b, first in zip(region.bodies, firsts))
    reads = tuple(dict.fromkeys(b for b in bound[1:] if b.op is Ops.BUFFER))
    return LoopKernel(name, "cond", state, (None,) * len(state), bound[0], reads, branch_parts)


def reshaped_buffer(v: UOp) -> UOp | None:
    """The buffer a loop's operand `v` is a reshape of (`A.reshape(n, 1, k)`, a matrix product's operand in a loop
    body), or None. A buffer is contiguous, so the loop reads it as it is, with the operand's shape (the schedule
    of its body binds the placeholder to the buffer reshaped): no copy of an argument per call."""
    u = v
    while u.op is Ops.RESHAPE: u = u.src[0]
    return u if u is not v and u.op is Ops.BUFFER else None


def writes_in_place(v: UOp, tag: int, k: int) -> bool:
    """Whether a body's new value `v` of state `k` is writes on top of that state's own placeholder (the body
    writes it in place: no next buffer, no swap), possibly through loops in the body that write their own state in
    place starting from such writes (`for j: D[i, j] = ...` inside `for i`). Such an inner loop continues in the
    placeholder's memory (_continues_in) or, where it cannot, its result is copied back (Versions.plan)."""
    v = [*versions_down(v)][-1]
    return v.op is Ops.CARRY and v.arg[0] == tag and v.arg[1] == k


def versions_down(v: UOp):
    """`v`, then the versions of memory below it: through writes (SCATTER: its old value) and through the results
    of while loops that write their state in place (the state's initial value)."""
    while True:
        yield v
        if v.op is Ops.SCATTER: v = v.src[0]
        elif v.op is Ops.RESULT and loop_writes_in_place(v): v = v.src[0].src[v.arg]
        else: return


def loop_writes_in_place(result: UOp) -> bool:
    """Whether `result` is a while loop's state that its body writes in place (no swapped buffers)."""
    if result.op is not Ops.RESULT or result.src[0].op is not Ops.LOOP: return False
    region = result.src[0].arg
    return region.kind == "while" and result.arg < len(region.state) and \
        writes_in_place(region.bodies[0].src[result.arg], region.tag, result.arg)


def _sub_schedule(sink: UOp, tag: int, slots: dict[int, UOp], outputs: list, first: int, blocks,
                  schedule: ScheduleFunction, in_place: list[bool] | None = None) -> tuple[Schedule, MemoryPlan]:
    """A region's sub-graph scheduled as a program of its own: its placeholders are the buffers in `slots`; its
    results go to `outputs` (None: written in place, into the buffer of the placeholder its writes start from)."""
    in_place = in_place or [False] * len(sink.src)
    params = {}
    order = sorted(slots)
    for u in toposort([sink]):
        if u.op is Ops.CARRY and u.arg[0] == tag:
            params[u] = UOp(Ops.PARAM, u.dtype, (), (order.index(u.arg[1]), u.shape))
    body = substitute(sink, params)
    outs = [UOp(Ops.CONTIGUOUS, v.dtype, (v,)) for v, ip in zip(body.src, in_place) if not ip]
    writes = [v for v, ip in zip(body.src, in_place) if ip]
    graph = UOp(Ops.SINK, dtypes.void, tuple(outs + writes))
    bindings = tuple(slots[k] for k in order)
    call = UOp(Ops.CALL, dtypes.void, (graph, *bindings), tuple(o.arg for o, ip in zip(outputs, in_place) if not ip))
    return schedule(call, first, blocks)


def swapped_state(u: UOp) -> bool:
    """A while loop's result whose buffer swaps with a next one each iteration (the body does not write it in
    place): after the loop the state is in whichever of the two the last iteration wrote, so the buffer can only be
    an intermediate (an output or an argument's memory must hold the value at a fixed place)."""
    if u.op is not Ops.RESULT or u.src[0].op is not Ops.LOOP or u.src[0].arg.kind != "while": return False
    region = u.src[0].arg
    return not writes_in_place(region.bodies[0].src[u.arg], region.tag, u.arg)
