"""Loops over windows and data-dependent indices (issue 27's covariance, Cholesky and histogram patterns): results
against NumPy's on the same inputs, the checks NumPy's semantics need (int(nan), an index out of range) raising
NumPy's exceptions without the store they guard ever landing outside its array, and structural checks of the work
the compiled program does (which writes carry a bounds gate, which do not need one).
"""
from __future__ import annotations

import numpy as np
import pytest

import numfn
from helpers import assert_same, check, check_mutates, cholesky_columns, covariance
from numfn.ir.uop import Ops
from numfn.ir.walk import toposort


# ---------------------------------------------------------------------------------------------------------------
# the patterns, as benchmarks/bench_patterns.py writes them

def histogram_loop(data, bins):
    counts = np.zeros(bins, np.int64)
    for v in data:
        counts[int(v)] += 1
    return counts


def _spd(n, dtype, rng):
    m = rng.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


# ---------------------------------------------------------------------------------------------------------------
# results against NumPy

HISTOGRAM_DATA = {   # name -> data (bins is 8)
    "size 0": np.zeros(0),
    "size 1": np.array([3.0]),
    "odd": np.random.default_rng(1).integers(0, 8, 37).astype(np.float64),
    "negative indices": np.random.default_rng(2).integers(-8, 8, 41).astype(np.float64),
    "fractions truncate": np.random.default_rng(3).uniform(-7.99, 7.99, 29),
    "float32": np.random.default_rng(4).integers(0, 8, 33).astype(np.float32),
    "non-contiguous": np.random.default_rng(5).integers(0, 8, 66).astype(np.float64)[::2],
    "negative stride": np.random.default_rng(6).integers(0, 8, 31).astype(np.float64)[::-1],
    "column of a 2-d array": np.random.default_rng(7).integers(0, 8, (23, 3)).astype(np.float64)[:, 1],
}


@pytest.mark.parametrize("name", list(HISTOGRAM_DATA))
def test_histogram_loop_matches_numpy(name, backend):
    data = HISTOGRAM_DATA[name]
    jf = numfn.jit(histogram_loop, static_argnums=(1,), backend=backend)
    assert_same(jf(data, 8), histogram_loop(data, 8), scale=1.0)


COVARIANCE_SHAPES = [(1, 1), (2, 1), (5, 3), (17, 9), (64, 33)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", COVARIANCE_SHAPES)
def test_covariance_by_windows_matches_numpy(shape, dtype, backend):
    d = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    with np.errstate(divide="ignore", invalid="ignore"):   # n = 1 divides by zero, as NumPy does
        check(covariance, d, backend=backend, scale=float(shape[0]))


@pytest.mark.parametrize("layout", ["transposed", "every other column", "reversed rows"])
def test_covariance_of_a_strided_view_matches_numpy(layout, backend):
    base = np.random.default_rng(8).standard_normal((30, 22))
    d = {"transposed": base.T[:, :19], "every other column": base[:, ::2], "reversed rows": base[::-1]}[layout]
    check(covariance, d, backend=backend, scale=30.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 7, 32, 45])
def test_cholesky_columns_matches_numpy(n, dtype, backend):
    a = _spd(n, dtype, np.random.default_rng(n))
    check(cholesky_columns, a, backend=backend, scale=float(n) * 4, rtol=1e-4 if dtype == np.float32 else None)


def test_cholesky_columns_of_a_transposed_view(backend):
    a = _spd(19, np.float64, np.random.default_rng(9)).T   # symmetric, read through a Fortran-order view
    check(cholesky_columns, a, backend=backend, scale=80.0)


# ---------------------------------------------------------------------------------------------------------------
# the checks: NumPy's exceptions and wording, and no store outside the array before they raise

BAD_VALUES = [   # value put in the data -> (exception, message)
    (np.nan, ValueError, "cannot convert float NaN to integer"),
    (np.inf, OverflowError, "cannot convert float infinity to integer"),
    (-np.inf, OverflowError, "cannot convert float infinity to integer"),
    (8.0, IndexError, "index 8 is out of bounds for axis 0 with size 8"),
    (-9.0, IndexError, "index -9 is out of bounds for axis 0 with size 8"),
    (1e12, IndexError, "index 1000000000000 is out of bounds for axis 0 with size 8"),
    (-1e12, IndexError, "index -1000000000000 is out of bounds for axis 0 with size 8"),
]


@pytest.mark.parametrize("backend_name", ["llvm", "c"])
@pytest.mark.parametrize("bad,exc,message", BAD_VALUES, ids=[str(b[0]) for b in BAD_VALUES])
def test_histogram_loop_raises_numpys_error(bad, exc, message, backend_name):
    """Far out of range, the index once reached a store at its unchecked position (a segfault, or a heap
    corruption for -65 into 64 bins) before the check raised: the store is gated now."""
    data = np.random.default_rng(10).integers(0, 8, 50).astype(np.float64)
    data[31] = bad
    with pytest.raises(exc, match=message):
        histogram_loop(data, 8)   # the oracle: NumPy raises exactly this
    jf = numfn.jit(histogram_loop, static_argnums=(1,), backend=backend_name)
    with pytest.raises(exc, match=message):
        jf(data, 8)
    assert_same(jf(np.zeros(5), 8), histogram_loop(np.zeros(5), 8), scale=1.0)   # and the program runs on


def store_at(a, i, v):
    a[i] = v
    return a.sum()


