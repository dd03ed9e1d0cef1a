"""Checks: errors NumPy raises for values (an index out of bounds, a singular matrix) computed by the program and
raised by the dispatcher after the call, through jit, calls between jitted functions, vmap and svmap."""
import numpy as np
import pytest

import numfn
from numfn.trace.tensor import add_check, gather


def take(x, i):
    """x[i] along axis 0 with NumPy's IndexError, built from the GATHER primitive and a check."""
    n = x.shape[0]
    bad = (i < -n) | (i >= n)
    add_check(bad, i, lambda v: IndexError(f"index {v} is out of bounds for axis 0 with size {n}"))
    return gather(x, [np.where(i < 0, i + n, i)])


def test_a_failed_check_raises_after_the_call(backend):
    f = numfn.jit(take, backend=backend)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x, np.array([0, -1, 3])), x[[0, -1, 3]])
    for bad, first in (([0, 7, 3, 8], 7), ([-6], -6), ([[1, 2], [5, 9]], 5)):
        with pytest.raises(IndexError, match=f"index {first} is out of bounds for axis 0 with size 5"):
            f(x, np.array(bad))
    assert f(x, np.zeros((0, 3), np.int64)).shape == (0, 3)   # nothing to check


def test_checks_follow_calls_and_maps(backend):
    inner = numfn.jit(take, backend=backend)
    outer = numfn.jit(lambda x, i: inner(x, i) * 2, backend=backend)
    x, xs = np.arange(5.0), np.arange(10.0).reshape(2, 5)
    with pytest.raises(IndexError, match="index 7 is"):
        outer(x, np.array([0, 7]))
    for mapped in (numfn.vmap(take), numfn.svmap(take)):
        np.testing.assert_array_equal(mapped(xs, np.array([[0, -1], [3, 4]])), [[0, 4], [8, 9]])
        with pytest.raises(IndexError, match="index 9 is"):
            mapped(xs, np.array([[0, -1], [3, 9]]))


def test_add_check_outside_a_trace_is_an_error():
    with pytest.raises(RuntimeError):
        add_check(np.array(True), np.array(0), IndexError)


# fuzz seed 49000303: `x0[::2] += 7; v = x1 % x1` with x1 a Python bool. The modulo's check (division by zero) has
# the payload 0, an output of the program; that constant is the same node as the 0 in the write's bounds gate, which
# then loaded it from the check's output before the kernel writing that output ran: the gate read garbage and the
# write into the argument was lost. Constants are never loaded from a buffer now
def _write_then_checked_modulo(x0, x1):
    x0[::2] += 7
    v = x1 % x1
    return x0, v


def _write_then_checked_floordiv(x0, n):
    x0[1::2] -= 3
    return x0 * (n // n)


@pytest.mark.parametrize("fn, scalar", [(_write_then_checked_modulo, True), (_write_then_checked_modulo, 3),
                                        (_write_then_checked_floordiv, 5)], ids=["mod_bool", "mod_int", "floordiv"])
def test_a_write_next_to_a_check_with_a_constant_payload(fn, scalar, backend):
    from helpers import check_mutates
    check_mutates(fn, np.ones((5, 4), np.uint8), scalar, backend=backend, calls=1)
    with pytest.raises(ZeroDivisionError):
        numfn.jit(fn, backend=backend)(np.ones((5, 4), np.uint8), type(scalar)(0))
