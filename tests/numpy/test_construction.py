"""Array construction against NumPy: evenly spaced values (linspace, logspace, geomspace: NumPy's arithmetic, so
values agree to the last bit or within a few ulp), grids (meshgrid, mgrid, ogrid, indices), matrices from their
indices (identity, tri, tril, triu, diag, diagflat), empty and copy; with Python-number arguments, traced arguments
of every dtype, keyword variants, and the exceptions NumPy raises."""
import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from helpers import ALL_DTYPES, assert_same, check, check_xp, numpy_exception, numpy_result, public_type, rand


def _spaced(xp):
    """Sequences from Python numbers (np.* computes these while tracing: numfn.numpy's are the subject)."""
    return lambda x: (
        xp.linspace(0, 1), xp.linspace(0, 1, 5), xp.linspace(2, -3, 7, endpoint=False), xp.linspace(0, 1, 0),
        xp.linspace(0, 1, 1), xp.linspace(0, 1, 1, endpoint=False), xp.linspace(5, 5, 4), xp.linspace(0, 1e-320, 5),
        xp.linspace(0, 10, 7, dtype=np.int32), xp.linspace(-5, 5, 6, dtype=np.int64),
        xp.linspace(-1.5, 3, 4, dtype=int),
        xp.linspace(0, 1, 5, dtype=np.float32), xp.linspace(np.float32(0), 1, 5), xp.linspace(0, 3, 3, dtype=bool),
        xp.linspace(0, 1, 5, retstep=True), xp.linspace(0, 1, 1, retstep=True), xp.linspace(1, 2, 0, retstep=True),
        xp.linspace(0.1, 0.7, 3, endpoint=False, retstep=True),
        xp.linspace(np.float32(1), np.float32(2), 3, retstep=True), xp.linspace([0, 1], [2, 5], 4),
        xp.linspace([0, 1], 2, 3, axis=1), xp.linspace([[0], [1]], [2, 3, 4], 3, axis=-1),
        xp.linspace(0, [1, 2], 3, axis=0, retstep=True), xp.linspace(np.array([0, 1], np.int8), 3, 4),
        xp.linspace(1, 7, 4, dtype=np.uint8), xp.linspace(True, False, 3),
        xp.logspace(0, 2, 5), xp.logspace(0, 2, 4, base=2), xp.logspace(1, 3, 3, endpoint=False, dtype=np.float32),
        xp.logspace([0, 1], 2, 3, axis=1), xp.logspace(0, 1, 3, base=np.array([2.0, 3.0]), axis=1),
        xp.logspace(0, 3, 4, dtype=np.int32), xp.logspace(np.float32(0), 1, 3),
        xp.logspace(0, 1, 3, base=np.float64(3)),
        xp.logspace(-2, 2, 0), xp.logspace(0, 1, 3, base=np.array([[2.0], [10.0]])),
        xp.geomspace(1, 1000, 4), xp.geomspace(-1, -1000, 4), xp.geomspace(1, 256, 9, endpoint=False),
        xp.geomspace([1, 2], [8, 32], 4, axis=1), xp.geomspace(2, 2, 3), xp.geomspace(1, 10, 1),
        xp.geomspace(np.float32(1), 10, 3), xp.geomspace(np.float32(1), 10, 3, dtype=np.float32),
        xp.geomspace(3, 0.1, 5), xp.geomspace(1, 2, 0), xp.geomspace([-1, 2], [-8, 0.5], 3)) + (
        # truncating to integers needs log10(1000) == 3 exactly: numfn.numpy's log10 (not log(x) / log(10))
        (xp.geomspace(1, 1000, 4, dtype=np.int32),) if hasattr(fnp, "log10") else ())


def test_spaced_from_python_numbers(backend):
    check(_spaced(fnp), np.zeros(1), backend=backend, expected=numpy_result(_spaced(np), (np.zeros(1),)))


