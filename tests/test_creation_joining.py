"""Array creation (zeros, ones, full, eye, arange, *_like) and joining (stack, concatenate) against NumPy, both as
numfn.numpy functions and as np.* calls inside the traced function."""
import numpy as np
import pytest

from helpers import check, check_raises_like, check_xp, rand


def _creation(xp):
    def f(x):
        return (xp.zeros(3), xp.zeros((2, 3), np.int32), xp.ones((4,)), xp.ones((2, 2), dtype=np.bool_),
                xp.full((2, 3), 7), xp.full(3, 2.5), xp.full((2, 2), True), xp.full((3,), -1, np.int8),
                xp.full((2,), 1.5, dtype=np.float32), xp.zeros(()), xp.ones((0, 3)), xp.zeros((3, 0), np.uint8),
                xp.eye(3), xp.eye(3, 5), xp.eye(4, 2, k=1), xp.eye(3, k=-1, dtype=np.int32), xp.eye(0), xp.eye(2, 0),
                xp.eye(3, dtype=np.bool_), xp.eye(4, k=5),
                xp.arange(5), xp.arange(2, 9), xp.arange(10, 1, -3), xp.arange(0, 1, 0.25),
                xp.arange(5, dtype=np.float32),
                xp.arange(0), xp.arange(5, 1), xp.arange(-2.5, 2.5), xp.arange(1, 2, 0.1), xp.arange(3, dtype=np.uint8),
                xp.zeros_like(x), xp.ones_like(x), xp.full_like(x, 3), xp.full_like(x, 2.7), xp.zeros_like(x, np.int8),
                xp.ones_like(x, dtype=np.float64), xp.full_like(x, -1.5, dtype=np.float32), xp.full_like(x, True),
                xp.zeros(x.shape) + x, xp.eye(x.shape[0]) @ x, xp.arange(x.shape[1]) * x)
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.uint8], ids=lambda d: np.dtype(d).name)
def test_creation_functions(backend, dtype):
    x = rand((3, 4), dtype, np.random.default_rng(30))
    check_xp(_creation, x, backend=backend)


def test_creation_from_traced_values(backend):
    # a traced 0-d value as the fill of full and full_like (np.full is not overridable: it calls np.asarray on the
    # fill value, so only numfn.numpy.full takes a traced one)
    from numfn import numpy as fnp
    x = rand((3,), np.float32, np.random.default_rng(31))
    check_xp(lambda xp: lambda x: (xp.full_like(x, x.max()), xp.full_like(x, x[0], np.int32)), x, backend=backend)
    check(lambda x: (fnp.full((2, 3), x.sum()), fnp.full((2,), x[0], np.int32)), x, backend=backend,
          expected=(np.full((2, 3), x.sum()), np.full((2,), x[0], np.int32)), scale=3.0)


def test_returning_only_constants(backend):
    # a function whose outputs do not depend on the inputs at all
    x = np.zeros(2)
    check_xp(lambda xp: lambda x: (xp.zeros((2, 2)), xp.arange(4), xp.eye(2), xp.full((), 3.5)), x, backend=backend)


def _joining(xp):
    def f(a, b, c):
        return (xp.concatenate([a, b]), xp.concatenate((a, b), axis=1), xp.concatenate([a, c.reshape(1, 4)], axis=0),
                xp.concatenate([a, b], axis=-1), xp.concatenate([a, b], axis=None), xp.concatenate([a]),
                xp.concatenate([a, a[:0], b], axis=0), xp.concatenate([a[::-1], b.T.T[:, ::2]], axis=1),
                xp.concatenate([c, c[::-1], c[:1]]), xp.concatenate([a[:0], b[:0]]),
                xp.stack([a, b]), xp.stack((a, b), axis=1), xp.stack([a, b], axis=-1), xp.stack([c, c * 2, c[::-1]]),
                xp.stack([a]), xp.stack([c[0], c[1]]), xp.stack([a, b], axis=2), xp.stack([a, b], axis=-3))
    return f


