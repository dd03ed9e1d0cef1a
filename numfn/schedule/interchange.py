"""Loop interchange: a loop whose carried state is elementwise runs as one kernel, the iterations inside each element.

The pattern (an escape-time fractal, a logistic map, a Newton iteration, all written the NumPy way):

    for _ in range(maxiter):
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        n += zr * zr + zi * zi <= 4

As scheduled by numfn/schedule/regions.py, such a loop is a LoopKernel: every iteration runs a condition kernel
(the counter against its bound), a scalar kernel (counter + 1) and one elementwise kernel that reads the state
planes and writes their next values, then swaps the state and next buffers. Each iteration is a pass over every
plane in memory, so the loop is memory-bound (1.5-2 ns per element and iteration on 512 x 512 float32 on one
thread, where XLA's fused, unrolled loop, at 26x NumPy in docs/performance.md, takes about 0.2). When each element's next value depends only on that element's state, the two
loops can be interchanged: one pass over the elements, and for each element (a group of `lanes` neighbouring
elements, which LLVM's SLP vectorizer turns into vector registers) the whole iteration loop with the state in
registers. Work then is compute-bound, the loop is never unrolled, and its trip count may be a run-time value.

Interface: `interchange_loops(items)` (called by scheduler.create_schedule on every schedule, loop bodies' too)
replaces each LoopKernel that `interchangeable(item)` accepts with two Kernels: the interchanged one (`I_<shape>`)
and a scalar kernel that gives the counter its final value (after the first, which reads its initial value).
`ENABLED = False` turns it off (tests of the regions' own schedules). The interchanged kernel's LoweredKernel
declares no output loops, so the codegen's upcasts and BEAM's candidates leave it alone (they would copy its
accumulators under one name); its lanes are its own upcast, and threads split its outermost loop as usual.

Conditions (any doubt: the loop stays as it is), checked on the lowered kernels of the loop's schedules:
  - a while loop whose every state value swaps (no state written in place: `x[i] = ...` into a carried array, or
    an outer array written in the body, keeps its loop);
  - the condition is one scalar kernel storing `counter < bound`, the bound a constant or a scalar buffer the loop
    does not write, the counter an int64 state value;
  - the body is the counter's kernel storing `counter + 1`, and exactly one kernel storing every other state
    value's next value, all at the kernel's own element index, ungated;
  - that kernel reads state only at the element it writes (so no shifted `z[1:]` read, no movement across
    elements, no reduction over the state: such reads are at other indices), reads the counter only as a value
    (`x + k`), contains no reduction (REDUCE) at all, and reads nothing else the loop writes;
  - every state value has the kernel's shape (a carry of another shape is in another kernel, so the loop stays).
Values broadcast into the body (`cr` of shape (n, 1)) are loads of loop-invariant buffers at whatever index
broadcasting gives: they are allowed.

Exactness: the interchanged kernel evaluates the very expressions of the body kernel (its lowered graph, with the
state loads replaced by the accumulators), in the same order per element, through the same decompositions and
rendering: results are bit-equal to the loop's. Each iteration computes every next value from the values at its
start (each state is two accumulators: the next values are computed from `cur` into `next`, then copied into
`cur`), as the swapped buffers did.

Measured before choosing (50 iterations, one thread): tile blocking (the loop run on tiles of rows small enough
for L1/L2) was estimated by running today's loop on planes of tile size (1 and 16 rows of 512): 0.7-1.5 ns per
element and iteration against 1.5-2 on the whole 512 x 512 plane, at best 2x (a kernel call per iteration, a load
and a store per plane and element remain), so it could not reach XLA's 0.2. The interchange needs no new kernel
shape beyond accumulators that start from a loaded value (DEFINE_ACC's last source), and measured 16.9x NumPy
against 4.1x before (docs/performance.md), faster than JAX on the same machine. Not done: a per-element early exit where a mask allows (the
escape-time loop keeps iterating a diverged element, as NumPy's code does), while loops with other conditions,
several elementwise kernels in one body, scalar state other than the counter, 0-d state (its kernels are
scalar ones).
"""
from __future__ import annotations

