"""Stacks of small matrices (numfn.numpy.linalg's generated elimination: n <= SMALL_N, at least small_batch(n) of
them) against NumPy: solve, inv, det, slogdet and cond over sizes, dtypes, broadcast and empty batches, views,
pivoting (ties included), singular matrices, vmap and threads. Each stack is the smallest that takes the generated
path (its compile time does not depend on the stack's length)."""
import numpy as np
import pytest

import numfn
from numfn.numpy import linalg as NL
from numfn.numpy.linalg_small import small_batch
from numfn.runtime import blas
from helpers import check, long_only, rand

L = np.linalg
needs_blas = pytest.mark.skipif(blas.interface() is None, reason="no BLAS/LAPACK library (the LAPACK path)")


def _systems(rng, batch, n, dtype):
    """Well-conditioned matrices that need pivoting: diagonally dominant ones with their rows shuffled."""
    a = rand(batch + (n, n), np.float64, rng) + 3 * n * np.eye(n)
    order = np.argsort(rng.random(batch + (n,)), axis=-1)
    return np.take_along_axis(a, order[..., None], axis=-2).astype(dtype)


def _all(a, b, v):
    return (L.solve(a, b), L.solve(a, b[..., :1]), L.solve(a[0], v), L.inv(a), L.det(a), L.slogdet(a))


@pytest.mark.parametrize("n,dtype", [(1, np.float32), (1, np.float64), (2, np.float64), (3, np.float32),
                                     (4, np.float32), (5, np.float64),
                                     long_only(6, np.float32, why="the generated elimination of 4 and 5, larger "
                                               "(24 s of the suite)"),
                                     long_only(8, np.float64, why="the generated elimination of 5 and 6, larger")],
                         ids=str)
def test_small_stacks_match_numpy(n, dtype):
    rng = np.random.default_rng(n)
    m = max(20, small_batch(n))
    a = _systems(rng, (m,), n, dtype)
    b, v = rand((m, n, 3), dtype, rng), rand((n,), dtype, rng)
    jf = numfn.jit(_all)
    calls = [k.name for k in jf.specialize(a, b, v).rendered_kernels if k.name.startswith("X_")]
    assert len(calls) == (n > NL.SMALL_ALWAYS_N), calls   # LAPACK only for the single matrix a[0]
    check(_all, a, b, v, backend="llvm", rtol=2e-5 if dtype == np.float32 else 1e-11, scale=10.0, jitted=jf)


def test_small_stacks_on_the_c_backend_and_in_integers(backend):
    rng = np.random.default_rng(1)
    a = _systems(rng, (16, 20), 4, np.float64)   # batch of 320 = small_batch(4) in two axes
    assert a.shape[0] * a.shape[1] == small_batch(4)
    b = rand((16, 20, 4, 2), np.float64, rng)
    check(_all, a, b, b[0, 0, :, 0], backend=backend, rtol=1e-11, scale=10.0)
    ints = np.round(a).astype(np.int32)
    check(lambda a: (L.solve(a, a[..., :2]), L.det(a)), ints, backend=backend, rtol=1e-9, scale=1e3)


def test_random_matrices_and_broadcast_batches():
    # plain random matrices (any conditioning: tolerance scaled by the solution's size), batches broadcasting
    rng = np.random.default_rng(2)
    a, b = rand((36, 1, 6, 6), np.float64, rng), rand((1, 30, 6, 2), np.float64, rng)   # 1080 = small_batch(6)
    assert 36 * 30 == small_batch(6)
    f = numfn.jit(lambda a, b: (L.solve(a, b), L.inv(a[:, 0]), L.det(a), L.slogdet(a)))
    got, want = f(a, b), (L.solve(a, b), L.inv(a[:, 0]), L.det(a), L.slogdet(a))
    scale = np.abs(want[0]).max() + np.abs(want[1]).max()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-8, atol=1e-10 * scale)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-8, atol=1e-10 * scale)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-10)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-10)


