"""numfn.numpy.extras against NumPy: conversions, predicates, static index arrays, windows, vander, cov, corrcoef,
isin, fill_diagonal, unravel_index and ravel_multi_index; each as np.NAME on traced arrays (and numfn.numpy.NAME
where the two differ), with NumPy's errors for invalid input."""
from __future__ import annotations

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from tests.helpers import check, check_mutates, check_raises_like, check_xp, rand, specials

RNG = np.random.default_rng(7)
SHAPES_2D = [(0, 3), (1, 1), (3, 4), (4, 2)]


# ---- conversions and predicates -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 3)])
def test_conversions(dtype, shape):
    x = rand(shape, dtype, RNG)
    check(lambda a: (np.ascontiguousarray(a), np.asfortranarray(a), np.asanyarray(a),
                     np.ascontiguousarray(a, dtype=np.float64), np.asfortranarray(a.T, dtype=np.int64),
                     np.asanyarray(a, dtype=np.float32)), x, backend="llvm")


def test_conversions_of_views_and_scalars(backend):
    x = np.arange(12.0).reshape(3, 4)[::-1, ::2]
    check(lambda a: (np.ascontiguousarray(a), np.asfortranarray(a), np.ascontiguousarray(a[0, 0] * 2)), x,
          backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_isneginf_isposinf(dtype, backend):
    x = specials(dtype)
    check_xp(lambda xp: lambda a: (xp.isneginf(a), xp.isposinf(a), xp.isneginf(a.reshape(2, 9)[:, ::-1]),
                                   xp.isposinf(a[:0])), x, backend=backend)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_isneginf_isposinf_integers(dtype):
    check(lambda a: (np.isneginf(a), np.isposinf(a)), rand((5,), dtype, RNG), backend="llvm")


def test_isscalar_iterable():
    seen = {}

    def f(a):
        seen["traced"] = (np.isscalar(a), np.isscalar(3.0), np.isscalar([1]), np.iterable(a), np.iterable(a[0]),
                          np.iterable(5), np.iterable([1]))
        return a + 1
    numfn.jit(f)(np.arange(3.0))
    a = np.arange(3.0)
    # NumPy's answers on the same values (a traced a[0] is a 0-d array: not iterable, like np.array(1.0))
    assert seen["traced"] == (np.isscalar(a), np.isscalar(3.0), np.isscalar([1]), np.iterable(a),
                              np.iterable(np.array(1.0)), np.iterable(5), np.iterable([1]))
    for value in (1, 2.5, np.float32(1), "s", [1], np.arange(2), np.array(1.0), None):
        assert fnp.isscalar(value) == np.isscalar(value)
        assert fnp.iterable(value) == np.iterable(value)


def test_broadcast_shapes():
    for shapes in [((2, 1), (1, 3)), ((), (4,)), ((5, 0, 1), (3,)), ()]:
        assert fnp.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    with pytest.raises(ValueError):
        fnp.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_isin(dtype):
    x, t = rand((3, 4), dtype, RNG, -2, 2), rand((5,), dtype, RNG, -2, 2)
    check_xp(lambda xp: lambda a, b: (xp.isin(a, b), xp.isin(a, b, invert=True), xp.isin(a, b.reshape(5, 1)),
                                      xp.isin(a[0, 0], b), xp.isin(a, b[:0]), xp.isin(a[:0], b),
                                      xp.isin(a, 1), xp.isin(a, b, kind="sort")), x, t, backend="llvm")


def test_isin_nan_and_mixed_types(backend):
    x = specials(np.float64)
    check(lambda a, b: (np.isin(a, b), np.isin(b, a, invert=True)), x, np.array([0, 1, 3], np.int32),
          backend=backend)


# ---- static index arrays ------------------------------------------------------------------------------------------
def test_triangle_and_diagonal_indices(backend):
    x = np.zeros((3, 5))

    def f(a):
        return (np.tril_indices(4), np.triu_indices(4), np.tril_indices(3, 1, 5), np.triu_indices(3, -1, 2),
                np.tril_indices(0), np.triu_indices(1), np.tril_indices(3, -5), np.triu_indices(2, 5),
                np.tril_indices_from(a), np.triu_indices_from(a, 2), np.tril_indices_from(a, -1),
                np.diag_indices(3), np.diag_indices(0), np.diag_indices(2, 3),
                np.diag_indices_from(a[:, :3]), np.diag_indices_from(np.zeros((2, 2, 2))))
    check(f, x, backend=backend)


def test_indices_used_to_index(backend):
    x = rand((4, 4), np.float64, RNG)
    check(lambda a: (a[np.tril_indices_from(a)], a[np.triu_indices(4, 1)], a[np.diag_indices_from(a)]), x,
          backend=backend)


@pytest.mark.parametrize("shape,order", [((2, 3), "C"), ((4, 1, 3), "F"), ((5,), "C"), ((1,), "C")])
def test_unravel_ravel(shape, order, backend):
    size = int(np.prod(shape))
    flat = RNG.integers(0, size, (2, 3))
    coords = np.stack(np.unravel_index(flat, shape, order=order))
    check(lambda i, c: (np.unravel_index(i, shape, order=order), np.unravel_index(i[0, 0], shape, order=order),
                        np.unravel_index(np.array([size - 1, 0]), shape, order=order),
                        np.ravel_multi_index(tuple(c), shape, order=order),
                        np.ravel_multi_index(tuple(c + 1), shape, mode="wrap", order=order),
                        np.ravel_multi_index(tuple(c - 1), shape, mode="clip", order=order),
                        np.ravel_multi_index(tuple(c.astype(np.int32)), shape, order=order)),
          flat, coords, backend=backend)


def test_ravel_multi_index_modes_per_axis():
    c = (np.array([0, 3, -1]), np.array([5, -2, 1]))
    check(lambda a, b: np.ravel_multi_index((a, b), (3, 4), mode=("clip", "wrap")), *c, backend="llvm")


# ---- windows and vander -------------------------------------------------------------------------------------------
def test_windows(backend):
    def f(a):
        return tuple(w(m) for w in (np.hamming, np.hanning, np.blackman, np.bartlett) for m in (-1, 0, 1, 2, 5, 12))
    check(f, np.zeros(1), backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("n", [0, 1, 4])
def test_vander(dtype, n):
    x = rand((n,), dtype, RNG)
    check_xp(lambda xp: lambda a: (xp.vander(a), xp.vander(a, 3), xp.vander(a, 0), xp.vander(a, 1),
                                   xp.vander(a, increasing=True), xp.vander(a[::-1], 5, True)), x, backend="llvm")


# ---- cov and corrcoef ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(3, 5), (1, 4), (4,), (2, 1)])
def test_cov_corrcoef(dtype, shape):
    x = rand(shape, dtype, RNG)
    y = rand(shape, dtype, RNG)

    def f(a, b):
        return (np.cov(a), np.cov(a, bias=True), np.cov(a, ddof=0), np.cov(a, rowvar=False), np.cov(a, b),
                np.cov(a, dtype=np.float32), np.corrcoef(a), np.corrcoef(a, b), np.corrcoef(a, rowvar=False))
    check(f, x, y, backend="llvm", scale=100.0 * max(1, np.abs(x).max()) ** 2)


def test_cov_corrcoef_edge_cases(backend):
    x = np.array([[1.0, 2.0, 4.0], [2.0, 4.0, 8.0], [3.0, 3.0, 3.0]])
    check(lambda a: (np.cov(a, ddof=3), np.cov(a, ddof=5), np.cov(a[:0]), np.corrcoef(a[:2]),
                     np.corrcoef(a[0], 3 * a[0] + 1), np.corrcoef(a[0]), np.corrcoef(a), np.cov(a[:, :1])),
          x, backend=backend, scale=100.0)


def test_corrcoef_is_clipped():
    # values whose correlation NumPy rounds above 1 before clipping
    x = np.array([0.1, 0.7, 0.3, 1e3, -1e-3])
    check_xp(lambda xp: lambda a: xp.corrcoef(a, a * 3.0 + 0.1), x, backend="llvm")
    assert np.all(np.abs(numfn.jit(lambda a: np.corrcoef(a, a * 3.0 + 0.1))(x)) <= 1.0)


# ---- fill_diagonal ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 3), False), ((7, 3), True), ((2, 4), False),
                                        ((3, 3, 3), False), ((0, 0), False), ((1, 1), False)])
