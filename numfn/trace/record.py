"""What tracing a function records besides its graph (per thread: threads may trace at once): the checks made
after every call, the ranges of Python-int arguments, the inputs written into, and (inside loops and branches,
numfn.trace.control) the arrays a region gives new values. numfn.trace.tensor builds on it (add_check, the tracer's arrays)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from numfn.dtype import DType, dtypes
from numfn.ir.uop import UOp

__all__ = ["Check", "TraceRecord", "current_record", "record_int_limit", "recording_trace", "observing_rebinds",
           "new_region_tag", "tracing", "note_links", "drop_links"]

_trace_state = threading.local()


@dataclass
class Check:
    """A condition checked after every call: where `failed` (a bool array computed by the program) holds, the call
    raises `error(payload)` with the payload (an int64 array of failed's shape) at the first failed position. This
    is how errors NumPy raises for values (an index out of bounds, a singular matrix) reach the caller."""
    failed: UOp
    payload: UOp
    error: Callable[[int], BaseException]


@dataclass
class TraceRecord:
    """`int_limits`: {argument slot: (min, max)} for Python-int arguments converted to narrower integers (NumPy
    raises OverflowError for values outside, and so does the dispatcher); `checks`: the Checks in trace order."""
    int_limits: dict = field(default_factory=dict)
    int_types: dict = field(default_factory=dict)   # {slot: the integer types of those conversions, in trace order}
    checks: list = field(default_factory=list)
    mutated: list = field(default_factory=list)   # input slots written into (see NumericalFunction.mutated_inputs)
    cut: list = field(default_factory=list)       # outputs of run-time length (see NumericalFunction.cut_outputs)
    # inside a loop body or a branch (numfn.trace.control): the arrays it gives a new value, {id: (array, value before)}
    rebinds: dict | None = None
    born: set | None = None   # inside a region: the arrays made in it (writes into them are the region's own)
    # inside a region: the arrays from outside it that a branch in it linked (numfn.trace.branch_views), {id: (array,
    # its links before)}; the links are the region's own, dropped after each trace of it
    links: dict | None = None
    regions: list = field(default_factory=lambda: [0])   # regions traced so far, shared by nested records
    parent: TraceRecord | None = None   # a region's: the enclosing record
    # run-time callbacks made so far (their serial numbers), and per region tag the count when it began: a callback
    # numbered from there on was made inside the region (numfn/trace/callback.py); shared by nested records
    effects: list = field(default_factory=lambda: [0])
    effect_starts: dict = field(default_factory=dict)


def record_int_limit(slot: int, dt: DType) -> None:
    """Python-int argument `slot` is converted to the integer type `dt`: the dispatcher checks its range."""
    record = getattr(_trace_state, "record", None)
    if record is None: return
    lo, hi = record.int_limits.get(slot, (dtypes.int64.min, dtypes.int64.max))
    record.int_limits[slot] = (max(lo, dt.min), min(hi, dt.max))
    record.int_types.setdefault(slot, []).append(dt)


def current_record() -> TraceRecord | None:
    """The record of the trace (or region) under way in this thread, or None outside a trace."""
    return getattr(_trace_state, "record", None)


class recording_trace:
    """Context manager active while a function is traced: yields its TraceRecord. `region=True` records a loop body
    or branch inside a trace: its own checks and the arrays it rebinds, the argument limits shared with the
    enclosing record."""

    def __init__(self, region: bool = False):
        self.region = region

    def __enter__(self) -> TraceRecord:
        self.previous = getattr(_trace_state, "record", None)
        record = TraceRecord()
        if self.region:
            if self.previous is None: raise RuntimeError("a region is traced inside a trace")
            record.int_limits, record.regions, record.rebinds = self.previous.int_limits, self.previous.regions, {}
            record.int_types = self.previous.int_types
            record.effects, record.effect_starts = self.previous.effects, self.previous.effect_starts
            record.born, record.links = set(), {}
            record.parent = self.previous
        _trace_state.record = record
        return record

    def __exit__(self, *exc) -> None:
        born = _trace_state.record.born
        _trace_state.record = self.previous
        if born and self.previous is not None and self.previous.born is not None: self.previous.born |= born


def note_links(t) -> None:
    """`t`'s links (Tensor._links) are about to change: inside a region, remember them if `t` is from outside it."""
    record = getattr(_trace_state, "record", None)
    if record is not None and record.links is not None and id(t) not in (record.born or ()):
        record.links.setdefault(id(t), (t, t._links))


def drop_links(saved: dict | None) -> None:
    """The links a region's trace made to arrays from outside it undone (`saved`: its TraceRecord.links)."""
    for t, old in (saved or {}).values(): t._links = old


class observing_rebinds:
    """Context manager: yields a dict that collects the arrays rebound (written) while it is active, as a region's
    record does, while checks and everything else still go to the current record."""

    def __enter__(self) -> dict:
        self.record = _trace_state.record
        self.outer = self.record.rebinds
        self.record.rebinds = {}
        return self.record.rebinds

    def __exit__(self, *exc) -> None:
        seen, self.record.rebinds = self.record.rebinds, self.outer
        if self.outer is not None:   # an enclosing region keeps each array's value from before it began
            for k, v in seen.items(): self.outer.setdefault(k, v)


def new_region_tag() -> int:
    """A number for a new loop or branch region of the function being traced (its placeholders carry it)."""
    record = _trace_state.record
    counter = record.regions
    counter[0] += 1
    record.effect_starts[counter[0]] = record.effects[0]
    return counter[0]


def new_effect_serial() -> int:
    """The serial number of a new run-time callback of the function being traced (see TraceRecord.effects)."""
    counter = _trace_state.record.effects
    counter[0] += 1
    return counter[0]


def effects_since(tag: int) -> int | None:
    """The serial number from which run-time callbacks were made inside region `tag`; None when none was (the
    common case: nothing to look for)."""
    record = getattr(_trace_state, "record", None)
    if record is None: return None
    start = record.effect_starts.get(tag, 0) + 1
    return start if record.effects[0] >= start else None


def tracing() -> bool:
    """Whether this thread is tracing a function."""
    return getattr(_trace_state, "record", None) is not None


class left_to_python:
    """Context manager around a statement converted code leaves to Python (numfn.trace.convert: a loop with a
    `return` inside runs as Python, unrolled): a traced value that must decide something in it (`if x[0] > 0:`)
    cannot, and the error says which statement and why (`python_statement_note`)."""

    def __init__(self, why: str, line: int):
        self.why, self.line = why, line

    def __enter__(self):
        stack = getattr(_trace_state, "python_statements", None)
        if stack is None: stack = _trace_state.python_statements = []
        stack.append(self)

    def __exit__(self, *exc):
        _trace_state.python_statements.pop()


def python_statement_note() -> str:
    """For an error about a traced value used as a Python value: which enclosing statement runs as Python, and why
    (empty outside such statements)."""
    stack = getattr(_trace_state, "python_statements", None)
    if not stack: return ""
    s = stack[-1]
    return (f" The statement at line {s.line} runs as Python, so traced values cannot decide anything in it: "
            f"{s.why}.")