@pytest.mark.parametrize("da,db", [(np.float32, np.float32), (np.float64, np.int32), (np.int32, np.int64),
                                   (np.bool_, np.bool_), (np.bool_, np.int8), (np.uint8, np.int8)],
                         ids=lambda d: np.dtype(d).name)
def test_concatenate_and_stack(backend, da, db):
    rng = np.random.default_rng(32)
    a, b, c = rand((3, 4), da, rng), rand((3, 4), db, rng), rand((4,), db, rng)
    check_xp(_joining, a, b, c, backend=backend)


def test_concatenate_preserves_nan_and_signed_zero(backend):
    a = np.array([np.nan, -0.0, np.inf])
    b = np.array([-0.0, np.nan, -np.inf, 0.0])
    check(lambda a, b: (np.concatenate([a, b, a]), np.stack([a, b[:3]], axis=1)), a, b, backend=backend,
          signed_zeros=True)


def test_concatenate_many_pieces_and_python_lists(backend):
    x = rand((2, 3), np.float64, np.random.default_rng(33))
    check(lambda x: (np.concatenate([x[:, i:i + 1] for i in range(3)] * 4, axis=1), np.concatenate([x, [[1, 2, 3]]]),
                     np.stack([x[0], [7.0, 8.0, 9.0]])), x, backend=backend)


@pytest.mark.parametrize("make", [
    lambda a, b: np.concatenate([a, b]),                      # core dims differ
    lambda a, b: np.concatenate([a, b[0]]),                   # ndim differ
    lambda a, b: np.concatenate([a[0, 0], a[0, 0]]),          # 0-d
    lambda a, b: np.concatenate([a, b], axis=2),              # axis out of range
    lambda a, b: np.stack([a, b]),                            # shapes differ
    lambda a, b: np.stack([a, a], axis=3),                    # axis out of range
    lambda a, b: np.concatenate([]),                          # nothing
], ids=["dims", "ndim", "zero-d", "axis", "stack-shapes", "stack-axis", "empty-list"])
def test_joining_errors_like_numpy(backend, make):
    a, b = np.zeros((2, 3)), np.zeros((2, 4))
    check_raises_like(make, a, b, backend=backend)


def test_creation_errors_like_numpy(backend):
    x = np.zeros(3)
    check_raises_like(lambda x: np.zeros((2, -1)) + x, x, backend=backend)
    from numfn import numpy as fnp
    with pytest.raises(ValueError):
        check(lambda x: fnp.zeros((2, -1)) + x, x, backend=backend)
    with pytest.raises(ValueError):
        check(lambda x: fnp.full((-3,), 1.0) + x, x, backend=backend)


@pytest.mark.parametrize("make", [lambda x: np.full_like(x.astype(np.uint8), -1),
                                  lambda x: np.full_like(x.astype(np.int8), 300),
                                  lambda x: np.zeros_like(x, np.int8) + np.full_like(x, 1000, dtype=np.int8)],
                         ids=["uint8-minus-1", "int8-300", "dtype-int8"])
def test_full_like_out_of_range_fill_raises_overflow(backend, make):
    check_raises_like(make, np.zeros((2, 3)), backend=backend)


def test_fnp_full_out_of_range_fill_raises_overflow(backend):
    from numfn import numpy as fnp
    with pytest.raises(OverflowError):
        np.full((2,), 300, dtype=np.int8)
    with pytest.raises(OverflowError):
        check(lambda x: fnp.full((2,), 300, dtype=np.int8) + x, np.zeros(2, np.int8), backend=backend)


def test_full_with_array_fill_value(backend):
    from numfn import numpy as fnp
    x = np.zeros((2, 3))
    check(lambda x: (np.full_like(x, [1, 2, 3]), np.full_like(x, np.array([1.5, 2.0, 3.0]))), x, backend=backend)
    check(lambda x: fnp.full((2, 3), [1, 2, 3]) + x, x, backend=backend, expected=np.full((2, 3), [1, 2, 3]) + x)