def test_fill_diagonal(shape, wrap, backend):
    a = rand(shape, np.float64, RNG)
    check_mutates(lambda a: np.fill_diagonal(a, 9.5, wrap=wrap), a, backend=backend)
    check_mutates(lambda a, v: np.fill_diagonal(a, v, wrap=wrap), a, np.array([1.0, -2.0]), backend=backend)


def test_fill_diagonal_integers_and_traced_value():
    a = np.zeros((4, 4), np.int32)
    check_mutates(lambda a, v: np.fill_diagonal(a, v[1:] * 2), a, np.array([3, 4, 5], np.int32), backend="llvm")


# ---- invalid input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,args", [
    (lambda a: np.tril_indices_from(a), (np.zeros(3),)),
    (lambda a: np.triu_indices_from(a), (np.zeros((2, 2, 2)),)),
    (lambda a: np.diag_indices_from(a), (np.zeros((2, 3)),)),
    (lambda a: np.diag_indices_from(a), (np.zeros(3),)),
    (lambda a: np.vander(a), (np.zeros((2, 2)),)),
    (lambda a: np.vander(a, -1), (np.zeros(2),)),
    (lambda a: np.cov(a), (np.zeros((2, 2, 2)),)),
    (lambda a: np.corrcoef(a), (np.zeros((2, 2, 2)),)),
    (lambda a: np.fill_diagonal(a, 1.0), (np.zeros(3),)),
    (lambda a: np.fill_diagonal(a, 1.0), (np.zeros((2, 3, 2)),)),
    (lambda a: np.isin(a, a, kind="bogus"), (np.zeros(3),)),
    (lambda a: np.unravel_index(np.array([6]), (2, 3)), (np.zeros(1),)),
    (lambda a: np.unravel_index(np.array([-1]), (2, 3)), (np.zeros(1),)),
    (lambda a: np.unravel_index(a, (2, 3)), (np.zeros(2),)),
    (lambda a: np.unravel_index(a, (2, 3)), (np.array([1, 7]),)),
    (lambda a: np.ravel_multi_index((np.array([2]), np.array([0])), (2, 3)), (np.zeros(1),)),
    (lambda a: np.ravel_multi_index((a, a), (2, 3)), (np.array([0, 2]),)),
    (lambda a: np.ravel_multi_index((a,), (2, 3)), (np.array([0]),)),
    (lambda a: np.ravel_multi_index((a, a), (2, 3)), (np.array([0.0]),)),
    (lambda a: np.ravel_multi_index((a, a), (2, 3), mode="bogus"), (np.array([0]),)),
])
def test_errors(fn, args):
    check_raises_like(fn, *args, backend="llvm")
