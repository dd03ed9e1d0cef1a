"""Reductions (sum, prod, max, min, mean) and cumsum against NumPy: every axis form, keepdims, dtypes, edge shapes."""
import numpy as np
import pytest
import numfn

from helpers import check, check_raises_like, check_xp, magnitude, rand

AXES_3D = [None, 0, 1, 2, -1, -3, (0, 2), (-1, 0), (0, 1, 2), ()]
REDUCTIONS = ("sum", "prod", "max", "min", "mean")


def _all_reductions(axes, names=REDUCTIONS):
    def f(x):
        return {(n, str(a), k): getattr(x, n)(axis=a, keepdims=k) for n in names for a in axes for k in (False, True)}
    return f


def _scale(x, n):
    """Absolute error scale of reducing n elements of x (sums accumulate rounding errors in another order)."""
    return magnitude(x) * max(n, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.int8, np.uint8,
                                   np.uint32, np.uint64], ids=lambda d: np.dtype(d).name)
def test_methods_every_axis_and_keepdims(backend, dtype):
    x = rand((3, 4, 5), dtype, np.random.default_rng(10), -2, 2)
    # prod of 60 values would overflow floats' precision comparison; products are tested on a smaller array below
    names = [n for n in REDUCTIONS if n != "prod"]
    check(_all_reductions(AXES_3D, names), x, backend=backend, scale=_scale(x, 60))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.int8, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_prod_every_axis(backend, dtype):
    # integer products wrap like NumPy's (int8 products of 12 values overflow)
    x = rand((2, 3, 2), dtype, np.random.default_rng(11), -3, 3)
    check(_all_reductions(AXES_3D, ("prod",)), x, backend=backend, scale=1.0)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (0,), (0, 3), (3, 0), (2, 0, 4), (7,), (1, 5, 1)],
                         ids=str)
def test_edge_shapes(backend, shape):
    # size-0 sums are 0, products 1, means NaN; size 1 and 0-d reductions are the element itself
    x = rand(shape, np.float64, np.random.default_rng(12))
    i = rand(shape, np.int32, np.random.default_rng(12))
    axes = [None] + list(range(-len(shape), len(shape))) + [tuple(range(len(shape)))]
    names = ("sum", "prod", "mean") if 0 in shape else REDUCTIONS
    fx, fi = _all_reductions(axes, names), _all_reductions(axes, names)
    check(lambda x, i: (fx(x), fi(i), x.cumsum(), i.cumsum()), x, i, backend=backend, scale=_scale(x, 8))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_integer_prod_of_empty_axis(backend, dtype):
    x = np.zeros((3, 0), dtype)
    check(lambda x: (x.prod(), x.prod(axis=1), x.prod(axis=1, keepdims=True)), x, backend=backend)


@pytest.mark.parametrize("shape,axis", [((0,), None), ((0, 3), 0), ((3, 0), 1), ((3, 0), None), ((2, 0, 4), (0, 1))])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_empty_raise_value_error(backend, shape, axis, name):
    check_raises_like(lambda x: getattr(x, name)(axis=axis), np.zeros(shape), backend=backend)


def test_max_min_of_empty_along_other_axis(backend):
    # reducing the non-empty axis of a (3, 0) array is fine and gives an empty result
    x = np.zeros((3, 0), np.float32)
    check(lambda x: (x.max(axis=0), x.min(axis=0, keepdims=True), x.sum(axis=0)), x, backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_nan_inf_and_signed_zero(backend, dtype):
    # max/min propagate NaN (wherever it is along the axis); sums of inf and -inf are NaN
    x = np.array([[np.nan, 1.0, 2.0, 3.0],
                  [1.0, 2.0, 3.0, np.nan],
                  [-0.0, 0.0, -0.0, 0.0],
                  [np.inf, -np.inf, 1.0, 2.0],
                  [np.inf, 5.0, np.inf, 1.0],
                  [-np.inf, -1.0, -2.0, -3.0]], dtype)
    check(lambda x: (x.max(axis=1), x.min(axis=1), x.max(axis=0), x.min(axis=0), x.max(), x.min(), x.sum(axis=1),
                     x.prod(axis=1), x.mean(axis=1), x.cumsum(axis=1), x.sum(axis=0)), x, backend=backend, scale=20.0)


def test_nan_in_every_position_of_max_min(backend):
    x = np.arange(25, dtype=np.float64).reshape(5, 5)
    x[np.arange(5), np.arange(5)] = np.nan    # NaN first in row 0, last in row 4
    check(lambda x: (x.max(axis=1), x.min(axis=1), x.T.max(axis=1), np.max(x, axis=0), np.min(x, axis=0)), x,
          backend=backend)


def test_negative_values_max_min_and_extremes(backend):
    # max of all-negative values, min of all-positive ones; integer extremes
    f = np.array([[-5.0, -3.0, -np.inf], [1e30, 3.0, 7.0]], np.float32)
    i = np.array([[-2**63, -1, -2], [2**63 - 1, 0, 1]], np.int64)
    u = np.array([[2**64 - 1, 0], [1, 2**63]], np.uint64)
    check(lambda f, i, u: (f.max(axis=1), f.min(axis=1), i.max(axis=1), i.min(axis=1), i.max(axis=0), u.max(axis=1),
                           u.min(axis=0), u.max(), i.min()), f, i, u, backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.int8, np.uint8,
                                   np.uint32], ids=lambda d: np.dtype(d).name)