from collections import Counter

from numfn.codegen.lower import LoweredKernel, free_ranges
from numfn.dtype import dtypes
from numfn.ir.symbolic import add, mul
from numfn.ir.uop import Ops, UOp, rebuild, toposort
from numfn.schedule.items import ExecItem, Kernel, LoopKernel, Schedule

ENABLED = True           # (tests turn it off to see the loops as regions.py schedules them)
LANES_BYTES = 128        # the elements of one group: two 512-bit registers per state value; their chains of
                         # dependent operations interleave, hiding the latency of each
MAX_COPIED_NODES = 1 << 13   # lanes x the body's nodes: LLVM's time grows faster than a loop body
RUNTIME_TRIPS = 1 << 62  # the static bound of the iteration loop (its end is computed at run time)
ASSUMED_TRIPS = 16       # iterations counted for a run-time trip count (the kernel's operation count decides threads)


def interchange_loops(items: Schedule) -> Schedule:
    """The schedule with every loop that `interchangeable` accepts replaced by its interchanged kernels."""
    if not ENABLED: return items
    out: list[ExecItem] = []
    changed = False
    for ei in items:
        plan = interchangeable(ei)
        if plan is None: out.append(ei)
        else:
            out += plan
            changed = True
    return Schedule(out) if changed else items


def _scalar_store(ei: ExecItem) -> tuple[UOp, UOp] | None:
    """(buffer, value) of a kernel that stores one scalar, else None."""
    if not isinstance(ei.kernel, Kernel) or ei.lowered is None or ei.kernel.shape != (): return None
    stores = ei.lowered.sink.src
    if len(stores) != 1 or len(stores[0].src) != 3: return None
    buf, index, value = stores[0].src
    if index.op is not Ops.CONST or index.arg != 0: return None
    return buf, value


def _is_scalar_load(u: UOp, buf: UOp) -> bool:
    return u.op is Ops.LOAD and len(u.src) == 2 and u.src[0] is buf and u.src[1].op is Ops.CONST and u.src[1].arg == 0


def interchangeable(ei: ExecItem) -> list[ExecItem] | None:
    """The interchanged kernels replacing loop `ei` (see the module docstring), or None to keep the loop."""
    lk = ei.kernel
    if not isinstance(lk, LoopKernel) or lk.kind != "while" or lk.cond is None or len(lk.bodies) != 1: return None
    if any(n is None for n in lk.next) or len(lk.cond) != 1: return None
    written = {*lk.state, *(n for n in lk.next if n is not None), lk.flag}
    # the condition: flag = counter < bound
    cond = _scalar_store(lk.cond[0])
    if cond is None or cond[0] is not lk.flag or cond[1].op is not Ops.CMPLT: return None
    counter_load, bound = cond[1].src
    if counter_load.op is not Ops.LOAD or counter_load.src[0] not in lk.state: return None
    counter = counter_load.src[0]
    if counter.dtype != dtypes.int64 or not _is_scalar_load(counter_load, counter): return None
    if bound.op is Ops.LOAD:
        if not _is_scalar_load(bound, bound.src[0]) or bound.src[0] in written: return None
    elif bound.op is not Ops.CONST: return None
    next_of = dict(zip(lk.state, lk.next))
    state_of = {n: s for s, n in next_of.items()}
    # the body: counter + 1, and one elementwise kernel for every other state value
    body = list(lk.bodies[0])
    if len(body) != 2: return None
    scalar = [(b, _scalar_store(b)) for b in body]
    steps = [(b, st) for b, st in scalar if st is not None and st[0] is next_of[counter]]
    if len(steps) != 1: return None
    step = steps[0][1]
    one = UOp.const(dtypes.int64, 1)
    if step[1] is not counter_load.alu(Ops.ADD, one) and step[1] is not one.alu(Ops.ADD, counter_load): return None
    main = body[1] if body[0] is steps[0][0] else body[0]
    if not isinstance(main.kernel, Kernel) or main.lowered is None: return None
    carried = [s for s in lk.state if s is not counter]
    if not carried: return None
    lowered = main.lowered
    shape = main.kernel.shape
    stores = {st.src[0]: st for st in lowered.sink.src}
    if len(stores) != len(lowered.sink.src) or set(stores) != {next_of[s] for s in carried}: return None
    indices = {st.src[1] for st in stores.values()}
    if len(indices) != 1 or any(len(st.src) != 3 for st in stores.values()): return None
    element = indices.pop()
    if any(s.arg.shape != shape for s in carried): return None
    if free_ranges(element) != frozenset(lowered.ranges): return None
    # every read of something the loop writes: a state value at the element itself, or the counter
    for u in toposort([lowered.sink]):
        if u.op in (Ops.REDUCE, Ops.DEFINE_ACC, Ops.ASSIGN, Ops.SCAN, Ops.SCATTER): return None
        if u.op is Ops.RANGE and u not in lowered.ranges: return None
        if u.op is not Ops.LOAD: continue
        buf = u.src[0]
        if buf not in written: continue
        if buf is counter and _is_scalar_load(u, counter): continue
        if buf not in carried or len(u.src) != 2 or u.src[1] is not element: return None
    return _interchanged(ei, lk, main, counter, counter_load, bound, carried, next_of, state_of, element)


