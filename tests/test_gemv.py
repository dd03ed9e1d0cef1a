"""Matrix-vector products (issue 27, item 2): `A @ x`, `x @ A`, `A.T @ y`, outer-product updates, with views
(strided, negative strides, transposed) and in native loops, against NumPy on the same inputs; which of them call
BLAS's GEMV (numfn.extern.GEMV_MIN_MACS) and which stay generated code; and windowed products in loops
(`d[:, i] @ d[:, i:]`), whose kernels must run over the window's run-time length, not the array's static bound
(versions.readers_gate, codegen/narrow.py): checked on the kernels' loops, not by timing."""
import numpy as np
import pytest

import numfn
import numfn.extern
from helpers import check, check_mutates, cholesky_columns, covariance, rand
from numfn.codegen.narrow import is_narrowed, narrow
from numfn.codegen.opt import heuristic_options
from numfn.ir.uop import Ops, toposort
from numfn.runtime import blas
from numfn.schedule import ExternKernel, all_items

RNG = np.random.default_rng(27002)
DTYPES = [np.float64, np.float32]
needs_blas = pytest.mark.skipif(blas.interface() is None, reason="no BLAS library found")


def dtype_id(d) -> str:
    return np.dtype(d).name


def view(kind: str, shape: tuple, dtype) -> np.ndarray:
    """An operand of `shape`: contiguous, every other element (strided), reversed along every axis (negative
    strides), or the transpose of a contiguous array (column-major)."""
    if kind == "contiguous": return rand(shape, dtype, RNG)
    if kind == "strided":
        return rand(tuple(2 * n for n in shape), dtype, RNG)[tuple(slice(None, None, 2) for _ in shape)]
    if kind == "reversed": return rand(shape, dtype, RNG)[tuple(slice(None, None, -1) for _ in shape)]
    if kind == "transposed": return rand(shape[::-1], dtype, RNG).T
    raise KeyError(kind)


def a_x(A, x): return A @ x
def x_a(A, x): return x @ A
def at_y(A, y): return A.T @ y
def dot_a_x(A, x): return np.dot(A, x)
def chained(A, x): return (A @ x) @ A


def outer_update(A, u, v): return A + np.outer(u, v)
def outer_update_in_place(A, u, v):
    A -= u[:, None] * v[None, :]
    return A


def two_products(A, B, x, y): return A @ x + B @ y


SQUARE = [a_x, x_a, at_y, dot_a_x, chained]
KINDS = ["contiguous", "strided", "reversed", "transposed"]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 7, 37, 400])
def test_square_matrix_vector_products(n, kind, dtype, backend):
    # 400 x 400 = 160,000 multiply-adds: GEMV (from 2^17); the smaller ones are generated kernels
    A = view(kind, (n, n), dtype)
    x = view("reversed" if kind == "contiguous" else "contiguous", (n,), dtype)
    for fn in SQUARE:
        check(fn, A, x, backend=backend, scale=max(n, 1) * 10.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (1, 9), (9, 1), (3, 513), (513, 3), (700, 300), (300, 700)])
def test_rectangular_matrix_vector_products(shape, dtype, backend):
    for kind in ("contiguous", "transposed", "strided"):
        A = view(kind, shape, dtype)
        check(a_x, A, rand((shape[1],), dtype, RNG), backend=backend, scale=shape[1] * 10.0 + 1)
        check(x_a, A, rand((shape[0],), dtype, RNG)[::-1], backend=backend, scale=shape[0] * 10.0 + 1)
        check(at_y, A, rand((shape[0],), dtype, RNG), backend=backend, scale=shape[0] * 10.0 + 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (5, 7), (64, 33), (300, 500)])
def test_outer_product_updates(shape, dtype, backend):
    A = rand(shape, dtype, RNG)
    u, v = rand((shape[0],), dtype, RNG), rand((shape[1],), dtype, RNG)[::-1]
    check(outer_update, A, u, v, backend=backend)
    check_mutates(outer_update_in_place, A.copy(), u, v, backend=backend)
    check(outer_update, A.T.copy().T, u, v, backend=backend)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_sums_of_products(dtype, backend):
    A, B = view("contiguous", (450, 450), dtype), view("transposed", (450, 450), dtype)
    x, y = rand((450,), dtype, RNG), rand((450,), dtype, RNG)[::-1]
    check(two_products, A, B, x, y, backend=backend, scale=4500.0)


def power_steps(A, x, steps):
    for _ in range(steps):
        x = A @ x
        x = x / np.abs(x).max()
    return x


def jacobi(A, b):
    d = np.diag(A)
    R = A - np.diag(d)
    x = np.zeros_like(b)
    residual = np.abs(A @ x - b).max()
    while residual > 1e-8:
        x = (b - R @ x) / d
        residual = np.abs(A @ x - b).max()
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", [1, 9, 400])
def test_products_inside_native_loops(n, dtype, backend):
    A = rand((n, n), dtype, RNG) + n * np.eye(n, dtype=dtype)
    x = rand((n,), dtype, RNG)
    check(power_steps, A, x, 5, backend=backend, scale=10.0)
    check(power_steps, A[::-1, ::-1], x[::-1], 3, backend=backend, scale=10.0)
    a = rand((n, n), np.float64, RNG)
    a += np.diag(np.abs(a).sum(axis=1) + 1)
    check(jacobi, a, rand((n,), np.float64, RNG), backend=backend, scale=10.0)


