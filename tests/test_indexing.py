"""Basic indexing, views and shape methods (reshape, transpose, broadcast_to, ...) and array properties inside a
traced function, against NumPy."""
import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from helpers import check, check_raises_like, rand

X = rand((4, 5, 6), np.float64, np.random.default_rng(20))

INDICES = [
    1, -1, -4, 3, (1, 2), (-1, -2, -3), (0, 0, 0), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
    slice(-1, 0, -2), slice(3, None, -3), slice(None, None, 7), slice(None, None, -7), slice(2, 100),
    slice(-100, 2), slice(3, 1), slice(1, 3, -1), None, (None, 1), (Ellipsis, 0), (Ellipsis, -1, None),
    (0, Ellipsis), (slice(None), None, slice(None, None, -3)), (slice(1, None, 2), slice(None, None, -1), 4),
    (None, Ellipsis, None), (1, slice(None), -1), Ellipsis, (), (slice(None, None, -2), slice(4, 0, -1),
                                                                  slice(5, None, -4)),
    (np.int64(2), np.int32(-1)), (slice(0, 0), 0), (slice(None, None, 3), None, slice(1, 2), slice(None, None, 5)),
]


def test_basic_indexing_forms(backend):
    check(lambda x: tuple(x[i] for i in INDICES), X, backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_, np.uint8], ids=lambda d: np.dtype(d).name)
def test_indexing_every_dtype(backend, dtype):
    x = rand((5, 7), dtype, np.random.default_rng(21))
    check(lambda x: (x[1], x[-1, ::-2], x[::3, 1:6:2], x[None, ..., -1], x[2, 3], x[::-1, ::-1]), x, backend=backend)


def test_indexing_then_compute(backend):
    x = rand((6, 8), np.float32, np.random.default_rng(22))
    check(lambda x: (x[::2] + x[1::2], x[:, ::-1] * x, x[1:-1, 1:-1] - x[:-2, 2:], x[::-1].sum(axis=0),
                     x[..., None] * x[:, None, :], x[0] + x[:, 0][:, None], x[::3, ::-3][::-1, 1:]),
          x, backend=backend, scale=100.0)


def test_chained_and_nested_slices(backend):
    x = np.arange(120, dtype=np.int64).reshape(2, 3, 4, 5)
    check(lambda x: (x[::-1][::2], x[:, ::-1][..., 1::2][0], x[1][::-1, ::-1][1:, :3][..., ::-2], x[..., 2][::-1],
                     x.T[::2, ::-1], x.reshape(6, 20)[::-5, 3::4], x[0, 0, 0, 0], x[-1][-1][-1][-1]),
          x, backend=backend)


def test_index_out_of_bounds_raises_index_error(backend):
    x = np.zeros((3, 4))
    for index in (3, -4, (0, 4), (0, -5), (0, 0, 0)):
        check_raises_like(lambda x, index=index: x[index], x, backend=backend)


def test_float_indices_raise_numpys_index_errors(backend):
    """A Python float argument used as an index is NumPy's "only integers, ..." (it is traced as a 0-d array, whose
    own message NumPy gives for float arrays)."""
    x = np.arange(4.0)
    check_raises_like(lambda x, i: x[i], x, 1.5, backend=backend, match="only integers, slices")
    check_raises_like(lambda x, i: x[i], x, np.array(1.5), backend=backend, match="arrays used as indices")
    check_raises_like(lambda x, i: x[i], x, np.array([1.5]), backend=backend, match="arrays used as indices")


def test_empty_results(backend):
    x = rand((3, 4), np.float32, np.random.default_rng(23))
    check(lambda x: (x[2:1], x[:, 4:], x[::-1, 1:1], x[5:], x[3:0:-1][:0], x[1:1].sum(axis=0), x[:0].sum()),
          x, backend=backend)


def test_zero_d_and_size_one(backend):
    s, o = np.array(2.5), np.array([[7.0]])
    check(lambda s, o: (s[()], s[None], s[...], s[None, None], o[0], o[0, 0], o[-1, ::-1], o[..., None], o[:, 0]),
          s, o, backend=backend)