def test_pivot_ties_take_the_first_row_as_lapack():
    # columns whose candidates tie in |a| (+-1, +-2): LAPACK takes the first; any other choice gives different
    # rounding (0.1 is inexact) and a different sign bookkeeping
    rng = np.random.default_rng(3)
    a = rng.choice([-2.0, -1.0, 1.0, 2.0], size=(1200, 4, 4)) + 0.1 * np.eye(4)
    a = a[np.abs(L.det(a)) > 0.5][:small_batch(4)]
    assert len(a) == small_batch(4)
    b = rand(a.shape[:-1] + (1,), np.float64, rng)
    f = numfn.jit(lambda a, b: (L.solve(a, b), L.slogdet(a)))
    got = f(a, b)
    np.testing.assert_allclose(got[0], L.solve(a, b), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(got[1].sign, L.slogdet(a).sign)
    # log|det| near 0 (|det| near 1): its absolute error is det's relative error, so the tolerance of values of order 1
    np.testing.assert_allclose(got[1].logabsdet, L.slogdet(a).logabsdet, rtol=1e-13, atol=1e-13)


def test_views_as_operands(backend):
    rng = np.random.default_rng(4)
    m = 2 * small_batch(5)   # a[::2] (5x5) takes the generated path too
    a = _systems(rng, (m,), 5, np.float64)
    b = rand((5, m, 3), np.float64, rng)
    check(lambda a, b: (L.solve(a[::-1].swapaxes(-1, -2), b.transpose(1, 0, 2)), L.inv(a[::2, ::-1, :]),
                        L.det(a[:, 1:, 1:]), L.solve(a[:, :3, :3], b.transpose(1, 0, 2)[:, :3, ::2])),
          a, b, backend=backend, rtol=1e-11, scale=10.0)


def test_singular_matrices():
    rng = np.random.default_rng(5)
    a = _systems(rng, (small_batch(4),), 4, np.float64)
    a[7] = 0.0                         # a zero pivot at the first column
    a[11, :, 2] = a[11, :, 0] * 0.0    # at a later one
    a[13] = np.array([[1.0, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 0], [0, 0, 1, 1]])   # exactly zero after elimination
    b = rand((small_batch(4), 4, 2), np.float64, rng)
    for fn in (lambda a, b: L.solve(a, b), lambda a, b: L.inv(a)):
        with pytest.raises(L.LinAlgError, match="Singular matrix"):
            fn(a, b)
        with pytest.raises(L.LinAlgError, match="Singular matrix"):
            numfn.jit(fn)(a, b)
    # no error where NumPy gives none: det 0, slogdet's sign 0 and -inf; cond's inf
    check(lambda a: (L.det(a), L.slogdet(a), L.cond(a, 1)), a, backend="llvm", rtol=1e-11, scale=100.0)
    ok = a.copy()
    ok[[7, 11, 13]] = np.eye(4)
    np.testing.assert_allclose(numfn.jit(lambda a, b: L.solve(a, b))(ok, b), L.solve(ok, b), rtol=1e-11)


def test_empty_and_threshold_batches():
    rng = np.random.default_rng(6)
    n = NL.SMALL_ALWAYS_N + 1
    least = small_batch(n)
    # empty, below the least stack (LAPACK), at it (generated)
    for batch in ((0,), (3, 0), (1,), (least - 1,), (least,)):
        a = _systems(rng, batch, n, np.float64)
        b = rand(batch + (n, 2), np.float64, rng)
        f = lambda a, b: (L.solve(a, b), L.inv(a), L.det(a), L.slogdet(a))  # noqa: E731
        generated = np.prod(batch) >= least
        if not blas.interface() and not generated and np.prod(batch): continue
        names = [k.name for k in numfn.jit(f).specialize(a, b).rendered_kernels]
        assert generated == (not any(k.startswith("X_") for k in names)) or not np.prod(batch), (batch, names)
        for g, w in zip(numfn.jit(f)(a, b), f(a, b)):
            g, w = (g, w) if not isinstance(w, tuple) else (np.stack(g), np.stack(w))
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_under_vmap_and_threads():
    rng = np.random.default_rng(7)
    a = _systems(rng, (3, small_batch(6)), 6, np.float64)
    b = rand((3, small_batch(6), 6, 1), np.float64, rng)
    f = lambda a, b: (L.solve(a, b), L.det(a))  # noqa: E731
    want = tuple(np.stack(x) for x in zip(*[f(a[i], b[i]) for i in range(3)]))
    for g, w in zip(numfn.vmap(f)(a, b), want): np.testing.assert_allclose(g, w, rtol=1e-11)
    bad = a.copy()
    bad[2, 4] = 0.0
    with pytest.raises(L.LinAlgError, match="Singular matrix"):
        numfn.vmap(f)(bad, b)
    many, rhs = _systems(rng, (3000,), 4, np.float64), rand((3000, 4, 1), np.float64, rng)
    jf = numfn.jit(lambda a, b: L.solve(a, b))
    before = numfn.runtime.threads.thread_count()
    try:
        for threads in (1, 2):
            numfn.set_num_threads(threads)
            np.testing.assert_allclose(jf(many, rhs), L.solve(many, rhs), rtol=1e-11, err_msg=f"threads={threads}")
    finally:
        numfn.set_num_threads(before)


def test_single_tiny_matrices_and_vmap_use_generated_code():
    # up to SMALL_ALWAYS_N even one matrix (and so a function vmap maps) is generated code: no LAPACK call
    rng = np.random.default_rng(9)
    a, b = _systems(rng, (30,), 3, np.float64), rand((30, 3), np.float64, rng)
    f = lambda a, b: (L.solve(a, b), L.inv(a), L.det(a))  # noqa: E731
    mapped = numfn.vmap(f)
    for g, w in zip(mapped(a, b), (L.solve(a, b[..., None])[..., 0], L.inv(a), L.det(a))):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    names = [k.name for k in numfn.jit(f).specialize(a[0], b[0]).rendered_kernels]
    assert not any(n.startswith("X_") for n in names), names
    singular = a.copy()
    singular[4, 1] = singular[4, 0]
    with pytest.raises(L.LinAlgError, match="Singular matrix"):
        mapped(singular, b)


@needs_blas
def test_larger_or_fewer_matrices_keep_lapack():
    # the generated path is only where it was chosen: 9x9 (above SMALL_N) and single matrices call LAPACK
    rng = np.random.default_rng(8)
    a9, a1 = _systems(rng, (20,), NL.SMALL_N + 1, np.float64), _systems(rng, (), 4, np.float64)
    nf = numfn.jit(lambda a, c: (L.solve(a, a[..., :1]), L.inv(c))).specialize(a9, a1)
    names = [k.name for k in nf.rendered_kernels]
    assert sum(n.startswith("X_gesv") for n in names) == 2, names


def test_nan_and_inf_entries_follow_numpy():
    # the pivot search passes over NaN (as OpenBLAS's idamax does): a column [0, NaN, 0] has the zero pivot, so
    # NumPy's error; infinities and all-NaN matrices spread as in LAPACK. (Where a NaN sits among finite entries,
    # which entries of x it reaches depends on the order of LAPACK's updates: not compared.)
    rng = np.random.default_rng(10)
    a, b = rand((20, 3, 3), np.float64, rng), rand((20, 3, 1), np.float64, rng)
    a[5, 0, 0], a[6, 2, 1], a[9] = np.inf, -np.inf, np.nan
    f = lambda a, b: (L.solve(a, b), L.det(a), L.slogdet(a))  # noqa: E731
    check(f, a, b, backend="llvm", rtol=1e-10, scale=100.0)
    a[7, :, 0] = [0.0, np.nan, 0.0]
    with pytest.raises(L.LinAlgError, match="Singular matrix"):
        L.solve(a, b)
    with pytest.raises(L.LinAlgError, match="Singular matrix"):
        numfn.jit(f)(a, b)


def test_subnormal_pivots():
    # a pivot below the smallest normal number has no finite reciprocal: its column is scaled first
    a = np.array([[[3e-310, 1e-310], [1e-310, 2.0]], [[1e-320, 0.0], [5e-321, 1.0]]])
    b = np.array([[[1e-300], [1.0]], [[1e-310], [2.0]]])
    check(lambda a, b: (L.solve(a, b), L.det(a), L.slogdet(a)), a, b, backend="llvm", rtol=1e-12, atol=0.0)
