"""`return` inside loops (numfn.trace.convert._Converter._return_flags): a flag, the value and a break, the value's
type learnt from the iteration that returns (numfn.trace.unbound.PENDING). Every program is compared with Python's
run of it on inputs that return at the first, a middle and the last iteration, or never; loops run more than four
iterations, so they are native loops, not unrolled."""
import numpy as np
import pytest

import numfn
from helpers import assert_same


def first_above(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            return i
    return -1


def newton_sqrt(a, t):   # a convergence test on a 0-d state; the fall-through returns the last iterate
    x = a * 0.0 + 1.0
    for it in range(40):
        dx = (x * x - a) / (2.0 * x)
        x = x - dx
        if abs(dx) < t * 1e-9:
            return x, it
    return x, -1


def first_negative_2d(m, t):   # nested loops: the inner loop's return leaves both
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] > t:
                return m[i, j] * 10.0 + i
    return -1.0


def while_search(x, t):
    i = 0
    while i < x.shape[0]:
        if x[i] > t:
            return x[i] - t
        i += 1
    return x[0] * 0.0


def array_result(x, t):   # returns an array (a row), and writes before returning
    acc = np.zeros(3)
    for i in range(x.shape[0]):
        acc = acc + x[i]
        if acc.sum() > t:
            return acc / (i + 1)
    return acc


def bare_return(x, t):   # `return` with no value; the writes before it reach the caller's array
    for i in range(x.shape[0]):
        if x[i] > t:
            return
        x[i] = -x[i]


def with_break_and_else(x, t):   # a return, a break and an else clause in one loop
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > t:
            return total
        if x[i] < -100.0:
            break
        total += x[i]
    else:
        total = total * 2.0
    return total + 1.0


def over_items(x, t):   # `for v in array` and enumerate
    for i, v in enumerate(x):
        if v > t:
            return v * i
    return x.sum()


def helper_search(x, t):   # a helper of the user's with a loop that returns: converted when called
    return _index_above(x, t) * 2


def _index_above(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            return i
    return x.shape[0]


PROGRAMS = [first_above, newton_sqrt, first_negative_2d, while_search, array_result, bare_return, with_break_and_else,
            over_items, helper_search]


def _data(fn, where: str):
    """Data whose values pass the threshold 10.0 at the first, a middle or the last iteration, or never."""
    if fn is newton_sqrt:   # converges at once, after a few iterations, after about 25, never (within 40)
        return np.float64({"first": 1.0, "middle": 2.0, "last": 1e12, "never": 1e30}[where])
    n = 24
    at = {"first": 0, "middle": 11, "last": n - 1, "never": None}[where]
    x = np.linspace(-2.0, 9.0, n)
    if at is not None: x[at] = 50.0
    if fn is first_negative_2d: return x.reshape(4, 6)
    if fn is array_result: return np.repeat(x[:, None], 3, axis=1) * 0.2
    return x


def _run(fn, x, t):
    try:
        return "value", fn(x, t), x
    except (ValueError, IndexError, OverflowError) as e:
        return type(e).__name__, str(e), x


@pytest.mark.parametrize("where", ["first", "middle", "last", "never"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_return_inside_a_loop_as_python(fn, where, backend):
    x = _data(fn, where)
    t = 10.0 if fn is not newton_sqrt else 1.0
    expected = _run(fn, np.copy(x), t)
    got = _run(numfn.jit(fn, backend=backend), np.copy(x), t)
    assert got[0] == expected[0], got
    if expected[1] is None: assert got[1] is None
    else: assert_same(got[1], expected[1], path="result")
    assert_same(got[2], expected[2], path="argument afterwards")


def test_the_loop_is_native():
    # the loop with a return compiles to one LOOP node whatever its length (it is not unrolled)
    from numfn.ir.uop import Ops
    for n in (40, 4000):
        nf = numfn.jit(first_above).specialize(np.zeros(n), 1.0)
        assert sum(u.op is Ops.LOOP and u.arg.kind == "while" for u in nf.function_graph.toposort()) == 1


def test_a_returned_value_of_another_shape_than_the_fall_through_is_an_error():
    def f(x):
        for i in range(x.shape[0]):
            if x[i] > 0:
                return x[:2]
        return x
    with pytest.raises(numfn.NumfnError, match="different shapes"):
        numfn.jit(f)(np.zeros(6))
