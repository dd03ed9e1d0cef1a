"""Nested loops that fill a table in place (issue 27): dynamic programming, recurrences over rows and columns.

The inner loop's state is the table, which the outer loop's body also carries: it continues in the outer state's
memory (schedule/regions._continues_in) instead of being copied in and out of the inner loop at every outer step,
which made an n x n table cost n^3 (dynamic time warping on 250 samples: 8x NumPy, now hundreds of times). Where
the inner loop cannot continue there (the body reads the table's old values after the inner loop), its result is
copied back (Versions.plan). Every program is checked against NumPy, arguments included.
"""
import numpy as np
import pytest

import numfn
from tests.helpers import check, check_mutates


def dtw(s, t):
    n, m = s.shape[0], t.shape[0]
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = abs(s[i - 1] - t[j - 1])
            D[i, j] = cost + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m], D


def lcs_length(a, b):
    n, m = a.shape[0], b.shape[0]
    L = np.zeros((n + 1, m + 1), np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            else:
                L[i, j] = max(L[i - 1, j], L[i, j - 1])
    return L[n, m]


def fill_argument(D):
    """The table is an argument, written in place by both loops."""
    for i in range(1, D.shape[0]):
        for j in range(1, D.shape[1]):
            D[i, j] = D[i - 1, j] + 0.5 * D[i, j - 1]


def two_inner_loops(D):
    D = D.copy()
    for i in range(1, D.shape[0]):
        for j in range(1, D.shape[1]):
            D[i, j] += D[i - 1, j]
        for j in range(D.shape[1] - 2, -1, -1):
            D[i, j] = max(D[i, j], D[i, j + 1] - 1)
        D[i, 0] = -D[i, 0]   # a write after the inner loops
    return D


def old_value_after_inner_loop(D):
    """The body reads the table's value from before the inner loop after it ran: the inner loop keeps its own
    buffer and the outer state gets the result back."""
    D = D.copy()
    for i in range(1, D.shape[0]):
        before = D[i - 1, 1] * 2
        for j in range(1, D.shape[1]):
            D[i, j] = D[i, j - 1] + D[i - 1, j]
        D[i, 0] = before
    return D


def table_returned_and_written(D, x):
    for i in range(1, D.shape[0]):
        for j in range(D.shape[1]):
            D[i, j] = D[i - 1, j] * x[j] + 1
    return D, D.sum()


@pytest.mark.parametrize("n,m", [(20, 31), (1, 3), (3, 1), (40, 40)])
def test_dtw(n, m, backend):
    rng = np.random.default_rng(n * m)
    check(dtw, rng.standard_normal(n), rng.standard_normal(m), backend=backend, scale=float(n + m))


@pytest.mark.parametrize("n,m", [(25, 30), (2, 40), (40, 1)])
def test_lcs(n, m, backend):
    rng = np.random.default_rng(n + m)
    check(lcs_length, rng.integers(0, 3, n), rng.integers(0, 3, m), backend=backend)


@pytest.mark.parametrize("fn", [fill_argument, two_inner_loops, old_value_after_inner_loop],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(30, 25), (2, 2), (40, 3)])
def test_tables_written_in_place(fn, shape, backend):
    d = np.random.default_rng(sum(shape)).uniform(-1, 1, shape)
    check_mutates(fn, d, backend=backend)
    check_mutates(fn, np.asfortranarray(d), backend=backend)


def test_table_argument_returned(backend):
    rng = np.random.default_rng(3)
    check_mutates(table_returned_and_written, rng.uniform(-1, 1, (30, 20)), rng.uniform(-1, 1, 20),
                  backend=backend)


