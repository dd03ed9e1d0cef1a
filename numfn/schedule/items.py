"""What a schedule is: the steps of a program in execution order, as the scheduler hands them to the rest of numfn.

A `Schedule` is a tuple of `ExecItem`s, each one step of the program:
  - a `Kernel`: one loop nest storing realized values (SINK of STOREs into BUFFERs), with its lowered form;
  - an `ExternKernel`: a call of a native routine (numfn/ir/extern.py) on buffers, with offsets and strides;
  - a `LoopKernel`: a loop or a branch whose condition and bodies are schedules of their own.
Every step names its buffers: `outputs` (written) then `inputs` (read), in a fixed order (`CATEGORY_ORDER`, then
the buffer's number), which is the order of a kernel's parameters. `all_items` flattens the schedules inside loops
and branches; `program_steps` is the outline (loops and branches around item numbers) the renderers follow.

Guarantees to the stages after scheduling (numfn/codegen/layout.py, numfn/function.py, numfn/schedule/memory.py):
a step runs after every step that writes a buffer it reads, and a buffer's versions are written in program order
(see numfn/schedule/versions.py).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from numfn.codegen.lower import LoweredKernel
from numfn.ir.extern import ROUTINES, ExternCall
from numfn.ir.uop import ALU, Buffer, Ops, UOp, toposort
from numfn.schedule.realize import GCD_COST

# the order of a kernel's parameters among the buffers it reads (then by number)
CATEGORY_ORDER = {"output": 0, "intermediate": 1, "input": 2, "constant": 3}


@dataclass(frozen=True)
class Kernel:
    """One loop nest: `ast` is SINK(STORE(BUFFER, value[, gate]), ...) with every value of shape `shape` (a gate, of
    that shape too, says where the value is stored)."""
    name: str
    ast: UOp
    shape: tuple[int, ...]

    @property
    def outputs(self) -> tuple[UOp, ...]:
        return tuple(dict.fromkeys(st.src[0] for st in self.ast.src))

    @property
    def inputs(self) -> tuple[UOp, ...]:
        outs = set(self.outputs)
        found = [u for u in toposort([self.ast]) if u.op is Ops.BUFFER and u not in outs and u.arg.size]
        return tuple(sorted(found, key=lambda u: (CATEGORY_ORDER[u.arg.category], u.arg.number)))

    @property
    def buffers(self) -> tuple[UOp, ...]:
        """Kernel parameters in order: buffers written, then buffers read."""
        return self.outputs + self.inputs


@dataclass(frozen=True)
class ExternKernel:
    """An extern call in a schedule: the EXTERN node, its results' buffers, and per input the buffer it is read
    from with offset and strides (None for in-out inputs: the routine works in the result's buffer)."""
    name: str
    node: UOp
    results: tuple[UOp, ...]
    operands: tuple[tuple[UOp, int, tuple[int, ...]] | None, ...]
    shape: tuple[int, ...] = ()

    @property
    def call(self) -> ExternCall:
        return self.node.arg

    @property
    def outputs(self) -> tuple[UOp, ...]:
        return tuple(dict.fromkeys(self.results))

    @property
    def inputs(self) -> tuple[UOp, ...]:
        outs = set(self.outputs)
        found = {op[0] for op in self.operands if op is not None and op[0] not in outs}
        return tuple(sorted(found, key=lambda u: (CATEGORY_ORDER[u.arg.category], u.arg.number)))

    @property
    def buffers(self) -> tuple[UOp, ...]:
        return self.outputs + self.inputs

    def symbols(self) -> tuple[str, ...]:
        """The library symbols this call uses."""
        routine = ROUTINES[self.call.routine]
        if routine.library in ("native", "python"): return routine.names(self.call)   # (python: callbacks)
        from numfn.runtime import blas
        iface = blas.interface()
        assert iface is not None, "a program calling BLAS/LAPACK is only built where it was found"
        return tuple(iface.fortran(n) for n in routine.names(self.call))

    @property
    def flops(self) -> int:
        return ROUTINES[self.call.routine].flops(self.call)


@dataclass(frozen=True)
class LoopKernel:
    """A loop or branch of the program (numfn.trace.control.Region), as a step of a schedule. While loops: `inits` were
    written into the state buffers (`state`, the homes of the LOOP's results) before it; each iteration runs
    `cond` (which writes the bool `flag`), then `body`, which writes each state value in place or into its `next`
    buffer; then each state buffer and its next buffer swap (pointers). Branches: the int64 `flag` (the index)
    picks one of `bodies`, which writes the results into `state`. `reads`: the captured values' buffers.

    `cond` and `bodies` are scheduled when first asked for (`parts` makes them): the scheduler's rounds make a
    LoopKernel for every numbering of the buffers around the loop they try, and only the last round's are run, so
    scheduling the inside of each would repeat a loop body's whole schedule once per round (rk4's body: 9 times,
    3 of its 4 seconds)."""
    name: str
    kind: str
    state: tuple[UOp, ...]
    next: tuple[UOp | None, ...]
    flag: UOp
    reads: tuple[UOp, ...]
    parts: Callable[[], tuple[Schedule | None, tuple[Schedule, ...]]] = field(compare=False, repr=False)
    shape: tuple[int, ...] = ()

    def _parts(self) -> tuple[Schedule | None, tuple[Schedule, ...]]:
        made = self.__dict__.get("_made")
        if made is None: made = self.__dict__["_made"] = self.parts()   # (frozen: its own memo, set once)
        return made

    @property
    def cond(self) -> Schedule | None:
        return self._parts()[0]

    @property
    def bodies(self) -> tuple[Schedule, ...]:
        return self._parts()[1]

    @property
    def schedules(self) -> tuple[Schedule, ...]:
        return ((self.cond,) if self.cond is not None else ()) + self.bodies

    @property
    def outputs(self) -> tuple[UOp, ...]:
        return tuple(dict.fromkeys((*self.state, *(n for n in self.next if n is not None))))

    @property
    def inputs(self) -> tuple[UOp, ...]:
        outs = set(self.outputs)
        return tuple(dict.fromkeys(u for u in (*self.reads, self.flag) if u not in outs))

    @property
    def buffers(self) -> tuple[UOp, ...]:
        """Every buffer the loop touches, its kernels' intermediates included (they live while it runs)."""
        inner = [u for sched in self.schedules for ei in sched for u in ei.kernel.buffers]
        return tuple(dict.fromkeys((*self.outputs, *self.inputs, *inner)))

    @property
    def flops(self) -> int:
        return sum(ei.op_count for sched in self.schedules for ei in sched)


@dataclass(frozen=True)
class ExecItem:
    """A kernel and the program buffers bound to its parameters; or an extern call (ExternKernel, with `lowered`
    None), or a loop or branch (LoopKernel, `lowered` None)."""
    kernel: Kernel | LoopKernel | ExternKernel
    lowered: LoweredKernel | None

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        return tuple(u.arg for u in self.kernel.buffers)

    @property
    def op_count(self) -> int:
        """ALU operations the kernel executes (a reduction counts one per element it combines, a GCD GCD_COST); for
        an extern call, the routine's floating-point operations."""
        if self.lowered is None:
            assert not isinstance(self.kernel, Kernel)   # a Kernel always has its lowered form
            return self.kernel.flops
        return sum(c * (u.src[0].size // max(u.size, 1) if u.op is Ops.REDUCE_AXIS else GCD_COST if u.op is Ops.GCD
                        else 1)
                   for u, c in self.lowered.evaluations.items() if u.op in ALU or u.op is Ops.REDUCE_AXIS)

    @property
    def bytes_moved(self) -> int:
        return sum(u.arg.size * u.dtype.itemsize for u in self.kernel.buffers)


class Schedule(tuple):
    """The kernels of a program in execution order (a tuple of ExecItems) that prints as a table."""

    def __str__(self) -> str:
        rows = [("kernel", "shape", "writes", "reads", "ops", "bytes")]
        for ei in self:
            k = ei.kernel
            rows.append((k.name, "x".join(map(str, k.shape)) or "()", " ".join(repr(u.arg) for u in k.outputs),
                         " ".join(repr(u.arg) for u in k.inputs) or "-", str(ei.op_count), _fmt_bytes(ei.bytes_moved)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Schedule({len(self)} kernels)\n{self}"


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB": return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def all_items(items) -> list[ExecItem]:
    """The items of a schedule and of the schedules inside its loops and branches, in program order."""
    out = []
    for ei in items:
        out.append(ei)
        if isinstance(ei.kernel, LoopKernel):
            for sched in ei.kernel.schedules: out += all_items(sched)
    return out


def program_steps(items, index: dict) -> list:
    """The outline renderers follow: each item as its number in the flat kernel list (`index`: ExecItem -> int), a
    loop as ("loop", LoopKernel, (cond steps, body steps)), a branch as ("branch", LoopKernel, (steps per branch)).
    `index` is keyed by the items' ids."""
    out: list = []
    for ei in items:
        k = ei.kernel
        if isinstance(k, LoopKernel):
            parts = tuple(program_steps(s, index) for s in k.schedules)
            out.append(("loop" if k.kind == "while" else "branch", k, parts))
        else: out.append(index[id(ei)])
    return out