def _interchanged(ei: ExecItem, lk: LoopKernel, main: ExecItem, counter: UOp, counter_load: UOp, bound: UOp,
                  carried: list[UOp], next_of: dict, state_of: dict, element: UOp) -> list[ExecItem]:
    lowered = main.lowered
    assert lowered is not None
    shape = main.kernel.shape
    stores = {state_of[st.src[0]]: st.src[2] for st in lowered.sink.src}
    # lanes: the innermost element loop split into groups of neighbouring elements: the largest divisor of its
    # size up to LANES_BYTES of the widest state value (and up to MAX_COPIED_NODES copied nodes); where that
    # divisor is poor (a prime size), groups of the limit whose last one is ragged: its lanes past the end compute
    # the last element again (clamped index, in bounds) and do not store
    itemsize = max(s.dtype.itemsize for s in carried)
    lanes, inner, group, n, ragged = 1, (lowered.ranges[-1] if lowered.ranges else None), None, 1, False
    if inner is not None:
        n = inner.src[0].arg
        limit = min(n, max(1, LANES_BYTES // itemsize), max(1, MAX_COPIED_NODES // len(toposort([lowered.sink]))))
        lanes = max(d for d in range(1, limit + 1) if n % d == 0)
        if lanes * 4 <= limit: lanes, ragged = limit, True
        groups = -(-n // lanes)
        if groups > 1: group = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, groups),), inner.arg)
    # the trip count: the loop runs while counter < bound, counter + 1 a step
    start = counter_load
    trips = start.alu(Ops.CMPLT, bound).alu(Ops.WHERE, bound.alu(Ops.SUB, start), UOp.const(dtypes.int64, 0))
    static = RUNTIME_TRIPS
    iteration_number = max((r.arg[0] for r in lowered.ranges), default=-1) + 1
    it = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, static), trips), (iteration_number, "reduce"))
    counter_now = add(start, it) if start.dtype == it.dtype else start.alu(Ops.ADD, it.cast(start.dtype))
    count = 0
    copies: list[tuple[UOp, dict[UOp, UOp], dict[UOp, UOp]]] = []   # per lane: (element index, cur accs, values)
    gates: list[tuple[UOp, ...]] = []                                  # per lane: () or (its position < n,)
    for lane in range(lanes):
        at: dict[UOp, UOp] = {}
        gates.append(())
        if lanes > 1:
            assert inner is not None
            position = add(mul(group, lanes), lane) if group is not None else UOp.const(dtypes.index, lane)
            at[inner] = position
            if ragged and (groups - 1) * lanes + lane >= n:   # this lane runs past the end in the last group
                last = UOp.const(dtypes.index, n - 1)
                inside = position.alu(Ops.CMPLT, UOp.const(dtypes.index, n))
                at[inner] = inside.alu(Ops.WHERE, position, last)
                gates[-1] = (inside,)
        index = rebuild(element, lambda u, src: at.get(u))
        outer = tuple(sorted(free_ranges(index), key=lambda r: r.arg[0]))
        cur: dict[UOp, UOp] = {}
        reads: dict[UOp, UOp] = {}
        for s in carried:
            init = UOp(Ops.LOAD, s.dtype, (s, index))
            acc = UOp(Ops.DEFINE_ACC, s.dtype, (*outer, init), (_zero(s.dtype), count))
            count += 1
            cur[s] = acc
            reads[UOp(Ops.LOAD, s.dtype, (s, element))] = UOp(Ops.LOAD, s.dtype, (acc, it))
        mapping = {**at, **reads, counter_load: counter_now}
        values = {s: rebuild(stores[s], lambda u, src: mapping.get(u)) for s in carried}
        copies.append((index, cur, values))
    # next values into `next` accumulators, all computed before any `cur` changes
    nexts: list[tuple[UOp, UOp, UOp]] = []   # (cur acc, next acc, its ASSIGN)
    for index, cur, values in copies:
        outer = tuple(sorted(free_ranges(index), key=lambda r: r.arg[0]))
        for s in carried:
            acc = UOp(Ops.DEFINE_ACC, s.dtype, outer, (_zero(s.dtype), count))
            count += 1
            nexts.append((cur[s], acc, UOp(Ops.ASSIGN, dtypes.void, (acc, values[s], it))))
    computed = tuple(a for _, _, a in nexts)
    finals: dict[UOp, UOp] = {}
    for cur_acc, next_acc, _ in nexts:
        moved = UOp(Ops.ASSIGN, dtypes.void, (cur_acc, UOp(Ops.LOAD, cur_acc.dtype, (next_acc, *computed, it)), it))
        finals[cur_acc] = UOp(Ops.LOAD, cur_acc.dtype, (cur_acc, moved))
    out = [UOp(Ops.STORE, dtypes.void, (s, index, finals[cur[s]], *gate))
           for (index, cur, _), gate in zip(copies, gates) for s in carried]
    sink = UOp(Ops.SINK, dtypes.void, tuple(out))
    trips_counted = bound.arg if bound.op is Ops.CONST and isinstance(bound.arg, int) else ASSUMED_TRIPS
    evaluations = Counter({u: n * max(1, min(trips_counted, 1 << 20)) for u, n in lowered.evaluations.items()})
    # no output loops declared: the codegen's loop transformations (upcasts, blocks, BEAM's candidates) would copy
    # the accumulators under one name; the lanes above are this kernel's own upcast (threads still split its
    # outermost loop: codegen.program.splittable_loop reads the instructions)
    kernel = LoweredKernel(sink, (), shape, evaluations)
    name = "I_" + "_".join(map(str, shape)) if shape else "I_scalar"
    interchanged = ExecItem(Kernel(name, sink, shape), kernel)
    # the counter's final value: max(start, bound), after the kernel above read its start
    last = start.alu(Ops.CMPLT, bound).alu(Ops.WHERE, bound, start)
    final_sink = UOp(Ops.SINK, dtypes.void, (UOp(Ops.STORE, dtypes.void, (counter, UOp.const(dtypes.index, 0),
                                                                           last)),))
    final = ExecItem(Kernel("E_scalar", final_sink, ()), LoweredKernel(final_sink, (), (), Counter()))
    return [interchanged, final]


def _zero(dtype):
    return False if dtype == dtypes.bool else 0.0 if dtype.is_float else 0
