"""Arrays that shrink inside a loop (issue 28, item 8): arrays of run-time length (x[mask]) as the state of native
loops and as results of branches on traced values (the `break` flag's branch too), and len() of them in converted
code, against NumPy on the same inputs."""
import numpy as np
import pytest

import numfn
from helpers import check, check_raises_like

RNG = np.random.default_rng(28008)


# ---- the escape-time fractal that keeps only the points still iterating ---------------------------------------

def escape_len(z, c, maxiter):
    n = 0
    for k in range(maxiter):
        m = np.abs(z) < 2
        z = z[m]; c = c[m]   # noqa: E702 - as published
        if not len(z): break
        z = z * z + c
        n += 1
    return n, z


def escape_size(z, c, maxiter):
    n = 0
    for k in range(maxiter):
        m = np.abs(z) < 2
        z = z[m]; c = c[m]   # noqa: E702 - as published
        if z.size == 0: break
        z = z * z + c
        n += 1
    return n, z


def escape_while(z, c, maxiter):
    n = 0
    while n < maxiter and z.size:
        m = np.abs(z) < 2
        z, c = z[m], c[m]
        z = z * z + c
        n += 1
    return n, z, len(z), c


def _plane(kind: str, size: int, dtype):
    """Starting points and constants: `mixed` some escape early, some never; `gone` all escape at the first test;
    `kept` none ever escapes (z = c = 0)."""
    if kind == "mixed":
        z = RNG.uniform(-1.5, 1.5, size) + (1j * RNG.uniform(-1.5, 1.5, size) if np.dtype(dtype).kind == "c" else 0)
    elif kind == "gone":
        z = np.full(size, 3.0) + (1j if np.dtype(dtype).kind == "c" else 0)
    else:
        z = np.zeros(size)
    z = z.astype(dtype)
    return z, z.copy() * 0.5


@pytest.mark.parametrize("fn", [escape_len, escape_size], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.float64, np.float32],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["mixed", "gone", "kept"])
def test_escape_loop(fn, dtype, kind, backend):
    z, c = _plane(kind, 37, dtype)
    jf = numfn.jit(fn, backend=backend)
    for maxiter in (0, 1, 50):
        check(fn, z, c, maxiter, backend=backend, jitted=jf, scale=4.0)


@pytest.mark.parametrize("size", [0, 1, 2, 9])
def test_escape_loop_sizes_and_views(size, backend):
    z, c = _plane("mixed", 2 * size, np.complex128)
    jf = numfn.jit(escape_len, backend=backend)
    for maxiter in (0, 3, 40):
        check(escape_len, z[::2], c[::2], maxiter, backend=backend, jitted=jf, scale=4.0)   # strided
        check(escape_len, z[::-2], c[1::2], maxiter, backend=backend, jitted=jf, scale=4.0)   # negative stride


def test_escape_loop_with_a_while(backend):
    z, c = _plane("mixed", 25, np.complex128)
    jf = numfn.jit(escape_while, backend=backend)
    for maxiter in (0, 1, 30):
        check(escape_while, z, c, maxiter, backend=backend, jitted=jf, scale=4.0)


# ---- a working set filtered until a condition ------------------------------------------------------------------

def filter_above_mean(x):
    steps = 0
    while x.size > 1:
        x = x[x > x.mean()]
        steps += 1
    return x, steps, x.sum(), len(x)


