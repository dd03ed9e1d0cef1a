"""Checks of a counted loop computed before it, for every iteration at once.

A check in a loop body (an index out of bounds, `int()` of NaN: numfn.trace.record.Check) is loop state: whether it
failed so far and its payload, and the loop stops at the first failure (numfn.trace.control._while_region). In a
scalar loop that costs more than the work: `for v in data: counts[int(v)] += 1` spends about 45 instructions an
element on its checks against 6 on the work, and the early exit keeps LLVM from unrolling.

Where a check reads nothing the loop changes (only the loop's counter and values from outside the loop), it is
the same function of the counter in every run of the loop, so it is evaluated before the loop for every value the
counter takes, in one vectorized pass (the table of primitives' batching rules: numfn.ir.batching): the first
failing iteration `first` and its payload. The loop then runs to iteration `first` at most (it still runs that one,
as before: the iteration that fails runs to its end and the loop stops after it), and the check is raised after
the loop when the loop got there (another check may have stopped it earlier).

Only loops whose iterations are all known before they start qualify: a counter from `lo` by a constant `step`,
`count` iterations, and no other way out (a `break` would make the pass do work for iterations that never run)."""
from __future__ import annotations

from dataclasses import dataclass

from numfn.dtype import dtypes
from numfn.ir.batching import NoBatchingRule, batched
from numfn.ir.uop import ELEMENTWISE, MOVEMENT, Ops, UOp, toposort
from numfn.trace.record import Check
from numfn.trace.tensor import Tensor, gather

I64 = dtypes.int64

# ops a hoisted check may compute from the counter: cheap for every iteration at once
_CHEAP = ELEMENTWISE | MOVEMENT | {Ops.GATHER, Ops.CONST, Ops.IOTA}


@dataclass(frozen=True)
class Counter:
    """A loop's counter: state value `index` starts at `lo` and goes up by `step` (nonzero) in each of the loop's
    `count` iterations; nothing else ends the loop."""
    index: int
    lo: int
    step: int
    count: int


def hoistable(check: Check, tag: int, counter: UOp) -> bool:
    """Whether `check` reads no placeholder of the loop `tag` but the counter's, and computes from it cheap ops
    only."""
    reads_counter: set[UOp] = set()
    for u in toposort([check.failed, check.payload]):
        if u.op is Ops.CARRY and u.arg[0] == tag:
            if u is not counter: return False
            reads_counter.add(u)
        elif any(s in reads_counter for s in u.src):
            if u.op not in _CHEAP: return False
            reads_counter.add(u)
    return True


@dataclass(frozen=True)
class Hoisted:
    """A check evaluated for every iteration: the first failing iteration (`count` where none fails), the
    counter's value there (`at`), and the payload there."""
    first: Tensor
    at: Tensor
    payload: Tensor


def hoist(check: Check, counter_ph: UOp, c: Counter) -> Hoisted | None:
    """`check` evaluated for every value of the counter (None where an op on the way has no batching rule)."""
    values = UOp.iota(c.count).alu(Ops.MUL, UOp.const_like(I64, c.step, (c.count,))).alu(
        Ops.ADD, UOp.const_like(I64, c.lo, (c.count,)))
    try:
        (f, fb), (p, pb) = batched([check.failed, check.payload], {counter_ph: (values, True)}, c.count)
    except NoBatchingRule:
        return None
    # (a check that does not read the counter is the same in every iteration)
    failed = Tensor(f.cast(dtypes.bool) if fb else f.cast(dtypes.bool).reshape((1,)).expand((c.count,)))
    payload = Tensor(p.cast(I64) if pb else p.cast(I64).reshape((1,)).expand((c.count,)))
    first = Tensor(failed.uop.alu(Ops.WHERE, UOp.iota(c.count), UOp.const_like(I64, c.count, (c.count,)))).min()
    at = first * c.step + c.lo
    return Hoisted(first, at, gather(payload, [first.clip(0, c.count - 1)]))


def still_going(counter: Tensor, stops: list[Hoisted], step: int) -> Tensor:
    """Whether the loop goes on at the counter's value: not past the first iteration where a hoisted check fails
    (one compare in the loop against the nearest such iteration, found before it)."""
    limit = stops[0].at
    for h in stops[1:]:
        nearer = h.at < limit if step > 0 else h.at > limit
        limit = Tensor(nearer.uop.alu(Ops.WHERE, h.at.uop, limit.uop))
    return counter <= limit if step > 0 else counter >= limit


def failed_after(h: Hoisted, last: Tensor, c: Counter) -> Tensor:
    """Whether the loop ran the iteration where `h` first fails: some iteration failed, and the counter's final
    value `last` is past it (the loop may have stopped before, at a check of its own)."""
    return (h.first < c.count) & ((last > h.at) if c.step > 0 else (last < h.at))
