"""Python numbers the trace needs from traced values: sizes with no static bound ("value specialization").

NumPy sizes some results by values: np.zeros(x.max()), np.arange(int(x.sum())), np.repeat(x, counts),
np.bincount(x), np.linspace(0, 1, k). numfn compiles them in two passes. Where the trace needs a Python number
(a shape, arange's stop, repeat's total, bincount's length, int() of an array) and has a traced 0-d value,
`requested_value` stops the trace with a ValueRequest carrying that value's graph (a pure function of the
arguments as they are at entry: the graph is SSA, so writes into arguments later in the function do not change
it) and the checks recorded before it (so x[5] out of bounds raises IndexError first, as NumPy's does). The
NumericalFunction (numfn.function) compiles a small program computing just that value, runs it on the call's
arguments, and traces again inside `given_values(values)`: the k-th request of that trace is answered with
values[k], a Python int from then on. Each new value compiles its own specialization, once.

Interface: `requested_value(t, what, convert)` (the number, or a ValueRequest), `given_values` (the answers for
one trace), `ValueRequest`, `MAX_VALUE_ROUNDS`.
"""
from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from numfn.errors import NumfnError, TracerConversionError, user_location
from numfn.ir.uop import UOp
from numfn.trace.known import known_value
from numfn.trace.record import current_record

__all__ = ["ValueRequest", "given_values", "requested_value", "MAX_VALUE_ROUNDS", "python_item"]

MAX_VALUE_ROUNDS = 8   # values one function may ask for (each asks for one more trace and size program)

_state = threading.local()


class ValueRequest(BaseException):
    """Raised while tracing where a Python number is needed from traced `value` (a 0-d graph over the function's
    inputs): `convert` turns its computed 0-d array into that number (operator.index for a size, int for int(), ...),
    `what` names the construct, `where` is the user's line, `checks` the checks recorded before it (which the size
    program checks first). A BaseException: a user's `except Exception` around the line must not swallow it."""

    def __init__(self, value: UOp, convert: Callable[[np.ndarray], Any], what: str, where: str, checks: tuple):
        super().__init__(f"{what} needs a value computed by the function (at {where})")
        self.value, self.convert, self.what, self.where, self.checks = value, convert, what, where, checks

    def refusal(self, context: str) -> NumfnError:
        """The error where no second pass can answer the request (`context`: where the trace was made)."""
        return NumfnError(f"{self.what} needs a size or number computed from the arguments' values (at {self.where}), "
                          f"which numfn computes in a second pass only for a function called through numfn.jit, not "
                          f"{context}. Give the size as a Python int (a static argument) or a static bound")


class given_values:
    """Context manager for one trace of a NumericalFunction: the answers to its value requests, in trace order.
    Nested traces (a jitted function's own trace while its caller is traced) have their own."""

    def __init__(self, values: tuple):
        self.values = values

    def __enter__(self) -> None:
        self.previous = getattr(_state, "frame", None)
        _state.frame = [self.values, 0]

    def __exit__(self, *exc) -> None:
        _state.frame = self.previous


def python_item(a: np.ndarray) -> Any:
    """A 0-d array's value as a Python number (what NumPy's functions read from NumPy scalars)."""
    return np.asarray(a).reshape(()).item()


def requested_value(t: Any, what: str, convert: Callable[[np.ndarray], Any] = operator.index) -> Any:
    """The Python number `convert(value of t)` for a traced 0-d array `t` (a Tensor): computed now when the trace
    knows it, else the answer of this trace's next value request, else a ValueRequest stops the trace (answered by
    the next one). Inside a native loop or branch, whose values change from one iteration or path to the next, it
    refuses with the rewrite; outside a NumericalFunction's trace (vmap, grad) it refuses too."""
    uop: UOp = t.uop
    if uop.shape != ():
        raise TypeError(f"only integer scalar arrays can be converted to a scalar index (at {user_location()})")
    known = known_value(uop)
    if known is not None: return convert(known)
    frame = getattr(_state, "frame", None)
    record = current_record()
    if frame is None or record is None:
        raise TracerConversionError(
            f"{what} needs the value of a traced array, which numfn computes in a second pass only for a function "
            f"called through numfn.jit (at {user_location()}): give the size as a Python int or a static argument")
    if record.born is not None:   # in a loop body or branch (numfn.trace.control)
        raise TracerConversionError(
            f"{what} needs a size computed from values inside a compiled loop or branch (at {user_location()}), where "
            "it may change from one iteration or path to the next: compute the size before the loop (or branch) "
            "and create the array there, or give a static bound (a Python int)")
    values, k = frame
    frame[1] = k + 1
    if k < len(values): return values[k]
    if k >= MAX_VALUE_ROUNDS:
        raise NumfnError(f"{what} (at {user_location()}) is the {k + 1}th size this function computes from values: "
                         f"numfn compiles at most {MAX_VALUE_ROUNDS} per function (each one costs a pass). Compute "
                         "fewer sizes from values, or pass them as static arguments")
    raise ValueRequest(uop, convert, what, user_location(), tuple(record.checks))
