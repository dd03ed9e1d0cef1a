"""The memory layout of a compiled program: which buffers its entry point takes, in which order, and where the
rest live. This is the calling convention shared by the renderers and the dispatcher."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numfn.dtype import DType
from numfn.schedule import MemoryPlan, Schedule, all_items
from numfn.ir.uop import Buffer, UOp

# Captured constants up to this size are embedded in the program as static arrays; larger ones are passed by
# pointer at every call (embedding them would make the source, and compile times, grow with the data).
EMBED_LIMIT_BYTES = 16 * 1024


@dataclass(frozen=True)
class Layout:
    """Entry point parameters: outputs, then inputs (every input slot, used or not), then pointer constants, then
    (for programs with extern calls) the externs table: the addresses of the `externs` symbols, in that order."""
    outputs: tuple[tuple[Buffer, DType], ...]
    inputs: tuple[tuple[Buffer, DType], ...]
    embedded_constants: tuple[tuple[Buffer, DType, np.ndarray], ...]
    pointer_constants: tuple[tuple[Buffer, DType, np.ndarray], ...]
    intermediates: tuple[tuple[Buffer, DType, int], ...]
    arena_bytes: int
    written_inputs: frozenset = frozenset()   # inputs the program writes into (the caller's arrays change)
    externs: tuple[str, ...] = ()


def make_layout(call: UOp, schedule: Schedule, memory: MemoryPlan) -> Layout:
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
