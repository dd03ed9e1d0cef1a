"""`raise` and `assert` that a traced value decides (numfn.trace.statements.raise_ and run_if): the side of the
branch that raises becomes a check, raised after the call where that side is taken; the other side runs. Each
program is compared with Python's run of it on inputs that raise and inputs that do not: the same result, or an
exception of the same type and message (an f-string's one traced number is formatted at run time; with more, they
show as placeholders).

PYTEST_DONT_REWRITE: the programs' own asserts are under test, so pytest must leave their messages as Python's."""
import numpy as np
import pytest

import numfn
from helpers import assert_same


def validate_total(x):
    if x.sum() < 0:
        raise ValueError("negative total")
    return x * 2


def raise_in_else(x):
    if x.min() >= 0:
        y = np.sqrt(x)
    else:
        raise ValueError("negative entries")
    return y + 1


def assert_with_message(x):
    assert np.all(x < 100), "values must stay below 100"
    return x - 1


def assert_without_message(x):
    assert x.max() < 100
    return x - 1


def raise_in_loop(x):   # the check is in the loop: the first bad element raises
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] >= 100:
            raise OverflowError("an element reached 100")
        total += x[i]
    return total


def nested(x):
    s = x.sum()
    if s > 0:
        if x.max() >= 100:
            raise ValueError("too large")
        s = s * 2
    return s


def every_side_raises(x):   # the branch always raises; which exception is decided by the data
    if x.sum() > 0:
        raise ValueError("positive")
    else:
        raise KeyError("not positive")
    return x


def in_a_helper(x):   # a helper of the user's that validates its argument
    return _checked(x) + 1


def _checked(x):
    if np.any(np.isnan(x)):
        raise FloatingPointError("NaN in input")
    return x


def message_with_index(x):   # one traced number in the message: its run-time value
    for i in range(x.shape[0]):
        if x[i] >= 100:
            raise IndexError(f"element {i} is out of range")
    return x


def message_with_value(x):
    for i in range(x.shape[0]):
        if x[i] >= 100:
            raise ValueError(f"{x[i]:.1f} is too large")
    return x


def _inputs(fn):
    good = np.linspace(0.0, 9.0, 30)   # (loops over it are native: longer than numfn's unroll limit)
    bad_middle = good.copy()
    bad_middle[17] = 150.0
    if fn is validate_total: return [good, -good]
    if fn is raise_in_else: return [good, good - 5]
    if fn is in_a_helper: return [good, np.where(good > 4, np.nan, good)]
    if fn is every_side_raises: return [good, -good]
    return [good, bad_middle]


def _outcome(fn, x):
    try:
        return "value", fn(x)
    except (ValueError, KeyError, AssertionError, OverflowError, FloatingPointError, IndexError) as e:
        return type(e).__name__, str(e)


PROGRAMS = [validate_total, raise_in_else, assert_with_message, assert_without_message, raise_in_loop, nested,
            every_side_raises, in_a_helper, message_with_index, message_with_value]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_raise_decided_by_a_traced_value(fn, backend):
    jf = numfn.jit(fn, backend=backend)
    outcomes = []
    for x in _inputs(fn):
        expected, got = _outcome(fn, x.copy()), _outcome(jf, x.copy())
        assert got[0] == expected[0], (got, expected)
        if expected[0] == "value": assert_same(got[1], expected[1])
        else: assert got[1] == expected[1]
        outcomes.append(expected[0])
    assert len(jf.specializations) == 1   # one program decides at run time, for every input
    assert fn is every_side_raises or outcomes[0] == "value" and outcomes[1] != "value"   # (the inputs test both)


def test_a_raise_in_a_python_branch_is_python():
    def f(x, strict):
        if strict and x.shape[0] > 3:   # Python values: Python's raise while tracing
            raise ValueError("too long")
        return x
    with pytest.raises(ValueError, match="too long"):
        numfn.jit(f, static_argnums=1)(np.zeros(5), True)
    assert numfn.jit(f, static_argnums=1)(np.zeros(5), False).shape == (5,)


def test_a_users_except_still_catches_python_raises():
    def f(x):
        try:
            raise KeyError("k")
        except KeyError:
            pass
        return x + 1
    np.testing.assert_array_equal(numfn.jit(f)(np.zeros(2)), [1.0, 1.0])