@pytest.mark.parametrize("i", [3, -5, 5, -6, 10**12, -10**12])
def test_store_at_a_traced_index_leaves_the_argument_as_numpy_does(i, backend):
    """An out-of-range index raises IndexError and writes nothing: not outside the array, nor (clamped) into it."""
    a = np.arange(5.0)
    if -5 <= i < 5:
        check_mutates(store_at, a, i, 7.0, backend=backend)
        return
    with pytest.raises(IndexError, match=f"index {i} is out of bounds for axis 0 with size 5"):
        store_at(a.copy(), i, 7.0)
    jf = numfn.jit(store_at, backend=backend)
    with pytest.raises(IndexError, match=f"index {i} is out of bounds for axis 0 with size 5"):
        jf(a, i, 7.0)
    assert_same(a, np.arange(5.0), scale=1.0)


def store_through_a_slice(a, i):
    a[1:][i] = 7.0
    return a.sum()


def store_through_a_reshaped_row(a, i):
    a.reshape(2, 3)[1][i] = 7.0
    return a.sum()


def store_at_two_indices(a, i, j):
    a[i, j] = 7.0
    return a.sum()


VIEW_CASES = [(store_through_a_slice, (4,)), (store_through_a_slice, (-5,)), (store_through_a_slice, (-6,)),
              (store_through_a_slice, (5,)), (store_through_a_reshaped_row, (-3,)),
              (store_through_a_reshaped_row, (3,)), (store_through_a_reshaped_row, (-4,)),
              (store_at_two_indices, (1, -2)), (store_at_two_indices, (1, 2)), (store_at_two_indices, (-4, 1)),
              (store_at_two_indices, (0, 10**12))]


@pytest.mark.parametrize("fn,index", VIEW_CASES, ids=[f"{f.__name__}{i}" for f, i in VIEW_CASES])
def test_store_through_a_view_at_a_traced_index(fn, index, backend):
    """An index outside the view but inside its base (a[1:][-6] is a[0] once wrapped) writes nothing either."""
    shape = (3, 2) if fn is store_at_two_indices else (6,)
    ours, theirs = np.arange(6.0).reshape(shape), np.arange(6.0).reshape(shape)
    try:
        want = fn(theirs, *index)
    except IndexError as e:
        with pytest.raises(IndexError, match=str(e)):
            numfn.jit(fn, backend=backend)(ours, *index)
    else:
        assert_same(numfn.jit(fn, backend=backend)(ours, *index), want, scale=10.0)
    assert_same(ours, theirs, scale=1.0)


def store_at_an_index_array(a, idx):
    a[idx] = 1.0
    return a.sum()


def add_at_an_index_array(a, idx):
    np.add.at(a, idx, 1.0)
    return a.sum()


@pytest.mark.parametrize("fn", [store_at_an_index_array, add_at_an_index_array])
@pytest.mark.parametrize("bad", [5, -6, 10**12, -10**12])
def test_an_index_array_out_of_range_raises_without_storing_outside(fn, bad, backend):
    """Far out of range, an index array's store used to land outside the array (a segfault at 10**12). (The
    in-range positions before it are written, where NumPy writes nothing: the check raises after the program.)"""
    idx = np.array([0, bad, 2])
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0 with size 5"):
        fn(np.zeros(5), idx)
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0 with size 5"):
        numfn.jit(fn, backend=backend)(np.zeros(5), idx)


# ---------------------------------------------------------------------------------------------------------------
# structure: which writes carry a bounds gate (compile-free: traced graphs only)

def _scatters(fn, *args, static=()) -> list:
    """The SCATTER nodes of fn's traced graph, loop bodies included (tracing only, nothing compiled)."""
    graph = numfn.jit(fn, static_argnums=static).specialize(*args).function_graph
    found, roots = [], [graph]
    while roots:
        for u in toposort([roots.pop()]):
            if u.op is Ops.SCATTER: found.append(u)
            if u.op is Ops.LOOP: roots.extend(b for b in (u.arg.cond, *u.arg.bodies) if b is not None)
    return found


def _gated(scatter) -> bool:
    return scatter.arg[2]


@pytest.mark.nocompile
def test_a_data_dependent_index_gates_its_store():
    scatters = _scatters(histogram_loop, np.zeros(100), 64, static=(1,))
    assert len(scatters) == 1 and _gated(scatters[0])


@pytest.mark.nocompile
def test_a_traced_index_argument_gates_its_store():
    scatters = _scatters(store_at, np.zeros(5), 2, 1.0)
    assert len(scatters) == 1 and _gated(scatters[0])


def rows_by_counter(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] @ x[i]
    return y


def clipped_index(a, i):
    a[np.clip(i, 0, 4)] = 1.0
    return a


@pytest.mark.nocompile
@pytest.mark.parametrize("fn,args", [(rows_by_counter, (np.ones((7, 3)),)), (clipped_index, (np.zeros(5), 2)),
                                     (covariance, (np.ones((6, 4)),))],
                         ids=["loop counter", "clipped", "covariance"])
def test_an_index_proven_in_range_costs_no_gate(fn, args):
    """A loop counter, or an index clipped into the axis, is in range by its bounds: no compare, no branch.
    (A window's store of run-time length, as in cholesky_columns, is gated by its length, not by this.)"""
    scatters = _scatters(fn, *args)
    assert scatters and not any(_gated(s) for s in scatters)
