"""Boolean masks and results of run-time length (x[mask], nonzero, flatnonzero, argwhere, extract, compress,
one-argument where), masked assignment, and the indexing functions (take, take_along_axis, put, put_along_axis,
choose, select, bincount, histogram, histogram2d, digitize), against NumPy."""
import re

import numpy as np
import pytest

import numfn
from helpers import check, check_mutates, check_raises_like, rand

RNG = np.random.default_rng(140)
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_selections_and_what_they_compute(backend, dtype):
    def f(x, m):
        y = x[m]
        z = x[x > x.mean()] if x.dtype != np.bool_ else x[~m]
        return (y, z, y * 2, (y + 1).astype(np.float64), y.sum(), y.mean(), y.any(), y.all(), np.count_nonzero(y),
                z.prod(), y.shape[0], y.size, x[m, None], np.nonzero(m), x[np.nonzero(m)])

    for shape in [(7,), (3, 4), (0,), (1,), (2, 0, 3)]:
        x = rand(shape, dtype, RNG, -4, 4)
        m = RNG.random(shape) < 0.5
        check(f, x, m, backend=backend)
        check(f, x, np.zeros(shape, bool), backend=backend)


def test_reductions_over_selections(backend):
    def f(x, m):
        y = x[m]
        return (y.max(), y.min(), np.argmax(y), y.argmin(), y.std(), y.var(ddof=1), np.ptp(y), np.nansum(y),
                np.nanmean(y), y.cumsum(), np.sum(y ** 2) / y.size, np.mean(np.sin(y)))

    x = rand((40,), np.float64, RNG)
    x[[3, 9]] = np.nan
    check(f, x, x > 0, backend=backend)
    check(f, np.arange(5.0), np.array([0, 1, 0, 1, 1], bool), backend=backend)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        numfn.jit(lambda x: x[x > 10].max(), backend=backend)(np.arange(5.0))
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        numfn.jit(lambda x: x[x > 10].argmax(), backend=backend)(np.arange(5.0))


def test_selections_over_leading_axes_and_rows(backend):
    def f(a, rows, m2):
        sel = a[rows]                 # whole rows
        return sel, sel.sum(axis=1), sel.sum(axis=0), sel[:, 1:], a[rows, 2], a[m2], sel.max(axis=0), sel * a[0]

    a = rand((6, 4), np.float64, RNG)
    rows = np.array([True, False, True, True, False, True])
    check(f, a, rows, RNG.random((6, 4)) < 0.3, backend=backend)


def test_indexing_selections(backend):
    def f(x, i):
        y = x[x > 0]
        return y[0], y[-1], y[1:], y[::2], y[-3::-1], y[:100], y[i], y[y > 1], y[1:][::-1]

    x = np.array([3.0, -1, 2, 5, -2, 0.5, 7, 1.5])
    check(f, x, np.array([0, -2, 1]), backend=backend)
    g = numfn.jit(lambda x, i: x[x > 0][i], backend=backend)
    with pytest.raises(IndexError, match="index 6 is out of bounds"):
        g(x, np.array([0, 6]))


def test_nonzero_family(backend):
    def f(a):
        r, c = np.nonzero(a > 0)
        return (r, c, a[r, c], np.flatnonzero(a), np.argwhere(a < 0), np.where(a > 1), np.extract(a > 0, a),
                np.compress([True, False, True], a, axis=0), np.compress(a.ravel() > 0, a), a.nonzero())

    check(f, rand((3, 4), np.float64, RNG), backend=backend)
    check(lambda x: (np.argwhere(x), np.argwhere(x - x)), np.float64(3.0), backend=backend)
    check_raises_like(lambda x: np.nonzero(x), np.float64(3.0), backend=backend)