# ---- shape methods ---------------------------------------------------------------------------------------------
def test_reshape_forms(backend):
    x = np.arange(24, dtype=np.int32)
    check(lambda x: (x.reshape(2, 3, 4), x.reshape((4, 6)), x.reshape(-1, 8), x.reshape(3, -1, 2), x.reshape([24]),
                     x.reshape(-1), x.reshape(2, 3, 4).reshape(-1, 2), x.reshape(1, 24, 1), x[::2].reshape(3, 4),
                     x.reshape(4, 6).T.reshape(-1), x.reshape(4, 6)[:, ::-1].reshape(2, 12), np.reshape(x, (6, -1)),
                     x.reshape(2, 12)[1].reshape(3, 2, 2), x.flatten(), x.reshape(2, 12).ravel(), np.ravel(x)),
          x, backend=backend)


def test_reshape_zero_d_and_empty(backend):
    s, e = np.array(3.0), np.zeros((0, 4))
    check(lambda s, e: (s.reshape(1), s.reshape(1, 1), s.reshape(()), s.reshape(-1), e.reshape(4, 0),
                        e.reshape(0, 2, 2), e.reshape(2, 0, 2), e.reshape(0)), s, e, backend=backend)


@pytest.mark.parametrize("shape", [(5, -1), (-1, -1), (7,), (0, -1), (5, 5)], ids=str)
def test_bad_reshape_raises_value_error(backend, shape):
    check_raises_like(lambda x: x.reshape(shape), np.zeros(24), backend=backend)


def test_transpose_forms(backend):
    x = rand((2, 3, 4), np.float32, np.random.default_rng(24))

    def f(x):
        permute = x.permute if isinstance(x, numfn.Tensor) else x.transpose    # numfn's alias of transpose
        return (x.T, x.transpose(), x.transpose(1, 0, 2), x.transpose((2, 0, 1)), x.transpose(-1, 0, 1),
                permute(2, 1, 0), permute((0, 2, 1)), np.transpose(x), np.transpose(x, (1, 2, 0)), x.swapaxes(0, 2),
                np.swapaxes(x, -1, -2), x.T.T, x[0].T, x[0, 0].T, x.T[::-1] + 1)

    check(f, x, backend=backend)


@pytest.mark.parametrize("axes", [(0, 1), (0, 0, 1), (0, 1, 3), (1, 2, -4)], ids=str)
def test_bad_transpose_raises_like_numpy(backend, axes):
    check_raises_like(lambda x: x.transpose(axes), np.zeros((2, 3, 4)), backend=backend)


def test_broadcast_to(backend):
    x, s = rand((3, 1), np.int64, np.random.default_rng(25)), np.array(1.5)

    def f(x, s):
        bt = x.broadcast_to if isinstance(x, numfn.Tensor) else (lambda shape: np.broadcast_to(x, shape))
        return (np.broadcast_to(x, (2, 3, 4)), np.broadcast_to(x, (3, 1)), np.broadcast_to(s, (2, 2)), bt((5, 3, 7)),
                np.broadcast_to(x[:, 0], (4, 3)), np.broadcast_to(s, 3), np.broadcast_to(x, (0, 3, 0)))

    check(f, x, s, backend=backend)


@pytest.mark.parametrize("shape", [(3, 3), (4,), (2, 4, 1), (2,)], ids=str)
def test_bad_broadcast_to_raises_value_error(backend, shape):
    check_raises_like(lambda x: np.broadcast_to(x, shape), np.zeros((3, 2)), backend=backend)


def test_squeeze_expand_dims(backend):
    x = rand((1, 3, 1, 2), np.float64, np.random.default_rng(26))
    check(lambda x: (x.squeeze(), x.squeeze(0), x.squeeze(axis=(0, 2)), x.squeeze(-2), np.squeeze(x),
                     np.expand_dims(x, 0), np.expand_dims(x, -1), np.expand_dims(x, (1, 3)), x[0, :, 0].squeeze()),
          x, backend=backend)


def test_numfn_numpy_shape_functions(backend):
    x = rand((2, 3), np.float32, np.random.default_rng(27))
    expected = (x.reshape(3, 2), x.T, x.transpose(1, 0), np.swapaxes(x, 0, 1), x[None], x[:, None], x.reshape(-1),
                np.broadcast_to(x, (4, 2, 3)), x[None].squeeze(0), x.astype(np.int32))
    check(lambda x: (fnp.reshape(x, (3, 2)), fnp.transpose(x), fnp.transpose(x, (1, 0)), fnp.swapaxes(x, 0, 1),
                     fnp.expand_dims(x, 0), fnp.expand_dims(x, 1), fnp.ravel(x), fnp.broadcast_to(x, (4, 2, 3)),
                     fnp.squeeze(x[None], 0), fnp.astype(x, np.int32)), x, backend=backend, expected=expected)


