"""Work proportional to what runs (issue 27): windows and data-dependent slices inside loops cost their run-time
length, not the static bound of the array they view.

A window `vals[r[i]:r[i + 1]]` has the static bound of `vals` and a length known only when the loop runs. Kernels on
it loop to that length (codegen/narrow.py): its reductions, the bounds check of a gather through it (the first bad
position: a min reduction whose masked-off elements give the "none" value) and the index arithmetic feeding them,
which must therefore not be stored over the whole bound (schedule/realize.py counts a loop-invariant scalar once per
kernel, and does not split a windowed reduction into partial sums over the bound).

Each program is checked against NumPy; the structural test reads the generated C and finds no loop to the static
bound inside the row loop (a row would cost the whole matrix again).
"""
import re

import numpy as np
import pytest

import numfn
from numfn.errors import RunTimeLengthError
from tests.helpers import check, check_mutates, check_raises_like


def csr_matvec(vals, cols, rows, x):
    n = rows.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        y[i] = vals[rows[i]:rows[i + 1]] @ x[cols[rows[i]:rows[i + 1]]]
    return y


def csr_row_max(vals, rows):
    n = rows.shape[0] - 1
    y = np.full(n, -np.inf)
    for i in range(n):
        if rows[i + 1] > rows[i]:
            y[i] = vals[rows[i]:rows[i + 1]].max()
    return y


def prefix_means(x):
    out = np.zeros(x.shape[0])
    for i in range(1, x.shape[0] + 1):
        out[i - 1] = x[:i].sum() / i
    return out


def covariance_by_columns(d):
    n, m = d.shape
    c = np.zeros((m, m))
    for i in range(m):
        c[i:, i] = c[i, i:] = d[:, i] @ d[:, i:] / (n - 1)
    return c


def moving_average(x, w):
    out = np.zeros(x.shape[0] - w + 1)
    for i in range(out.shape[0]):
        out[i] = x[i:i + w].mean()
    return out


def tail_statistics(x):
    """Means and counts over windows that shrink (x[i:]) and grow (x[:i]): a window's length is a count of its
    mask, which runs to the window's length too."""
    n = x.shape[0]
    means = np.zeros(n)
    positive = np.zeros(n, np.int64)
    for i in range(n):
        means[i] = x[i:].mean()
        positive[i] = np.count_nonzero(x[:i + 1] > 0)
    return means, positive


def _csr(n, nnz, seed):
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.integers(0, nnz + 1, n + 1))
    rows[0], rows[-1] = 0, nnz
    return rng.standard_normal(nnz), rng.integers(0, max(n, 1), nnz), rows, rng.standard_normal(max(n, 1))


# (rows, nonzeros): empty rows, one row, a matrix without entries, more rows than entries
CSR_SHAPES = [(8, 40), (5, 3), (1, 7), (4, 0), (40, 600)]


@pytest.mark.parametrize("n,nnz", CSR_SHAPES)
def test_csr_matvec(n, nnz, backend):
    vals, cols, rows, x = _csr(n, nnz, n + nnz)
    check(csr_matvec, vals, cols, rows, x, backend=backend, scale=float(nnz + 1))


def test_csr_bad_column_raises_numpy_index_error(backend):
    vals, cols, rows, x = _csr(8, 40, 1)
    cols = cols.copy()
    cols[rows[3]] = 8 + 5   # a column past x's end, in a row that is not the first
    with pytest.raises(IndexError, match="index 13 is out of bounds for axis 0 with size 8"):
        csr_matvec(vals, cols, rows, x)
    with pytest.raises(IndexError, match="index 13 is out of bounds for axis 0 with size 8"):
        numfn.jit(csr_matvec, backend=backend)(vals, cols, rows, x)
    # a position past a row's end is never read: a bad value there is no error
    vals2, cols2, rows2, x2 = _csr(8, 40, 1)
    rows2 = rows2.copy()
    rows2[-1] = 39
    cols2 = cols2.copy()
    cols2[39] = 99
    check(csr_matvec, vals2, cols2, rows2, x2, backend=backend, scale=40.0)


@pytest.mark.parametrize("n,nnz", [(8, 40), (3, 0), (30, 200)])
def test_row_max_of_windows(n, nnz, backend):
    vals, _, rows, _ = _csr(n, nnz, 7)
    check(csr_row_max, vals, rows, backend=backend)


