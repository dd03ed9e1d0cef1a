"""The memory layout of a compiled program: which buffers its entry point takes, in which order, and where the
rest live. This is the calling convention shared by the renderers and the dispatcher; numfn.schedule.memory
makes it from a schedule and its memory plan (`make_layout`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numfn.dtype import DType
from numfn.ir.uop import Buffer

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

    @property
    def on_stack(self) -> dict[Buffer, int]:
        """The intermediates that live on the entry function's stack (see `on_stack_bytes`), with their bytes."""
        return {buf: on_stack_bytes(buf, dt) for buf, dt, _ in self.intermediates if on_stack_bytes(buf, dt)}

    @property
    def heap_arena_bytes(self) -> int:
        """The bytes of the arena the entry function allocates: none when every intermediate is on the stack."""
        stack = self.on_stack
        return self.arena_bytes if any(buf not in stack for buf, _, _ in self.intermediates) else 0


ON_STACK_BYTES = 64   # intermediates this small live on the program's stack instead of the arena


def on_stack_bytes(buf: Buffer, dt: DType) -> int:
    """The bytes of a stack slot for a small intermediate (a loop's counter, a carried scalar, one element read or
    written), 0 for one that lives in the arena. Both renderers put these on the entry function's stack: once the
    kernels are inlined into it, the compiler keeps their values in registers, where arena memory (the heap) would
    be loaded and stored at every step of a scalar loop."""
    nbytes = max(1, buf.size * dt.itemsize)
    if (buf.size > 1 or dt.is_complex) and nbytes <= 8:
        # several elements in at most 8 bytes: LLVM's SROA keeps such a slot as one integer (when it is copied
        # whole, as into an output), and its SLP vectorizer (LLVM 20 and 22) packs that integer's bytes wrongly
        # when they come from comparisons (a lane's sign extension reaches the lanes above: fuzz seed 52500012)
        return 0
    return nbytes if nbytes <= ON_STACK_BYTES else 0