def _spaced_traced(xp):
    def f(x):
        a, b = x[0], x[1]
        return (xp.linspace(a, b, 5), xp.linspace(a, b, 4, endpoint=False, retstep=True), xp.linspace(x, x * 2 + 1, 3),
                xp.linspace(x, 10, 3, axis=1, retstep=True), xp.linspace(0, x, 4, dtype=np.int32),
                xp.linspace(x, x, 3), xp.linspace(a, a + 1e-320, 4), xp.linspace(x, x[::-1], 1),
                xp.logspace(a, b, 3), xp.logspace(x, 1, 4, base=2.0, axis=-1), xp.logspace(0, x, 2, base=np.float32(2)),
                xp.geomspace(x * x + 1, 10, 4), xp.geomspace(1, -(x * x + 0.5), 3, axis=1))
    return f


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_spaced_from_traced_values(backend, dtype):
    x = rand((3,), dtype, np.random.default_rng(70))
    if dtype is np.float64: check_xp(_spaced_traced, x, backend=backend)
    else: check(_spaced_traced(fnp), x, backend=backend, expected=numpy_result(_spaced_traced(np), (x,)))


def test_spaced_on_c_backend():
    x = rand((3,), np.float32, np.random.default_rng(71))
    check(_spaced_traced(fnp), x, backend="c", expected=numpy_result(_spaced_traced(np), (x,)))


def test_linspace_values_are_numpys_to_the_last_bit(backend):
    # the same formula in the same order (step = delta / div, i * step + start, the end set to stop)
    x = np.array([0.1, 7.3, -2.9, 1e300, -1e-300])
    f = numfn.jit(lambda x: tuple(fnp.linspace(x[i], x[j], 11, endpoint=e) for i in range(5) for j in range(5)
                                  for e in (True, False)), backend=backend)
    expected = tuple(np.linspace(x[i], x[j], 11, endpoint=e) for i in range(5) for j in range(5) for e in (True, False))
    assert_same(f(x), expected, rtol=0.0, atol=0.0)


def _grids(xp):
    def f(x, y):
        return (xp.meshgrid(x, y), xp.meshgrid(x, y, indexing="ij"), xp.meshgrid(x, y, sparse=True),
                xp.meshgrid(x, y, x[:2], indexing="ij", sparse=True), xp.meshgrid(x, y, x, copy=False),
                xp.meshgrid(x), xp.meshgrid(x[:0], y), xp.meshgrid(y.reshape(2, 2), x[0]), xp.meshgrid(x[0]),
                xp.indices((2, 3)), xp.indices((2, 3), dtype=np.float32), xp.indices((3, 1, 2), sparse=True),
                xp.indices(()), xp.indices((0, 3)), xp.indices((4,), dtype=np.int8), xp.indices((2, 2), bool))
    return f


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_grids(backend, dtype):
    rng = np.random.default_rng(72)
    check_xp(_grids, rand((3,), dtype, rng), rand((4,), dtype, rng), backend=backend)


def test_mgrid_and_ogrid(backend):
    keys = [np.s_[0:5], np.s_[0:5:2], np.s_[1:2:0.25], np.s_[0:1:5j], np.s_[3:-1:-1], np.s_[-1:1:3j, 0:4],
            np.s_[0:3, 0:2], np.s_[0:2:3j, 1:3:1j], np.s_[0:3, 0:2:1j], np.s_[5:0], np.s_[0:5, 2:2], np.s_[:3, 1:7:3],
            np.s_[0:3:0.5, 0:2], np.s_[0.5:2:0.5, 3:0:-1, 0:1:2j]]
    f = numfn.jit(lambda x: tuple(g[k] for g in (fnp.mgrid, fnp.ogrid) for k in keys), backend=backend)
    assert_same(f(np.zeros(1)), tuple(g[k] for g in (np.mgrid, np.ogrid) for k in keys))


def _matrices(xp):
    def f(x):
        out = [xp.copy(x), x.copy(), xp.tril(x), xp.triu(x)] if x.ndim else [xp.copy(x)]
        if x.ndim >= 1:
            out += [xp.tril(x, 1), xp.tril(x, -2), xp.triu(x, 2), xp.triu(x, -1), xp.tril(x, 9), xp.triu(x, -9)]
        if x.ndim == 1:
            out += [xp.diag(x, k) for k in (-2, -1, 0, 1, 3)] + [xp.diagflat(x), xp.diagflat(x, -1)]
        if x.ndim == 2:
            out += [xp.diag(x, k) for k in (-3, -1, 0, 1, 2, 5)] + [xp.diagflat(x, 2), xp.diagflat(x.T, -1)]
        return tuple(out) + (xp.identity(3, dtype=x.dtype), xp.tri(3, 4, 1, dtype=x.dtype), xp.empty_like(x).shape)
    return f