def test_elementwise_combinations_of_selections(backend):
    def f(x, y):
        m = x > 0
        a, b = x[m], y[m]
        both = np.where(a > b, a, b) + np.sin(a) * b
        return both, a - b.mean(), a * 2

    x, y = rand((9,), np.float64, RNG), rand((9,), np.float64, RNG)
    check(f, x, y, backend=backend)
    g = numfn.jit(lambda x, y: x[x > 0] + y[y > 0], backend=backend)
    a, b = np.array([1.0, -1, 2]), np.array([1.0, 2, 3])
    with pytest.raises(ValueError, match="could not be broadcast"):
        g(a, b)
    np.testing.assert_array_equal(g(a, np.array([1.0, -2, 3])), a[a > 0] + np.array([1.0, 3]))
    h = numfn.jit(lambda x, z: x[x > 0] * z, backend=backend)   # a static array of the right length, checked
    np.testing.assert_array_equal(h(a, np.array([10.0, 20])), [10.0, 40.0])
    with pytest.raises(ValueError, match="could not be broadcast"):
        h(a, np.array([1.0, 2, 3]))


def test_what_needs_a_python_length_says_so(backend):
    # len() is a Python int: computed in a second pass, one specialization per length (tests/test_value_sizes.py)
    check(lambda x: x * len(x[x > 0]), np.arange(3.0), backend=backend)
    with pytest.raises(numfn.NumfnError, match="numpy.diff on an array whose length is only known at run time"):
        numfn.jit(lambda x: np.diff(x[x > 0]), backend=backend)(np.arange(3.0))
    with pytest.raises(numfn.NumfnError, match="vmap of a function returning an array of run-time length"):
        numfn.vmap(lambda x: x[x > 0])(np.ones((2, 3)))


# ---- masked assignment -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.int32], ids=lambda d: np.dtype(d).name)
def test_masked_assignment(backend, dtype):
    def f(x, v):
        y = x * 1
        y[y < 0] = 0                   # a scalar
        z = x * 1
        z[z > 1] = -5
        w = x * 1
        w[w > 0] += 10                 # x[m] += v: the elements where they are
        u = x * 1
        u[x < 1] = x[x < 1] * 2
        r = x.reshape(-1, 2) * 1
        r[r[:, 0] > 0] = v[:2]         # rows, broadcast
        return y, z, w, u, r

    check(f, rand((8,), dtype, RNG, -3, 3), rand((4,), dtype, RNG), backend=backend)


def test_masked_assignment_of_as_many_values_as_true_positions(backend):
    f = numfn.jit(lambda x, m, v: _masked(x, m, v), backend=backend)
    x = np.arange(6.0)
    m = np.array([1, 0, 1, 0, 0, 1], bool)
    np.testing.assert_array_equal(f(x, m, np.array([7.0, 8, 9])), _masked(x, m, np.array([7.0, 8, 9])))
    with pytest.raises(ValueError, match="cannot assign 2 input values to the 3 output values"):
        f(x, m, np.array([7.0, 8]))


def test_masked_assignment_of_a_value_with_a_later_run_time_axis_is_refused(backend):
    # NumPy assigns y[m2].T (2 x run-time) into the rows x[m]; numfn refuses it clearly (it used to crash inside)
    def f(x, m, y, m2):
        z = x * 1
        z[m] = y[m2].T
        return z

    args = (np.zeros((3, 2)), np.array([1, 0, 1], bool), np.arange(8.0).reshape(4, 2), np.array([1, 0, 1, 0], bool))
    f(*args)   # NumPy accepts it
    with pytest.raises(numfn.NumfnError, match="a run-time length past its first axis"):
        numfn.jit(f, backend=backend)(*args)


def _masked(x, m, v):
    y = x * 1
    y[m] = v
    return y


def test_masked_assignment_into_arguments(backend):
    def clamp(u, lo):
        u[u < lo] = lo
        u[np.isnan(u)] = 0

    x = rand((10,), np.float64, RNG)
    x[4] = np.nan
    check_mutates(clamp, x, 0.5, backend=backend)


# ---- indexing functions --------------------------------------------------------------------------------------------