@pytest.mark.parametrize("shape", [(9,), (1,), (40000,)])
def test_prefix_means(shape, backend):
    x = np.random.default_rng(3).standard_normal(shape)
    check(prefix_means, x, backend=backend, scale=10.0)


@pytest.mark.parametrize("n,w", [(50, 7), (8, 8), (3000, 64), (40000, 16)])
def test_moving_average(n, w, backend):
    x = np.random.default_rng(4).standard_normal(n)
    check(moving_average, x, w, backend=backend, jitted=numfn.jit(moving_average, backend=backend, static_argnums=(1,)))


@pytest.mark.parametrize("n", [1, 6, 2000])
def test_tail_statistics(n, backend):
    x = np.random.default_rng(6).standard_normal(n)
    check(tail_statistics, x, backend=backend, scale=10.0)
    check(tail_statistics, x[::-2], backend=backend, scale=10.0)


@pytest.mark.parametrize("shape", [(30, 7), (2, 1), (5, 12)])
def test_covariance_by_columns(shape, backend):
    d = np.random.default_rng(5).standard_normal(shape)
    check(covariance_by_columns, d, backend=backend, scale=float(shape[0]))
    check(covariance_by_columns, d[::-1, ::2], backend=backend, scale=float(shape[0]))


def test_row_loop_runs_to_the_row_length():
    """No loop inside the row loop runs to the static bound (4099 nonzeros): every one runs to a row's length.
    Before, the gathered column indices were stored over the whole bound each row (0.01x NumPy on 32768 rows)."""
    pytest.importorskip("numfn.runtime.clang")
    from tests.conftest import BACKENDS
    if "c" not in BACKENDS: pytest.skip("no C compiler")
    vals, cols, rows, x = _csr(40000, 4099, 2)
    nf = numfn.jit(csr_matvec, backend="c").specialize(vals, cols, rows, x)
    source = nf.source
    loops = [line for line in source.splitlines() if line.lstrip().startswith("for (")]
    assert not [line for line in loops if "4099LL" in line], loops
    # the reductions (the product and the bounds check) run to a run-time end
    assert len(re.findall(r"for \(int64_t r\d+ = 0; r\d+ < v\d+;", source)) >= 2
    y = nf(vals, cols, rows, x)
    np.testing.assert_allclose(y, csr_matvec(vals, cols, rows, x), rtol=1e-12, atol=1e-12)


def test_window_mean_counts_to_the_window_length():
    """The mean of a window of run-time length divides by its length, a count of its mask: that count runs to the
    window's end too (before, over the whole array: 100,000 windows of 64 took as long as NumPy, 6 s)."""
    from tests.conftest import BACKENDS
    if "c" not in BACKENDS: pytest.skip("no C compiler")
    for n in (4099, 40000):   # (the second beyond the size at which large reductions are split into partial sums)
        x = np.random.default_rng(8).standard_normal(n)
        nf = numfn.jit(moving_average, backend="c", static_argnums=(1,)).specialize(x, 64)
        source = nf.source
        body = source[source.index("\nint numfn_"):]
        body = body[body.index("for (;;)"):]
        kernels = {line.strip().split("(")[0] for line in body.splitlines() if line.strip()[:2] in ("E_", "R_", "W_")}
        for k in kernels:   # every kernel the window loop runs loops to a run-time end, not to the array's length
            text = source[source.index(f"static void {k}("):]
            text = text[:text.index("\n}\n")]
            loops = [line for line in text.splitlines() if line.lstrip().startswith("for (")]
            assert all(re.search(r"< v\d+;", line) for line in loops), (k, loops)


# ---- arrays of run-time length given to np.linalg and np.fft ------------------------------------------------

def householder_qr(A):
    """Householder QR as written from a textbook: norms of the column windows A[k:, k], a copy of one written."""
    m, n = A.shape
    R = A.copy()
    Q = np.eye(m)
    for k in range(n):
        x = R[k:, k]
        v = x.copy()
        v[0] += np.copysign(np.linalg.norm(x), x[0])
        v /= np.linalg.norm(v)
        R[k:, :] -= 2.0 * np.outer(v, v @ R[k:, :])
        Q[:, k:] -= 2.0 * np.outer(Q[:, k:] @ v, v)
    return Q, R


