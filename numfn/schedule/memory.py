"""Memory planning: where each intermediate buffer of a schedule lives in one scratch arena.

`plan_memory(schedule)` takes a Schedule (numfn/schedule/items.py) and returns a `MemoryPlan`: each intermediate
Buffer's byte offset in the arena (ALIGNMENT-aligned), the arena's size, and the size without any reuse. A buffer
lives from the first step that touches it to the last (a loop's steps hold every buffer of the schedules inside it;
a loop's state buffer and its next buffer swap, so they live as long as each other). Buffers whose lifetimes do not
overlap may share bytes; buffers whose lifetimes overlap never do. Outputs, inputs and constants are not in the
arena: they are the caller's arrays or the program's constants, never reused.
Buffers are placed largest first, each at the lowest offset free throughout its lifetime.

`make_layout(call, schedule, memory)` then gives the program's calling convention (numfn.codegen.layout.Layout):
which buffers the entry point takes, in which order, which constants are embedded.
"""
from __future__ import annotations

from dataclasses import dataclass

from numfn.codegen.layout import EMBED_LIMIT_BYTES, Layout
from numfn.ir.uop import Buffer, UOp
from numfn.schedule.items import LoopKernel, Schedule, all_items

ALIGNMENT = 64   # every buffer starts at a multiple of this many bytes (a cache line)


@dataclass(frozen=True)
class MemoryPlan:
    """Where each intermediate buffer lives in one scratch arena: buffers whose lifetimes (from the kernel that
    writes them to the last kernel that reads them) do not overlap share bytes."""
    offsets: dict
    arena_bytes: int
    naive_bytes: int

    def __repr__(self) -> str:
        return f"MemoryPlan(arena={self.arena_bytes} bytes for {len(self.offsets)} intermediates, " \
               f"{self.naive_bytes} bytes without reuse)"


def plan_memory(items: Schedule) -> MemoryPlan:
    life: dict[Buffer, list[int]] = {}
    nbytes: dict[Buffer, int] = {}
    for step, ei in enumerate(items):
        for u in ei.kernel.buffers:
            if u.arg.category != "intermediate": continue
            life.setdefault(u.arg, [step, step])[1] = step
            nbytes[u.arg] = max(1, u.arg.size * u.dtype.itemsize)
    for ei in items:   # a loop's state buffer and its next one swap: after the loop either may hold the state
        if not isinstance(ei.kernel, LoopKernel): continue
        for cur, nxt in zip(ei.kernel.state, ei.kernel.next):
            if nxt is None or cur.arg not in life: continue
            span = [min(life[cur.arg][0], life[nxt.arg][0]), max(life[cur.arg][1], life[nxt.arg][1])]
            life[cur.arg] = life[nxt.arg] = span
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets = {}
    for buf in sorted(life, key=lambda b: (-nbytes[b], b.number)):
        first, last = life[buf]
        size = -(-nbytes[buf] // ALIGNMENT) * ALIGNMENT
        clashes = sorted((o, e) for o, e, f, l in placed if not (last < f or l < first))
        offset = 0
        for o, e in clashes:
            if offset + size <= o: break
            offset = max(offset, e)
        placed.append((offset, offset + size, first, last))
        offsets[buf] = offset
    arena = max((e for _, e, _, _ in placed), default=0)
    naive = sum(-(-n // ALIGNMENT) * ALIGNMENT for n in nbytes.values())
    return MemoryPlan(offsets, arena, naive)


def make_layout(call: UOp, schedule: Schedule, memory: MemoryPlan) -> Layout:
    """The calling convention of the program `call` is, scheduled as `schedule` with intermediates at `memory`."""
    used: dict[Buffer, UOp] = {}
    for ei in schedule:
        for u in ei.kernel.buffers: used.setdefault(u.arg, u)
    inputs = tuple((b.arg, b.dtype) for b in call.src[1:] if b.arg.category == "input")
    outputs = tuple((b, call.src[0].src[i].dtype) for i, b in enumerate(call.arg))
    consts = [(u.arg, u.dtype, u.arg.data) for u in call.src[1:] if u.arg.category == "constant" and u.arg in used]
    embedded = tuple(c for c in consts if c[2].nbytes <= EMBED_LIMIT_BYTES)
    pointer = tuple(c for c in consts if c[2].nbytes > EMBED_LIMIT_BYTES)
    inter = tuple(sorted(((b, used[b].dtype, off) for b, off in memory.offsets.items()), key=lambda t: t[0].number))
    written = frozenset(u.arg for ei in schedule for u in ei.kernel.outputs if u.arg.category == "input")
    externs = tuple(dict.fromkeys(s for ei in all_items(schedule) if ei.lowered is None
                                  and hasattr(ei.kernel, "symbols") for s in ei.kernel.symbols()))
    return Layout(outputs, inputs, embedded, pointer, inter, memory.arena_bytes, written, externs)