def test_take_and_friends(backend):
    def f(a, i, j):
        return (np.take(a, i), np.take(a, i, axis=1), np.take(a, i + 20, mode="wrap"), np.take(a, i * 9, mode="clip"),
                np.take_along_axis(a, j, axis=1), np.take_along_axis(a, j[:, :1], axis=1),
                np.take_along_axis(a.ravel(), i, axis=None), np.choose(i % 3, [a[0, :3], a[1, :3], -1.0]),
                np.choose(i, [1, 2, 3, 4], mode="clip"),
                np.select([a > 1, a < -1], [a, -a], default=0.5), np.select([a > 0], [a.astype(np.int32)]))

    a = rand((3, 4), np.float64, RNG)
    i = np.array([0, 2, 1])
    j = np.array([[3, 0], [1, 1], [-1, 2]])
    check(f, a, i, j, backend=backend)
    with pytest.raises(IndexError, match="index 12 is out of bounds for axis 0 with size 12"):
        numfn.jit(lambda a, i: np.take(a, i), backend=backend)(a, np.array([12]))
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        numfn.jit(lambda i: np.choose(i, [1.0, 2.0]), backend=backend)(np.array([0, 2]))


def test_put_and_put_along_axis_write_into_the_array(backend):
    def f(a, i, j):
        np.put(a, i, [9.0, 8.0])
        np.put_along_axis(a, j, -1.0, axis=1)
        b = a * 1
        np.put(b, [0, 0, 1], [1.0, 2.0, 3.0])      # the last write wins
        return b

    check_mutates(f, rand((3, 4), np.float64, RNG), np.array([1, -1, 5]), np.array([[0], [2], [3]]),
                  backend=backend)
    # NumPy's errors, shared with take_along_axis: float indices, a dimension mismatch
    check_raises_like(lambda a: np.put_along_axis(a, np.array([[0.5]]), 1.0, axis=1), np.zeros((2, 3)),
                      backend=backend)
    check_raises_like(lambda a: np.put_along_axis(a, np.array([0]), 1.0, axis=1), np.zeros((2, 3)),
                      backend=backend)


def test_bincount_histogram_digitize(backend):
    def f(k, w, x):
        return (np.bincount(k), np.bincount(k, minlength=12), np.bincount(k, weights=w), np.bincount(k % 3),
                np.histogram(x), np.histogram(x, bins=4, range=(-1, 1)), np.histogram(x, bins=[-2, 0, 0.5, 3]),
                np.histogram(x, bins=5, weights=w.astype(np.float32)), np.histogram(x, bins=3, density=True),
                np.histogram2d(x, w, bins=3), np.histogram2d(x, w, bins=[2, 4], range=[[-1, 1], [0, 1]]),
                np.digitize(x, [-1, 0, 1]), np.digitize(x, [1, 0, -1], right=True))

    k = RNG.integers(0, 9, 50).astype(np.uint8)
    check(f, k, RNG.random(50), rand((50,), np.float64, RNG), backend=backend)
    check(lambda x: np.histogram(x, bins=4), np.full(6, 2.5), backend=backend)   # one value: NumPy widens
    check(lambda k: np.bincount(k), np.arange(5), backend=backend)   # no bound: sized in a second pass
    with pytest.raises(ValueError, match="no negative elements"):
        numfn.jit(lambda k: np.bincount(k, minlength=10), backend=backend)(np.array([1, -1], np.int8))


def test_histogram_of_nan_raises_like_numpy(backend):
    with pytest.raises(ValueError, match="not finite"):
        numfn.jit(lambda x: np.histogram(x), backend=backend)(np.array([1.0, np.nan]))


def test_bools_past_a_run_time_length_are_read_as_bytes():
    """Consumers of b[b] run over its bound and discard what lies past its length, which the program never wrote:
    the C backend loaded those bytes as C bools, undefined for a byte other than 0 or 1 (UBSan's report in the
    instrumented suite, tools/sanitize.sh). Bools are read as bytes, as the LLVM backend reads them."""
    b = RNG.random(37) > 0.3
    f = numfn.jit(lambda b: np.logical_not(b[b]), backend="c")
    np.testing.assert_array_equal(f(b), np.logical_not(b[b]))
    source = f.specialize(b).source
    assert "(const unsigned char *)" in source
    assert not re.search(r"_Bool ld\d+ = \w+\[", source)   # before: `_Bool ld0 = tmp0[r0];`