def norms_of_windows(A, x):
    out = np.zeros((A.shape[1] - 1, 5))
    for k in range(1, A.shape[1]):
        out[k - 1] = (np.linalg.norm(A[k:, k - 1]), np.linalg.vector_norm(A[:k]), np.linalg.norm(A[:k], axis=(0, 1)),
                      np.linalg.norm(A[:k], ord=np.inf), np.linalg.norm(A[k:, :k], "nuc"))
    m = x > 0
    return out, np.linalg.norm(x[m]), np.linalg.norm(x[m], 1), np.linalg.vector_norm(x[m], ord=3), \
        np.linalg.norm(x[m], 0), np.linalg.norm(x[m], np.inf)


@pytest.mark.parametrize("shape", [(8, 5), (6, 6), (12, 3)])
def test_householder_qr_with_norms_of_column_windows(shape, backend):
    """np.linalg.norm of a window took the window's whole static bound (np.linalg's functions saw the array
    under it): a silently wrong R."""
    check(householder_qr, np.random.default_rng(sum(shape)).standard_normal(shape), backend=backend, rtol=1e-12)


def test_norms_of_windows_and_selections(backend):
    rng = np.random.default_rng(5)
    check(norms_of_windows, rng.standard_normal((7, 7)), rng.standard_normal(11), backend=backend, rtol=1e-12)
    check(norms_of_windows, rng.standard_normal((6, 6)), -np.ones(4), backend=backend, rtol=1e-12)   # none selected


def writes_into_selections(x):
    y = x[x > 0]
    y[0] = -1.0
    y[1:3] *= 2.0
    x[x > 0][0] = 100.0   # a copy, as in NumPy: x does not change
    out = np.zeros(x.shape[0])
    for k in range(x.shape[0]):
        w = x[k:].copy()
        w[-1] = 0.0
        w[0] *= 3.0
        out[k] = w.sum()
    return y, y.sum(), x, out


def test_writes_into_a_selection_and_into_a_windows_copy(backend):
    """An array of run-time length that is its own (x[mask], a window's copy) takes writes like any array."""
    check(writes_into_selections, np.random.default_rng(6).standard_normal(20), backend=backend, rtol=1e-13)


@pytest.mark.parametrize("fn", [lambda x: np.fft.fft(x[x > 0]), lambda x: np.linalg.norm(x[x > 0], -np.inf),
                                lambda x: np.linalg.norm(x.reshape(4, 3)[x[:4] > 0], axis=1),
                                lambda x: np.lib.stride_tricks.sliding_window_view(x[x > 0], 2),
                                lambda x: np.polyfit(x[x > 0], x[x > 0], 1)],
                         ids=["fft", "norm-min", "norm-keeps-run-time-axis", "sliding_window_view", "polyfit"])
def test_subpackage_functions_refuse_run_time_lengths_they_do_not_know(fn):
    with pytest.raises(RunTimeLengthError, match="only known at run time"):
        numfn.jit(fn)(np.linspace(-1.0, 1.0, 12))


# ---- slices whose step is traced ---------------------------------------------------------------------------------

def sieve(n):
    is_prime = np.ones(n + 1, dtype=bool)
    is_prime[:2] = False
    for i in range(2, int(n ** 0.5) + 1):
        if is_prime[i]:
            is_prime[i * i::i] = False
    return np.nonzero(is_prime)[0]


def traced_steps(x, s):
    return x[::s], x[1::s].sum(), x[-1::-s], x[5:1:-s], x[s::s], x[:, None][::s, 0]


def strided_writes(x):
    for k in range(1, 7):
        x[k::k] += 1.0
        x[-1::-k] *= 2.0
    return x


@pytest.mark.parametrize("n", [2, 30, 100, 1000])
def test_sieve_of_eratosthenes(n, backend):
    """x[i * i::i] = False with the loop's i: a window whose step is traced (it was refused)."""
    check(sieve, n, backend=backend)


@pytest.mark.parametrize("s", [1, 2, 3, 9, 10, 25, -1, -3, -11])
def test_slices_with_a_traced_step(s, backend):
    check(traced_steps, np.arange(10.0), s, backend=backend)


def test_a_traced_step_of_zero_raises_numpys_error(backend):
    check_raises_like(traced_steps, np.arange(10.0), 0, backend=backend, match="slice step cannot be zero")


def test_writes_through_slices_with_a_traced_step(backend):
    check_mutates(strided_writes, np.zeros(13), backend=backend)
