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
