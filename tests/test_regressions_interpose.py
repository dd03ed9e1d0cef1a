"""Regressions of the guards that run while numfn traces: NumPy's creation functions (numfn.interpose) and
np.random (numfn.numpy.random.trace_guard), with threads of numfn's own alive."""
import threading

import numpy as np
import pytest

import numfn
from numfn import progress

GLOBAL_RNG = np.random.default_rng(11)


def _draws_from_a_global_generator(x):
    return x + GLOBAL_RNG.random(3)   # a constant of the program: numfn refuses it


def _draws_from_np_random(x):
    return x + np.random.rand(3)


def _users_threads():
    """Threads alive besides this one that numfn did not start (its pools are named numfn...)."""
    me = threading.current_thread()
    return [t for t in threading.enumerate() if t is not me and not t.name.startswith("numfn")]


def test_svmaps_idle_pool_threads_leave_the_random_guard_an_error():
    # svmap's batch split leaves its pool's worker threads alive and idle. They run only compiled code, never the
    # user's: they cannot draw from a generator, and the random guard must stay an error (not a warning that
    # "another thread may have drawn"); before, every trace after the first large svmap call in a process only
    # warned, and the compiled function returned the numbers drawn while tracing, at every call
    if _users_threads(): pytest.skip("threads an earlier test started are still running")
    numfn.set_num_threads(2)
    s = numfn.svmap(numfn.jit(lambda r: np.sin(r) * 2.0 + r.sum()))
    xs = np.random.default_rng(1).random((4096, 64))
    np.testing.assert_allclose(s(xs), np.sin(xs) * 2.0 + xs.sum(axis=1, keepdims=True))
    assert any(t.name.startswith("numfn") for t in threading.enumerate()), "the batch did not use the pool"
    assert not progress.other_threads_running()
    before = GLOBAL_RNG.bit_generator.state
    try:
        with pytest.raises(numfn.NumfnError, match="the global 'GLOBAL_RNG'"):
            numfn.jit(_draws_from_a_global_generator)(np.zeros(3))
    finally:
        GLOBAL_RNG.bit_generator.state = before
    with pytest.raises(numfn.NumfnError, match=r"numpy.random.rand inside a compiled function"):
        numfn.jit(_draws_from_np_random)(np.zeros(3))
    assert not hasattr(np.random.rand, "__wrapped__")   # np.random has its own functions back
