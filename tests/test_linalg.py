"""matmul, @ and dot against NumPy: vector and matrix operands, batches with broadcasting, dtypes, empty sizes."""
import numpy as np
import pytest

from helpers import check, check_raises_like, check_xp, magnitude, rand

MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (4, 1)), ((3, 1), (1, 3)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
    ((3, 0), (0, 4)), ((0, 4), (4, 2)), ((2, 0, 3), (3, 1)), ((1, 1), (1, 1)), ((17, 33), (33, 9)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
def test_matmul_shapes(backend, sa, sb):
    rng = np.random.default_rng(40)
    a, b = rand(sa, np.float64, rng), rand(sb, np.float64, rng)
    k = sa[-1]
    check_xp(lambda xp: lambda a, b: (xp.matmul(a, b), a @ b), a, b, backend=backend, scale=magnitude(a, b) ** 2 * k)


@pytest.mark.parametrize("da,db", [(np.float32, np.float32), (np.int32, np.int32), (np.int64, np.int64),
                                   (np.bool_, np.bool_), (np.int8, np.int8), (np.uint8, np.uint8),
                                   (np.int32, np.float32), (np.float32, np.float64), (np.bool_, np.int32),
                                   (np.int8, np.uint8)], ids=lambda d: np.dtype(d).name)
def test_matmul_dtypes(backend, da, db):
    # integer products wrap like NumPy's (int8 @ int8 accumulates in int8); bool @ bool is or-of-ands
    rng = np.random.default_rng(41)
    a, b = rand((3, 5, 7), da, rng, -40, 40), rand((7, 4), db, rng, -40, 40)
    v = rand((7,), db, rng, -40, 40)
    check(lambda a, b, v: (a @ b, np.matmul(a, v), v @ b, np.dot(a[0], b), np.dot(v, v)), a, b, v, backend=backend,
          scale=40.0 * 40.0 * 7)


def _dots(xp):
    def f(a, b, m, t, s):
        return (xp.dot(a, b), xp.dot(m, a), xp.dot(a, m.T), xp.dot(m, m.T), xp.dot(s, m), xp.dot(m, s), xp.dot(s, s),
                xp.dot(t, m.T), xp.dot(t, t.transpose(1, 2, 0)), xp.dot(a, t.transpose(0, 2, 1)), xp.dot(m, s * 2),
                xp.dot(t, a), xp.dot(m[:, :0], m[:0]))
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8], ids=lambda d: np.dtype(d).name)
def test_dot_every_form(backend, dtype):
    # scalars, 1-D, 2-D and N-D (sum over the last axis of a and the second-to-last of b)
    rng = np.random.default_rng(42)
    a, b = rand((4,), dtype, rng), rand((4,), dtype, rng)
    m, t, s = rand((3, 4), dtype, rng), rand((2, 3, 4), dtype, rng), rand((), dtype, rng)
    check_xp(_dots, a, b, m, t, s, backend=backend, scale=9.0 * 4 * 4)


def test_matmul_of_views_and_expressions(backend):
    rng = np.random.default_rng(43)
    a, b = rand((6, 8), np.float32, rng), rand((8, 6), np.float32, rng)
    check(lambda a, b: (a.T @ b.T, a[::2] @ b[:, ::-1], (a + 1) @ (b * 2), a @ a.T, (a @ b) @ a, a @ (b @ a),
                        (a @ b).sum(axis=0), np.maximum(a @ b, 0), a[:, :3] @ b[:3, ::3], a @ b[:, 0]),
          a, b, backend=backend, scale=3.0 ** 3 * 64 * 8)


def test_matmul_with_nan_and_inf(backend):
    a = np.array([[1.0, np.nan], [np.inf, 1.0], [np.inf, -np.inf], [0.0, 2.0]])
    b = np.array([[1.0, 0.0], [2.0, 3.0]])
    check(lambda a, b: (a @ b, np.dot(a, b[:, 0])), a, b, backend=backend)


def test_matmul_with_captured_constant(backend):
    w = rand((5, 3), np.float64, np.random.default_rng(44))
    x = rand((4, 5), np.float64, np.random.default_rng(45))
    check(lambda x: (x @ w, w.T @ x.T, np.dot(x, w) + 1), x, backend=backend, scale=100.0)


@pytest.mark.parametrize("make", [
    lambda a, b: a @ b,
    lambda a, b: np.matmul(a, b.T[:2]),
    lambda a, b: np.dot(a, b),
    lambda a, b: a[0, 0] @ b,
    lambda a, b: np.matmul(np.zeros((2, 3, 4)) + a[0, 0], np.zeros((3, 4, 5))),
    lambda a, b: np.dot(np.zeros((2, 3, 4)), np.zeros((5, 3, 2))),
], ids=["core", "core-2", "dot", "zero-d", "batch", "dot-nd"])
def test_shape_mismatch_raises_value_error(backend, make):
    a, b = np.zeros((3, 4)), np.zeros((3, 4))
    check_raises_like(make, a, b, backend=backend)


def test_dot_with_python_float(backend):
    m, i = np.ones((2, 3), np.float32), np.ones(3, np.int8)
    check(lambda m, i: (np.dot(m, 2.5), np.dot(2.5, m), np.dot(i, 3)), m, i, backend=backend)