def test_a_message_with_two_traced_values_names_them_as_placeholders():
    def f(x):
        for i in range(x.shape[0]):
            if x[i] >= 100:
                raise ValueError(f"{x[i]} at {i}")
        return x
    x = np.arange(30.0)
    x[25] = 200.0
    with pytest.raises(ValueError, match="traced"):
        numfn.jit(f)(x)
    np.testing.assert_array_equal(numfn.jit(f)(np.arange(30.0)), np.arange(30.0))


def test_a_validation_loop_is_one_native_loop():
    # a loop whose only traced work is a check (no state, no writes) was unrolled, one copy per element
    from numfn.ir.uop import Ops
    for n in (30, 5000):
        nf = numfn.jit(raise_in_loop).specialize(np.zeros(n))
        assert sum(u.op is Ops.LOOP and u.arg.kind == "while" for u in nf.function_graph.toposort()) == 1

    def validate(x):
        for i in range(x.shape[0]):
            if x[i] < 0:
                raise ValueError("negative")
        return x
    nf = numfn.jit(validate).specialize(np.zeros(5000))
    assert sum(u.op is Ops.LOOP and u.arg.kind == "while" for u in nf.function_graph.toposort()) == 1
    bad = np.arange(5000.0)
    bad[4321] = -1.0
    with pytest.raises(ValueError, match="negative"):
        numfn.jit(validate)(bad)


# NumPy's own errors on a side that a traced value decides (an index past the end, a view a 0-d array has not, shapes
# that do not broadcast): NumPy raises them only where that side runs, so numfn does too (a check, as for `raise`)
def guarded_index(x):
    y = x * 2
    if x.sum() > 100:
        y = x[10] + y
    return y


def guarded_reverse_of_0d(x, s):
    v = x + 1
    if s.sum() > 0:
        v = x[::-1]
    return v


def guarded_broadcast(a, b):
    y = a * 1
    if a.max() > 5:
        y = a + b
    return y


def guarded_in_a_loop(x, n):   # the side in a native loop: raised at the iteration that takes it
    y = x * 1
    for i in range(n):
        if x[i % 5] > 50:
            y = y + x[10]
    return y


def guarded_every_side(x):   # both sides fail: which error is decided by the data
    if x.sum() > 0:
        y = x[7]
    else:
        y = x.reshape(3, 3)
    return y


NUMPY_ERROR_CASES = [
    (guarded_index, [(np.arange(5.0),), (np.arange(5.0) * 100,)]),
    (guarded_reverse_of_0d, [(np.array(1.0), np.array(-1)), (np.array(1.0), np.array(1))]),
    (guarded_broadcast, [(np.arange(3), np.arange(2)), (np.arange(3) + 5, np.arange(2))]),
    (guarded_in_a_loop, [(np.arange(5.0), 7), (np.arange(5.0) * 20, 7)]),
    (guarded_every_side, [(np.arange(5.0),), (-np.arange(5.0),)]),
]


def _numpy_outcome(fn, args):
    try:
        return "value", fn(*args)
    except (IndexError, ValueError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("fn, inputs", NUMPY_ERROR_CASES, ids=[f.__name__ for f, _ in NUMPY_ERROR_CASES])
def test_numpys_error_on_a_side_not_taken_is_not_raised(fn, inputs, backend):
    jf = numfn.jit(fn, backend=backend)
    for args in inputs:
        expected, got = _numpy_outcome(fn, args), _numpy_outcome(jf, args)
        assert got[0] == expected[0], (got, expected)
        if expected[0] == "value": assert_same(np.asarray(got[1]), np.asarray(expected[1]))
        else: assert got[1] == expected[1]


def test_numpys_error_in_a_loop_inside_the_side_still_raises_while_compiling():
    # (the loop may run no iteration: raised at run time, the error would need the loop's own condition too)
    def f(x, n):
        y = x * 1
        if x.sum() > 0:
            for _ in range(n):
                y = y + x[10]
        return y
    with pytest.raises(IndexError, match="out of bounds"):
        numfn.jit(f)(np.arange(5.0), 0)


def test_numfns_own_errors_on_a_side_still_stop_the_compile():
    def f(x):
        y = x * 1
        if x.sum() > 0:
            y.dtype = np.int64   # reading an array's memory as another type: not compiled, whichever side runs
        return y
    with pytest.raises(numfn.NumfnError):
        numfn.jit(f)(np.arange(5.0))
