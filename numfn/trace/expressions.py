"""What converted expressions call: `x if c else y`, `a and b`, `a or b`, `not a` and chained comparisons
(`0 < s < 1`) on traced values (numfn.trace.convert rewrites them into calls of these, handing each operand that
Python evaluates lazily as a thunk).

On Python values each is Python's own. On a traced condition:
- as a value (`y = x if s > 0 else -x`, `return s or 5.0`), Python's semantics: `a and b` is `b if a else a`,
  `a or b` is `a if a else b`, `x if c else y` one of its sides, `not a` a bool; only the chosen side runs, as a
  branch of the program (numfn.trace.control.cond). Where both sides are `pure` (the converter's judgement of
  their source: names, constants, attributes and operators, no calls or subscripts) and tracing them made no
  check (a Python int overflow, a division by zero), they are both computed and one is selected (np.where),
  which costs no branch; a select needs one shape for both sides, else the branch runs (and says so).
- as a test (`if a and b:`, `while 0 < i < n:`), only the truth matters: pure operands are combined elementwise
  (`&`, `|`), others by a branch, so `i < n and x[i] > 0` never reads x[i] when i < n does not hold.

The truth of a traced value is NumPy's: a value of one element tests that element, any other size raises
ValueError as ndarray.__bool__ does.
"""
from __future__ import annotations

import operator
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from numfn.trace.tensor import Tensor, numpy_function
from numfn.trace.record import recording_trace, tracing
from numfn.trace.control import cond

Thunk = Callable[[], Any]


def truth(x: Tensor) -> Tensor:
    """The 0-d bool a traced value has as a Python bool (NumPy's ValueError for a size other than one)."""
    t = Tensor.lift(x)
    if t.size != 1:
        if t.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use `array.size > 0` to check that "
                             "an array is not empty.")
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
    return t.reshape(()).astype(np.bool_)


def _pure_values(thunks: Sequence[Thunk]) -> list | None:
    """The thunks' values when computing them all made no check and each is an array or number; else None (the
    caller then computes only the one chosen, in a branch)."""
    if not tracing(): return None
    with recording_trace(region=True) as rec:
        values = [th() for th in thunks]
    if rec.checks or rec.rebinds: return None
    if not all(isinstance(v, (Tensor, bool, int, float, complex, np.generic)) for v in values): return None
    if any(isinstance(v, Tensor) and v.runtime_length for v in values): return None
    return values


def _select(c: Tensor, a: Any, b: Any) -> Any:
    """c ? a : b for two computed values of one shape (None when their shapes differ: the caller branches)."""
    ta, tb = Tensor.lift(a), Tensor.lift(b)
    if ta.shape != tb.shape: return None
    return numpy_function("where")(c, ta, tb)


def choose(c: Tensor, then: Thunk, orelse: Thunk, pure: bool) -> Any:
    """then() if c else orelse() for a traced 0-d bool c: a select of both when pure, else a branch."""
    if pure:
        values = _pure_values([then, orelse])
        if values is not None:
            out = _select(c, *values)
            if out is not None: return out
    return cond(c, then, orelse)


def ifexp(test: Any, then: Thunk, orelse: Thunk, pure: bool = False) -> Any:
    """`then() if test else orelse()`."""
    if not isinstance(test, Tensor): return then() if test else orelse()
    return choose(truth(test), then, orelse, pure)


def and_value(thunks: Sequence[Thunk], pure: bool = False) -> Any:
    """`a and b and ...` as a value: the first falsy operand, else the last."""
    value = thunks[0]()
    if len(thunks) == 1: return value
    if not isinstance(value, Tensor):
        return and_value(thunks[1:], pure) if value else value
    return choose(truth(value), lambda: and_value(thunks[1:], pure), lambda: value, pure)


def or_value(thunks: Sequence[Thunk], pure: bool = False) -> Any:
    """`a or b or ...` as a value: the first truthy operand, else the last."""
    value = thunks[0]()
    if len(thunks) == 1: return value
    if not isinstance(value, Tensor):
        return value if value else or_value(thunks[1:], pure)
    return choose(truth(value), lambda: value, lambda: or_value(thunks[1:], pure), pure)


def not_value(x: Any) -> Any:
    """`not x`: a bool (NumPy's np.bool_ of a traced value)."""
    if not isinstance(x, Tensor): return not x
    return ~truth(x)


def _test_of(x: Any) -> Any:
    return truth(x) if isinstance(x, Tensor) else x


def and_test(thunks: Sequence[Thunk], pure: bool = False) -> Any:
    """`a and b` where only its truth matters (an if or while test): pure operands combined by `&`."""
    value = _test_of(thunks[0]())
    for k, thunk in enumerate(thunks[1:], 1):
        if not isinstance(value, Tensor):
            if not value: return value
            value = _test_of(thunk())
            continue
        if pure: value = value & Tensor.lift(_test_of(thunk())).astype(np.bool_)
        else:
            rest = thunks[k:]
            return cond(value, lambda: Tensor.lift(_test_of(and_test(rest))).astype(np.bool_),
                        lambda: Tensor.lift(False))
    return value


def or_test(thunks: Sequence[Thunk], pure: bool = False) -> Any:
    """`a or b` where only its truth matters: pure operands combined by `|`."""
    value = _test_of(thunks[0]())
    for k, thunk in enumerate(thunks[1:], 1):
        if not isinstance(value, Tensor):
            if value: return value
            value = _test_of(thunk())
            continue
        if pure: value = value | Tensor.lift(_test_of(thunk())).astype(np.bool_)
        else:
            rest = thunks[k:]
            return cond(value, lambda: Tensor.lift(True),
                        lambda: Tensor.lift(_test_of(or_test(rest))).astype(np.bool_))
    return value


def not_test(x: Any) -> Any:
    return ~truth(x) if isinstance(x, Tensor) else not x


COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "is": operator.is_, "is not": operator.is_not, "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}


def chain(as_test: bool, pure: bool, left: Any, ops: Sequence[str], operands: Sequence[Thunk]) -> Any:
    """`left op0 b op1 c ...` (a comparison of more than two operands): `left op0 b and b op1 c and ...`, each
    operand computed once, and only while the comparisons so far hold."""
    right = operands[0]()
    result = COMPARISONS[ops[0]](left, right)
    if len(ops) == 1: return result
    rest = lambda: chain(as_test, pure, right, ops[1:], operands[1:])   # noqa: E731
    return (and_test if as_test else and_value)([lambda: result, rest], pure)