# ---- windows of run-time length inside loops -----------------------------------------------------------------

def window_sums(d):
    n, m = d.shape
    out = np.zeros(m, d.dtype)
    for i in range(m):
        out[i:] += d[:, i] @ d[:, i:]
    return out


def prefix_products(A, x):
    out = np.zeros(A.shape[1], A.dtype)
    for i in range(A.shape[0] + 1):
        out += x[:i] @ A[:i, :]
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (1, 6), (9, 7), (40, 33), (21, 70)])
def test_windowed_products_in_loops(shape, dtype, backend):
    for kind in ("contiguous", "strided", "reversed", "transposed"):
        d = view(kind, shape, dtype)
        check(window_sums, d, backend=backend, scale=shape[0] * 10.0)
        check(covariance, d, backend=backend, scale=10.0)
        check(prefix_products, d, rand((shape[0],), dtype, RNG), backend=backend, scale=shape[0] * 10.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", [1, 2, 17])
def test_cholesky_windows(n, dtype, backend):
    m = rand((n, n), dtype, RNG)
    a = m @ m.T + n * np.eye(n, dtype=dtype)
    check(cholesky_columns, a, backend=backend, scale=10.0)
    check(cholesky_columns, np.asfortranarray(a), backend=backend, scale=10.0)


def test_a_window_of_width_zero_changes_nothing(backend):
    d = rand((6, 4), np.float64, RNG)

    def tail_products(d, k):
        out = np.zeros(d.shape[1])
        for i in range(k):
            out[d.shape[1]:] += d[:, i] @ d[:, d.shape[1]:]   # an empty window every step
            out[i:] += d[:, i] @ d[:, i:]
        return out
    check(tail_products, d, 4, backend=backend)
    check(tail_products, d, 0, backend=backend)


# ---- which kernels run: GEMV or generated code, and over what extent ----------------------------------------

def kernels(fn, *args):
    return all_items(numfn.jit(fn).specialize(*args).schedule)


def extern_routines(fn, *args) -> list[str]:
    return [ei.kernel.node.arg.routine for ei in kernels(fn, *args) if isinstance(ei.kernel, ExternKernel)]


@needs_blas
@pytest.mark.nocompile
@pytest.mark.parametrize("fn", [a_x, x_a, at_y], ids=lambda f: f.__name__)
def test_matrix_vector_products_call_gemv_from_the_threshold(fn):
    side = int(np.ceil(np.sqrt(numfn.extern.GEMV_MIN_MACS)))
    big, small = np.ones((side, side)), np.ones((side - 2, side - 2))
    assert extern_routines(fn, big, np.ones(side)) == ["gemv"]
    assert extern_routines(fn, small, np.ones(side - 2)) == []   # generated, fused with what surrounds it
    assert extern_routines(fn, big.astype(np.int64), np.ones(side, np.int64)) == []   # integers: generated


@needs_blas
@pytest.mark.nocompile
def test_gemv_takes_views_in_place():
    # a transposed or strided matrix is handed to GEMV with its strides: no kernel copies it first
    A = np.ones((800, 800))
    for operand in (A.T, A[::-1, :], A[:, ::2].T):
        items = kernels(a_x, operand, np.ones(operand.shape[1]))
        assert [type(ei.kernel).__name__ for ei in items].count("ExternKernel") == 1
        copies = [ei for ei in items if ei.lowered is not None and ei.kernel.shape == operand.shape]
        assert copies == [], [ei.kernel.name for ei in copies]
    assert extern_routines(power_steps, A, np.ones(800), 3) == ["gemv"]   # inside a native loop too


def _reduction_kernels(items):
    return [ei for ei in items if ei.lowered is not None
            and any(u.op is Ops.REDUCE for u in toposort([ei.lowered.sink]))]


@pytest.mark.nocompile
@pytest.mark.parametrize("fn", [covariance, window_sums], ids=lambda f: f.__name__)
def test_a_windowed_product_runs_over_its_window(fn):
    # the product d[:, i] @ d[:, i:] of the loop's body: its kernel's output loop (over the columns) runs to the
    # window's run-time length (a narrowed loop: its RANGE has a run-time end), not to the static 50 columns
    d = np.ones((300, 50))
    products = [ei for ei in _reduction_kernels(kernels(fn, d)) if ei.kernel.shape == (1, 50) or
                ei.kernel.shape == (50,)]
    assert products, [ei.kernel.name for ei in kernels(fn, d)]
    for ei in products:
        gated = [st for st in ei.lowered.sink.src if st.op is Ops.STORE and len(st.src) > 3]
        assert gated, ei.kernel.name   # stored under the window's gate
        narrowed = narrow(ei.lowered)
        windows = [r for r in narrowed.ranges if is_narrowed(r)]
        assert windows, ei.kernel.name
        # ... tiled into vectors along the window (opt.upcast_window), its loads being contiguous there
        assert [rid for rid, _ in heuristic_options(narrowed, False).upcasts] == [windows[0].arg[0]]