# ---- properties inside the traced function -----------------------------------------------------------------------
def test_properties_inside_traced_function(backend):
    x = rand((4, 3, 2), np.float32, np.random.default_rng(28))

    def f(x):
        n = x.shape[0]
        out = [x.reshape(n, -1), x.reshape(x.shape[0] * x.shape[1], x.shape[2]), x.sum() / x.size,
               np.zeros(x.shape, x.dtype) + x, x.astype(x.dtype) * x.ndim, x.reshape(x.size), x[len(x) - 1],
               np.ones(x.shape[1:], dtype=x.dtype)]
        if x.ndim == 3 and x.dtype == np.float32: out.append(x.T)   # Python control flow on static facts is fine
        if x.size > 100: out.append(x)
        for i in range(x.shape[2]): out.append(x[..., i] * i)
        return out

    check(f, x, backend=backend)


def test_properties_are_python_values():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, len=len(x))
        return x

    numfn.jit(f)(np.zeros((4, 3), np.int16))
    assert seen == dict(shape=(4, 3), ndim=2, size=12, dtype=np.dtype(np.int16), len=4)
    assert type(seen["shape"][0]) is int and type(seen["size"]) is int


def test_iteration_over_leading_axis(backend):
    x = rand((3, 4), np.float64, np.random.default_rng(29))
    check(lambda x: (sum(row * i for i, row in enumerate(x)), [r.max() for r in x], tuple(x)), x, backend=backend)


def test_shape_queries_and_numpy_reshape_quirks(backend):
    # itemsize, nbytes, np.ndim/np.shape/np.size are known while tracing; any negative reshape size is the
    # unknown dimension (NumPy 2); a list is not an axis
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    check(lambda x: (x * x.itemsize + x.nbytes, x * (np.ndim(x) + np.size(x) + np.shape(x)[1]), x.reshape(-2, 3),
                     np.clip(2, -x, x)), x, backend=backend)
    check_raises_like(lambda x: x.max(axis=[0, 1]), x, backend=backend)


# ---- the GATHER primitive (numfn.trace.tensor.gather), which advanced indexing and take_along_axis build on ----------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_gather_matches_take_along_axis(backend, dtype):
    from numfn.trace.tensor import gather
    rng = np.random.default_rng(31)
    a = rand((6, 7), dtype, rng)
    idx = rng.integers(0, 7, (6, 3))
    rows = np.arange(6)[:, None]

    def f(a, idx):
        return gather(a, [fnp.arange(6)[:, None], idx]), gather(a[::-1, 1:], [idx[:, :1] % 6, idx[::-1] % 6])

    expected = (np.take_along_axis(a, idx, 1), a[::-1, 1:][idx[:, :1] % 6, idx[::-1] % 6])
    check(f, a, idx, backend=backend, expected=expected)
    # a gather of an elementwise value computes it only where gathered, at any index (vmap adds a batch index)
    check(lambda a, i: gather(a * 2, [rows, i]), a, idx, backend=backend, expected=np.take_along_axis(a * 2, idx, 1))


def test_gather_clamps_indices_it_cannot_prove_in_range(backend):
    from numfn.trace.tensor import gather
    x = np.arange(10.0)
    i = np.array([-5, 0, 9, 12, 3])
    check(lambda x, i: gather(x, [i]), x, i, backend=backend, expected=x[np.clip(i, 0, 9)])


def test_vmap_of_gather():
    from numfn.trace.tensor import gather
    x = np.arange(12.0).reshape(3, 4)
    i = np.array([[0, 1], [2, 3], [1, 1]])
    np.testing.assert_array_equal(numfn.vmap(lambda x, i: gather(x, [i]))(x, i), np.take_along_axis(x, i, 1))
    np.testing.assert_array_equal(numfn.vmap(lambda i: gather(x[0], [i]))(i), x[0][i])