def filter_rows(a):
    # rows of a 2-D working set: the first axis shrinks, the second stays
    while a.shape[0] > 2:
        a = a[a[:, 0] > a[:, 0].min()]
    return a, a.sum(axis=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("size", [0, 1, 2, 17, 64])
def test_filter_until_one_left(dtype, size, backend):
    x = (RNG.standard_normal(size) * 50).astype(dtype)
    check(filter_above_mean, x, backend=backend)
    check(filter_above_mean, np.full(size, 3, dtype), backend=backend)   # all equal: none above the mean
    if size > 2: check(filter_above_mean, x[::-3], backend=backend)


@pytest.mark.parametrize("rows", [0, 1, 3, 12])
def test_filter_rows(rows, backend):
    a = RNG.permutation(rows * 3).reshape(rows, 3).astype(np.float64)
    check(filter_rows, a, backend=backend)
    check(filter_rows, a.T.copy().T, backend=backend)   # Fortran order


def filter_selection_first(x, limit):
    y = x[x > 0]            # of run-time length before the loop
    for _ in range(limit):
        if y.size <= 2: break
        y = y[1:]           # a slice of it: shrinks by one
        y = y[y != y.max()]
    return y, len(y) * 2 + 1


@pytest.mark.parametrize("size", [0, 1, 5, 20])
def test_loop_state_of_runtime_length_from_the_start(size, backend):
    x = RNG.standard_normal(size)
    jf = numfn.jit(filter_selection_first, backend=backend)
    for limit in (0, 1, 3, 100):
        check(filter_selection_first, x, limit, backend=backend, jitted=jf)


def nested_filters(x, n):
    out = 0.0
    for i in range(n):               # a native loop around a shrinking while loop
        y = x + i
        while y.size > 1:
            y = y[y > y.mean()]
        out = out + y.sum() * len(y)
    return out


def with_primitives(x):
    y = numfn.while_loop(lambda y: y.size > 1, lambda y: y[y > y.mean()], x)
    return y, numfn.fori_loop(0, 3, lambda i, y: y[y != y.max()], x)


def after_the_loop(x, n):
    y = x
    for _ in range(n):
        y = y[y > y.min()]
    return np.sort(y), y[::-1], y * 2, y.sum()


@pytest.mark.parametrize("size", [0, 1, 8])
def test_nested_primitives_and_use_after_the_loop(size, backend):
    x = RNG.permutation(size).astype(np.float64)
    jf = numfn.jit(nested_filters, backend=backend)
    for n in (0, 1, 6):
        check(nested_filters, x, n, backend=backend, jitted=jf)
    if size > 3:   # (fori_loop drops three maxima)
        check(with_primitives, x, backend=backend, expected=with_primitives_numpy(x))
    if not size: return   # (y.min() of a static size 0 raises while the body is traced, even if it never runs)
    jf = numfn.jit(after_the_loop, backend=backend)
    for n in (0, 2, 5):
        if n <= size: check(after_the_loop, x, n, backend=backend, jitted=jf)
        else: check_raises_like(after_the_loop, x, n, backend=backend, match="zero-size array to reduction")


def with_primitives_numpy(x):
    y = x
    while y.size > 1: y = y[y > y.mean()]
    z = x
    for _ in range(3): z = z[z != z.max()]
    return y, z


# ---- branches choosing between x[m] and x ----------------------------------------------------------------------

def choose_selection(x, m, flag):
    if flag.sum() > 0:
        y = x[m]
    else:
        y = x
    return y, y.sum(axis=0), len(y), y * 2


def choose_two_selections(x, flag):
    if flag.sum() > 0:
        y = x[x > 0]
    else:
        y = x[x < 0] * 2
    return y, y.size


def shrink_in_one_branch(x, flag):
    y = x[x > -1]
    if flag.sum() > 0:
        y = y[y < 1]
        y += 1
    return y, y.sum()


@pytest.mark.parametrize("shape", [(0,), (1,), (6,), (5, 3)])
@pytest.mark.parametrize("flag", [0, 1])
def test_branch_between_selection_and_array(shape, flag, backend):
    x = RNG.standard_normal(shape)
    m = RNG.random(shape[0]) < 0.5
    check(choose_selection, x, m, np.array([flag]), backend=backend)
    check(choose_selection, x, np.zeros(shape[0], bool), np.array([flag]), backend=backend)
    if len(shape) == 1:
        check(choose_two_selections, x, np.array([flag]), backend=backend)
        check(shrink_in_one_branch, x, np.array([flag]), backend=backend)


def test_branch_sides_of_different_dimensions_refused(backend):
    def f(x, flag):
        if flag.sum() > 0:
            y = x[x > 0]
        else:
            y = x.reshape(2, 2)
        return y
    with pytest.raises(numfn.NumfnError, match="run-time length .* on one path and an array of shape"):
        numfn.jit(f, backend=backend)(np.arange(4.0), np.array([1]))


# ---- len() -----------------------------------------------------------------------------------------------------

def len_in_expressions(x, m):
    y = x[m]
    total = 0.0
    for i in range(len(y)):          # a loop over a run-time bound
        total = total + y[i] * (len(y) - i)
    return len(y) * 2 + len(x), total, y[:len(y) // 2], float(len(y)) / max(len(x), 1)


@pytest.mark.parametrize("size", [0, 1, 7])
def test_len_in_expressions(size, backend):
    x = RNG.standard_normal(size)
    for m in (x > 0, np.ones(size, bool), np.zeros(size, bool)):
        check(len_in_expressions, x, m, backend=backend)


def test_len_outside_converted_code_is_a_value_specialization(backend):
    # in a lambda (code numfn does not convert) len() must be a Python int: the function is compiled for each
    # length the values give (numfn.trace.value_sizes), so it still returns NumPy's result
    f = numfn.jit(lambda x: len(x[x > 0]), backend=backend)
    for x in (np.arange(3.0), np.arange(-2.0, 5.0), -np.ones(4)):
        assert f(x) == len(x[x > 0])


# ---- errors ----------------------------------------------------------------------------------------------------

def mask_of_other_length(x, y):
    m = x[x > 0] > 1           # a mask of run-time length
    return y[m]


def test_mask_of_runtime_length_indexes_an_array(backend):
    x = np.array([1.0, 2, 3, -1, 5])
    check(mask_of_other_length, x, np.arange(4.0), backend=backend)
    for size in (3, 9):        # NumPy's IndexError (with its wording) when the lengths differ
        check_raises_like(mask_of_other_length, x, np.arange(float(size)), backend=backend,
                          match=f"size of axis is {size} but size of corresponding boolean axis is 4")


def grows_in_the_loop(x, n):
    y = x[x > 0]
    for _ in range(n):
        if y.size < 2:
            y = np.ones(10)    # longer than any selection of x: no bound holds it
        y = y[y > y.min()]
    return y


def test_state_that_would_grow_past_its_bound_is_named(backend):
    with pytest.raises(numfn.NumfnError, match="'y' may grow past 6 elements"):
        numfn.jit(grows_in_the_loop, backend=backend)(np.arange(6.0), 3)


def window_rebound(x, n):
    v = x[:n]                  # a window of the argument (a view with a traced length), rebound in the loop
    for _ in range(6):
        v = v + 1
    return v


def window_copy_rebound(x, n):
    v = x[:n].copy()           # the rewrite the error asks for
    for _ in range(6):
        v = v + 1
    return v


def test_window_rebound_in_a_loop_stays_refused_with_its_rewrite(backend):
    with pytest.raises(numfn.NumfnError, match=r"copy it \(x\[k:\]\.copy\(\)\)"):
        numfn.jit(window_rebound, backend=backend)(np.arange(6.0), np.array(2))
    for n in (0, 2, 6, 9):
        check(window_copy_rebound, np.arange(6.0), np.array(n), backend=backend)
