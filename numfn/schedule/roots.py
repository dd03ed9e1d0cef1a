"""The scheduler's working state: a Root per value it stores, and the copies it makes of values.

A `Root` is a value that gets a buffer ("realized"): its `targets` are the buffers its kernel stores it into (the
first is its home, where readers load it from), `outputs` the function's output buffers holding it. The parts of
the scheduler add roots (numfn/schedule/scheduler.py: outputs, scans, `.contiguous()` and values the fusion rule
realizes; versions.py: writes and the memory they overwrite; regions.py and externs.py: what loops and extern calls
read and write), and kernels.py gives each a home and groups them into kernels. `copy_of(value, tag)` is a copy of
a value in memory of its own (a CONTIGUOUS the tag keeps apart from other copies of it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from numfn.ir.uop import Ops, UOp, toposort

@dataclass
class Root:
    """A value the scheduler stores (see the module's docstring)."""
    value: UOp
    outputs: list = field(default_factory=list)   # the function's output BUFFERs holding this value
    targets: list = field(default_factory=list)   # where its kernel stores it (planned; the first is its home)
    alias: UOp | None = None   # an extern call's in-out input: stored into the home of this RESULT
    keep: bool = False         # never dropped: stored for a write in place (write_hazard), or a loop's state
    last: bool = False         # its kernel runs after every other (it writes an argument's memory back)
    gate: UOp | None = None    # stored only where this holds (the only reader, a gated write, needs no more)


def copy_of(u: UOp, tag) -> UOp:
    """A copy of `u` in memory of its own: CONTIGUOUS(u) with a tag that keeps two copies of one value apart (each
    is written in place by its own chain of writes)."""
    if u.op is Ops.EMPTY: return UOp(Ops.EMPTY, u.dtype, (), (u.arg[0], ("copy", tag)))   # nothing to copy
    return UOp(Ops.CONTIGUOUS, u.dtype, (u,), ("copy", tag))


def is_copy(u: UOp) -> bool:
    return u.op is Ops.CONTIGUOUS and isinstance(u.arg, tuple) and u.arg[0] == "copy"


def chain_down(u: UOp):
    """The writes (SCATTERs) of a chain of versions, from `u` down to the first write."""
    while u.op is Ops.SCATTER:
        yield u
        u = u.src[0]


def alone(u: UOp) -> bool:
    """Roots that get a kernel of their own: a scan walks its axis in order, a scatter writes at computed places;
    memory whose values do not matter (EMPTY) gets no kernel at all."""
    return u.op in (Ops.SCAN, Ops.SCATTER, Ops.EMPTY)


def parents_of(graph: UOp) -> dict[UOp, list[UOp]]:
    """Every node of `graph` mapped to the nodes that read it."""
    out: dict[UOp, list[UOp]] = {}
    for u in toposort([graph]):
        for s in u.src: out.setdefault(s, []).append(u)
    return out