def test_cumsum(backend, dtype):
    x = rand((3, 4, 5), dtype, np.random.default_rng(13), -3, 3)
    check(lambda x: (x.cumsum(), x.cumsum(axis=0), x.cumsum(axis=1), x.cumsum(axis=-1), x.cumsum(axis=2),
                     x[:, :1].cumsum(axis=1), x[0, 0, 0].cumsum()), x, backend=backend, scale=_scale(x, 60))


def test_cumsum_with_nan_and_int8_widening(backend):
    x = np.array([1.0, np.nan, 2.0, np.inf, -np.inf, 3.0])
    i8 = np.full(40, 100, np.int8)   # the int64 accumulator does not wrap at 128
    check(lambda x, i8: (x.cumsum(), i8.cumsum(), i8.sum(), i8.mean(), i8.prod()), x, i8, backend=backend)


def _functions(xp):
    def f(x):
        return (xp.sum(x), xp.sum(x, axis=0), xp.sum(x, axis=(0, 2), keepdims=True), xp.mean(x, axis=-1),
                xp.mean(x, keepdims=True), xp.max(x, axis=1), xp.min(x, axis=(1, 2)), xp.prod(x[:, :2, :2], axis=0),
                xp.max(x), xp.min(x, axis=-2, keepdims=True), xp.cumsum(x), xp.cumsum(x, axis=1), xp.amax(x, 0),
                xp.amin(x, axis=2))
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_numpy_functions_and_numfn_numpy(backend, dtype):
    x = rand((3, 4, 5), dtype, np.random.default_rng(14))
    check_xp(_functions, x, backend=backend, scale=_scale(x, 60))


def test_reductions_of_expressions_and_views(backend):
    rng = np.random.default_rng(15)
    x, y = rand((6, 8), np.float32, rng), rand((8,), np.float32, rng)
    check(lambda x, y: ((x * y).sum(axis=1), (x + 1).max(axis=0) - x.min(axis=0), x.T.sum(axis=1),
                        x[::2, ::-1].mean(axis=0), (x.sum(axis=0) * y).sum(), x.sum(axis=1, keepdims=True) / x,
                        x.reshape(4, 12).max(axis=-1), (x - x.mean(axis=0)).sum(axis=0), (x > 0).sum(axis=1),
                        (x > 0).mean(), x.sum(axis=0).cumsum()),
          x, y, backend=backend, scale=_scale(x, 48))


def test_sum_of_large_array(backend):
    # 100k float32 values: NumPy sums pairwise; any sane order stays within a few units of float32 rounding
    x = np.random.default_rng(16).uniform(0, 1, 100_000).astype(np.float32)
    check(lambda x: (x.sum(), x.mean(), x.reshape(100, 1000).sum(axis=0), x.max(), x.astype(np.float64).sum()), x,
          backend=backend, rtol=1e-4, atol=1e-3)


def test_integer_sum_dtypes(backend):
    # NumPy widens small integer sums to the platform integer (int64 / uint64); mean of integers is float64
    xs = [np.arange(1, 7).astype(d) for d in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.bool_)]
    check(lambda *xs: [(x.sum(), x.prod(), x.cumsum(), x.mean(), x.max(), x.sum(axis=0, keepdims=True)) for x in xs],
          *xs, backend=backend)


@pytest.mark.parametrize("axis", [3, -4, (0, 0), (1, -2)])
def test_bad_axis_raises_like_numpy(backend, axis):
    x = np.zeros((2, 3, 4))
    for name in ("sum", "max", "mean", "prod"):
        check_raises_like(lambda x, name=name: getattr(x, name)(axis=axis), x, backend=backend)


def test_zero_d_with_axis_zero(backend):
    s = np.array(2.5)
    # NumPy accepts an integer axis 0 or -1 here (not a tuple), except in mean
    check(lambda s: (s.sum(axis=0), s.max(axis=-1), np.prod(s, axis=0), np.cumsum(s, axis=0), np.cumsum(s, axis=-1)),
          s, backend=backend)
    check_raises_like(lambda s: np.mean(s, axis=0), s, backend=backend)
    check_raises_like(lambda s: s.sum(axis=(0,)), s, backend=backend)


# fuzz seed 50001351: the outer loop unrolled, the copies on padded rows fold their reductions' values to constants
# that no longer depend on the scan's loop; sharing the reduction loop with the other copies nested it wrongly
# (codegen/linearize.py: separate_reduce_loops)
@pytest.mark.parametrize("f", [
    lambda x: np.cumprod(np.pad(x, ((0, 2), (0, 0), (1, 1))).max(axis=-2, keepdims=True), axis=2),
    lambda x: np.cumsum(np.pad(x, ((0, 2), (0, 0), (0, 0))).sum(axis=1), axis=1),
    lambda x: np.cumsum(np.pad(x, ((1, 1), (0, 0), (1, 1))).sum(axis=1) + 1.0, axis=1),
    lambda x: np.maximum.accumulate(np.pad(x, ((0, 2), (0, 0), (0, 0))).mean(axis=1) + 2, axis=1),
], ids=["cumprod-max", "cumsum-sum", "cumsum-sum-both-ends", "cummax-mean"])
def test_scan_of_a_reduction_over_padded_rows(f):
    x = np.arange(40.0).reshape(4, 5, 2) % 7 - 2
    np.testing.assert_array_equal(numfn.jit(f)(x), f(x))