def test_inner_loop_writes_the_outer_table_without_copies():
    """Inside the outer loop no kernel copies the table (one of 61 x 71 elements, a size no other buffer has)."""
    from tests.conftest import BACKENDS
    if "c" not in BACKENDS: pytest.skip("no C compiler")
    rng = np.random.default_rng(4)
    s, t = rng.standard_normal(60), rng.standard_normal(70)
    nf = numfn.jit(dtw, backend="c").specialize(s, t)
    source = nf.source
    entry = source[source.index("\nint numfn_"):]
    body = entry[entry.index("for (;;)"):]
    copies = [line.strip() for line in body.splitlines() if line.strip().startswith("E_61_71")]
    assert not copies, copies
    got = nf(s, t)
    want = dtw(s, t)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def _products_in_a_loop(A, b, n):
    x = np.zeros_like(b)
    for _ in range(n):
        x = (b - A @ x) / (A.shape[0] * 2.0)
        x = x + A[0] @ A
    return x


@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "reversed"])
def test_loop_reads_a_reshaped_argument_in_place(layout, backend):
    """A matrix product in a loop body reads the argument reshaped (A as (n, 1, k)): the loop reads the argument's
    buffer itself instead of a copy made at every call."""
    rng = np.random.default_rng(7)
    big = rng.standard_normal((90, 70))
    A = {"contiguous": big[:31, :31], "strided": big[::2, ::2][:31, :31], "transposed": big[:31, :31].T,
         "reversed": big[::-1, ::-1][:31, :31]}[layout]
    check(_products_in_a_loop, A, rng.standard_normal(31), np.int64(40), backend=backend, scale=100.0)


def test_no_copy_of_an_argument_a_loop_multiplies_by():
    from tests.conftest import BACKENDS
    if "c" not in BACKENDS: pytest.skip("no C compiler")
    A, b = np.random.default_rng(8).standard_normal((31, 31)), np.ones(31)
    source = numfn.jit(_products_in_a_loop, backend="c").specialize(A, b, np.int64(3)).source
    entry = source[source.index("\nint numfn_"):]
    copies = [line.strip() for line in entry.splitlines() if line.strip().startswith("E_31_1_31")]
    assert not copies, copies


# ---------------------------------------------------------------------------------------------------------------
# a scalar loop's values live on the program's stack (numfn.codegen.layout.on_stack_bytes): its carried scalars
# are copied, not swapped, at the end of an iteration, so the compiler keeps them in registers

def iir(x, a, b):
    y = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        y[i] = b * x[i] + a * y[i - 1]
    return y


def rotating_scalars(x, n):
    """Carried scalars that trade places every iteration (a, b, c = b, c, a + b + c) and a vector beside them."""
    a, b, c = x[0], x[1], x[2]
    v = x.copy()
    k = 0
    while k < n:
        a, b, c = b, c, (a + b + c) * 0.5
        v = v * 0.5 + a
        k += 1
    return a, b, c, v


def fibonacci_pairs(n):
    a, b = np.int64(0), np.int64(1)
    for _ in range(n):
        a, b = b, a + b
    return a, b


def test_carried_scalars_trading_places(backend):
    x = np.array([1.0, -2.0, 3.0, 0.5])
    for n in (0, 1, 2, 7, 8):
        check(rotating_scalars, x, n, backend=backend)
    for n in (0, 1, 5, 90):
        check(fibonacci_pairs, n, backend=backend)


def test_a_scalar_loops_values_live_on_the_stack(backend):
    x = np.random.default_rng(5).standard_normal(1000)
    check(iir, x, 0.9, 0.1, backend=backend)
    nf = numfn.jit(iir, backend=backend).specialize(x, 0.9, 0.1)
    small = [buf for buf, dt, _ in nf.layout.intermediates if buf.size == 1]
    assert small, nf.layout.intermediates
    if backend == "llvm":
        assert all(f"%tmp{buf.number} = alloca" in nf.source for buf in small)
        assert "@malloc" not in nf.source and ".var = alloca ptr" not in nf.source   # no arena, nothing swapped
    else:
        assert all(f" tmp{buf.number}[1];" in nf.source for buf in small)
        assert "malloc(" not in nf.source.split("int numfn_")[-1]