# every shape in float64, every dtype on a 2-D shape
MATRIX_CASES = [(np.float64, s) for s in [(), (0,), (1,), (5,), (1, 1), (0, 3), (2, 3, 4)]] + \
    [(d, (3, 4)) for d in ALL_DTYPES]


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype,shape", MATRIX_CASES, ids=lambda v: np.dtype(v).name if isinstance(v, type) else str(v))
def test_matrices(backend, dtype, shape):
    x = rand(shape, dtype, np.random.default_rng(73))
    check_xp(_matrices, x, backend=backend) if shape == (3, 4) else \
        check(_matrices(fnp), x, backend=backend, expected=numpy_result(_matrices(np), (x,)))


def test_index_matrices_from_python_numbers(backend):
    check(lambda x: (fnp.identity(3), fnp.identity(0), fnp.identity(1, np.int32), fnp.identity(2, bool), fnp.tri(3),
                     fnp.tri(3, 4, 1), fnp.tri(4, 2, -1), fnp.tri(0), fnp.tri(2, dtype=np.int32), fnp.tri(3, 0),
                     fnp.tri(3, k=-5, dtype=bool), fnp.empty((2, 3)), fnp.empty(4, np.int8), fnp.empty_like(x),
                     fnp.empty_like(x, dtype=np.int32, shape=(2, 2)), fnp.tril([[1, 2], [3, 4]]),
                     fnp.diag([1.5, 2.5]), fnp.diagflat([[1, 2], [3, 4]])), np.ones(3), backend=backend,
          expected=(np.identity(3), np.identity(0), np.identity(1, np.int32), np.identity(2, bool), np.tri(3),
                    np.tri(3, 4, 1), np.tri(4, 2, -1), np.tri(0), np.tri(2, dtype=np.int32), np.tri(3, 0),
                    np.tri(3, k=-5, dtype=bool), np.zeros((2, 3)), np.zeros(4, np.int8), np.zeros(3),
                    np.zeros((2, 2), np.int32), np.tril([[1, 2], [3, 4]]), np.diag([1.5, 2.5]),
                    np.diagflat([[1, 2], [3, 4]])))


def test_copy_is_not_a_view(backend):
    def f(x):
        y = x * 2
        z = np.copy(y)
        z += 1   # allowed: a copy shares no memory
        w = y.copy()
        w *= 3
        return y, z, w
    check(f, np.arange(4.0), backend=backend)


ERRORS = [
    lambda xp, x: xp.linspace(0, 1, -1), lambda xp, x: xp.linspace(0, 1, 2.5),
    lambda xp, x: xp.linspace(0, 1, 3, axis=1),
    lambda xp, x: xp.linspace(x, 1, 3, axis=3), lambda xp, x: xp.geomspace(0, 1), lambda xp, x: xp.geomspace(1, [2, 0]),
    lambda xp, x: xp.logspace(0, 1, -2), lambda xp, x: xp.meshgrid(x, indexing="foo"), lambda xp, x: xp.tril(x[0, 0]),
    lambda xp, x: xp.triu(x[0, 0]), lambda xp, x: xp.diag(x[None]), lambda xp, x: xp.identity(-1),
    lambda xp, x: xp.eye(-1), lambda xp, x: xp.indices((-1, 2)), lambda xp, x: xp.indices((3,), dtype=bool),
    lambda xp, x: xp.mgrid[5:0, 0:2], lambda xp, x: xp.empty(-1), lambda xp, x: xp.linspace(x, x[:2], 3),
    lambda xp, x: xp.diagflat(x, 1.5), lambda xp, x: xp.diag(x, 1.5),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_like_numpy(i):
    x = np.ones((3, 2))
    e = numpy_exception(lambda x: ERRORS[i](np, x), (x,))
    assert e is not None, "the test is wrong: NumPy does not raise"
    with pytest.raises(public_type(e)):
        numfn.jit(lambda x: ERRORS[i](fnp, x), backend="llvm")(x)


def test_traced_zero_bounds_of_geomspace_raise_after_the_call(backend):
    f = numfn.jit(lambda x: fnp.geomspace(x, 10, 3), backend=backend)
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), np.geomspace(np.array([1.0, 2.0]), 10, 3))
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        f(np.array([1.0, 0.0]))


def test_np_mgrid_inside_a_traced_function_is_a_constant_like_numpy(backend):
    check(lambda x: np.mgrid[0:3, 0:2] + x, np.ones(2), backend=backend)
