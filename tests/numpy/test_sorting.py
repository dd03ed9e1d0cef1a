"""Sorting and searching against NumPy: sort, argsort, partition, argpartition, searchsorted, lexsort, the ndarray
methods (sort and partition in place, on computed arrays and on arguments), median, percentile, quantile and their
NaN-ignoring versions, pad(mode='median'), and the unique family (results of run-time length).

Sorts are compared bit for bit with NumPy's stable sort (kind='stable'): numfn's order is that one whatever kind=
says, NaN payloads and the signs of zeros included. Each dtype's table is one compiled function covering every
algorithm of the native routine (networks up to 64 elements, merge sorts, radix sorts), so few specializations
compile. partition and argpartition are checked against their contract (NumPy's exact output is not specified).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import numfn
import numfn.numpy as fnp
from tests.helpers import assert_same, check, check_mutates, check_raises_like, numpy_result

DTYPES = (np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16,
          np.uint8, np.bool_)


def data(dtype, shape, rng: np.random.Generator) -> np.ndarray:
    """Values with many ties, the extremes of the dtype and, for floats, NaNs of both signs, infinities and zeros of
    both signs."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    if dt.kind == "b": return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        pool = np.array(sorted({info.min, info.max, 0, 1, 2, 3} | ({-1, -2, info.min + 1} if info.min else set())),
                        dtype=dt)
        x = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
        tie = rng.random(shape) < 0.5
        x[tie] = rng.choice(pool, int(tie.sum()))
        return x
    x = np.round(rng.standard_normal(shape) * 2, 1).astype(dt)
    special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, np.finfo(dt).max, np.finfo(dt).tiny / 2], dt)
    mask = rng.random(shape) < 0.2
    x[mask] = rng.choice(special, int(mask.sum()))
    return x


def bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(f"u{x.itemsize}") if x.dtype.kind == "f" else x


def assert_exact(actual, expected, what: str = "result") -> None:
    """Equal dtype, shape and bits (floats: NaN payloads and signs of zeros too)."""
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"{what}: not an array"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, NumPy gives {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, NumPy gives {expected.shape}"
    np.testing.assert_array_equal(bits(actual), bits(expected), err_msg=what)


def stable_sort(x, axis=-1):
    return np.sort(x, axis=axis, kind="stable")


def stable_argsort(x, axis=-1):
    return np.argsort(x, axis=axis, kind="stable")


# ---- sort and argsort: every dtype through every algorithm of the native routine ---------------------------------
# lengths: a batch of rows for the networks in registers (5, padded to 8; 13, padded to 16; 29, padded to 32 with
# AVX-512), one row to the network limit (64) and past it (70: merge sort of a block of 64 and one of 6), a batch
# of medium rows (200: radix for values, merge for argsort), long rows (1500, 3000: radix)
SHAPES = [(3, 5), (64,), (70,), (2, 200), (1500,), (3000,), (9, 13), (5, 29)]


def _table(a, b, c, d, e, f, g, h):
    return (np.sort(a), np.argsort(a), np.sort(a, axis=0), np.argsort(a, axis=0), np.sort(a, axis=None),
            np.argsort(a, axis=None, kind="stable"), np.sort(a[::-1, ::2]), a.argsort(axis=0),
            np.sort(b), np.argsort(b), np.sort(c, kind="quicksort"), np.argsort(c, stable=True),
            np.sort(d), np.argsort(d), np.sort(d, axis=0), np.argsort(d.T, axis=0),
            np.sort(e), np.argsort(e), np.sort(f[::-1]), np.argsort(f, kind="heapsort"),
            np.sort(g), np.argsort(g), np.sort(h), np.argsort(h))


def _expected_table(a, b, c, d, e, f, g, h):
    return (stable_sort(a), stable_argsort(a), stable_sort(a, 0), stable_argsort(a, 0), stable_sort(a, None),
            stable_argsort(a, None), stable_sort(a[::-1, ::2]), stable_argsort(a, 0),
            stable_sort(b), stable_argsort(b), stable_sort(c), stable_argsort(c),
            stable_sort(d), stable_argsort(d), stable_sort(d, 0), stable_argsort(d.T, 0),
            stable_sort(e), stable_argsort(e), stable_sort(f[::-1]), stable_argsort(f),
            stable_sort(g), stable_argsort(g), stable_sort(h), stable_argsort(h))


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sort_and_argsort_every_dtype_and_algorithm(dtype, backend):
    rng = np.random.default_rng(1)
    args = [data(dtype, s, rng) for s in SHAPES]
    got = numfn.jit(_table, backend=backend)(*args)
    for i, (g, e) in enumerate(zip(got, _expected_table(*args))):
        assert_exact(g, e, f"variant {i}")


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8])
def test_sort_and_argsort_c_backend(dtype):
    rng = np.random.default_rng(2)
    args = [data(dtype, s, rng) for s in SHAPES]
    got = numfn.jit(_table, backend="c")(*args)
    for i, (g, e) in enumerate(zip(got, _expected_table(*args))):
        assert_exact(g, e, f"variant {i}")


def test_sort_special_shapes(backend):
    """0-d (axis=None; argsort's [0]), size 0, size 1, a length-1 sorted axis, many rows of one element."""
    def f(x0, e, one, col, m):
        return (np.sort(x0, axis=None), np.argsort(x0), np.sort(e), np.argsort(e, axis=0), np.sort(one),
                np.argsort(one), np.sort(col, axis=1), np.argsort(col), np.sort(m, axis=1), np.sort(e, axis=None),
                np.argpartition(x0, 0), np.sort(m + 1, axis=0))
    rng = np.random.default_rng(3)
    args = (np.array(2.5), np.zeros((0, 4)), np.array([7.0]), rng.standard_normal((5, 1)), rng.standard_normal((6, 2)))
    got = numfn.jit(f, backend=backend)(*args)
    for i, (g, e) in enumerate(zip(got, numpy_result(f, args))):
        assert_exact(g, e, f"variant {i}")


def test_sort_fuses_around_the_call():
    """The sorted axis is computed by the kernel before the call (transposed into the routine's buffer) and the
    result is consumed by the kernel after it: three steps for y = sort(2x + 1, axis=0)[1:] - 3."""
    f = numfn.jit(lambda x: np.sort(x * 2 + 1, axis=0)[1:] - 3, backend="llvm")
    x = np.random.default_rng(4).standard_normal((300, 20))
    assert_exact(f(x), stable_sort(x * 2 + 1, 0)[1:] - 3)
    nf = f.specializations[0]
    names = [ei.kernel.name for ei in nf.schedule]
    assert len(names) == 3 and names[1] == "X_sort", names


def test_order_statistics_select_instead_of_sorting():
    """Positions known while tracing (median, quantiles of a static q, partition) take the native select (linear
    time, as NumPy's partition); a run-time count of non-NaN elements (nanmedian) sorts."""
    x = np.random.default_rng(4).standard_normal(1000)
    for fn, step in ((lambda x: np.median(x), "X_select"), (lambda x: np.percentile(x, [5, 50, 95]), "X_select"),
                     (lambda x: np.partition(x, 3)[3], "X_select"), (lambda x: np.nanmedian(x), "X_sort")):
        f = numfn.jit(fn, backend="llvm")
        np.testing.assert_allclose(f(x), fn(x), rtol=1e-15)
        assert step in [ei.kernel.name for ei in f.specializations[0].schedule]


# ---- in place: computed arrays and arguments -------------------------------------------------------------------
def test_sort_method_in_place(backend):
    def computed(x):
        y = x * 2
        y.sort(axis=0)
        z = x[:, ::-1] + 0
        z.partition(1)
        return y, z

    rng = np.random.default_rng(5)
    x = data(np.float64, (6, 9), rng)
    y, z = numfn.jit(computed, backend=backend)(x)
    with np.errstate(over="ignore"):
        assert_exact(y, stable_sort(x * 2, 0))
    assert_exact(z, stable_sort(x[:, ::-1] + 0, -1))

    def argument(x, out):   # kind="stable": NumPy's default sort orders -0.0, 0.0 and NaNs unpredictably
        x.sort(kind="stable")
        out[1:].sort(axis=0)

    check_mutates(argument, data(np.float64, (5, 7), rng), data(np.int32, (4, 3), rng), backend=backend)


def test_sort_of_an_argument_view_with_negative_strides():
    def f(x):
        x[::-1].sort(kind="stable")
        return x.argsort(axis=0, kind="stable")

    check_mutates(f, data(np.float32, (4, 80), np.random.default_rng(6)), backend="llvm")


# ---- partition and argpartition: NumPy's contract ---------------------------------------------------------------
def _assert_partitioned(values: np.ndarray, x: np.ndarray, kths, axis: int) -> None:
    s = stable_sort(x, axis)
    v, s = np.moveaxis(values, axis, -1), np.moveaxis(s, axis, -1)
    np.testing.assert_array_equal(stable_sort(v), s, err_msg="not a permutation of the input")
    n = v.shape[-1]
    for k in np.atleast_1d(kths):
        k = int(k) % n
        # equal in sort order (which NaN or which zero lands there is the partition's choice, as in NumPy)
        np.testing.assert_array_equal(v[..., k], s[..., k], err_msg=f"kth {k} not in place")
        kv = s[..., k:k + 1]
        before, after = v[..., :k], v[..., k + 1:]
        if x.dtype.kind == "f":
            nan = np.isnan(kv)
            assert np.all(nan | (before <= kv) | np.isnan(before) & nan), "an element before kth is larger"
            assert np.all((after >= kv) | np.isnan(after)), "an element after kth is smaller"
        else:
            assert np.all(before <= kv) and np.all(after >= kv)


def test_partition_contract(backend):
    """Rows of 80 and more take the native select's quickselect (float16 by keys, float32 after moving its NaNs to
    the end, integers directly); 7 and fewer, the networks; argpartition sorts."""
    rng = np.random.default_rng(7)
    x = data(np.float64, (5, 80), rng)
    xi = data(np.int16, (7, 6), rng)
    xh, xf, xu = data(np.float16, (3, 100), rng), data(np.float32, (2, 300), rng), data(np.uint8, (4, 90), rng)
    f = numfn.jit(lambda x, xi, xh, xf, xu: (
        np.partition(x, 3), np.partition(x, [0, -1, 40], axis=1), np.partition(xi, 2, axis=0), np.argpartition(x, 10),
        np.argpartition(xi, (1, 4)), np.partition(x, 7, axis=None), np.argpartition(xi, -1, axis=None),
        np.partition(xh, [5, 50, 99]), np.partition(xf, 150), np.partition(xf, [0, 299], axis=-1),
        np.partition(xu, [3, 89])), backend=backend)
    p1, p2, p3, a1, a2, p4, a3, p5, p6, p7, p8 = f(x, xi, xh, xf, xu)
    _assert_partitioned(p1, x, [3], 1)
    _assert_partitioned(p2, x, [0, -1, 40], 1)
    _assert_partitioned(p3, xi, [2], 0)
    _assert_partitioned(np.take_along_axis(x, a1, 1), x, [10], 1)
    _assert_partitioned(np.take_along_axis(xi, a2, 1), xi, [1, 4], 1)
    _assert_partitioned(p4, x.ravel(), [7], 0)
    _assert_partitioned(xi.ravel()[a3], xi.ravel(), [-1], 0)
    _assert_partitioned(p5, xh, [5, 50, 99], 1)
    _assert_partitioned(p6, xf, [150], 1)
    _assert_partitioned(p7, xf, [0, 299], 1)
    _assert_partitioned(p8, xu, [3, 89], 1)
    assert a1.dtype == np.int64 and p3.dtype == np.int16 and p5.dtype == np.float16


# ---- searchsorted ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_searchsorted(dtype, backend):
    if backend == "c" and dtype not in (np.float64, np.int8): pytest.skip("a representative subset on C")
    rng = np.random.default_rng(8)
    a = stable_sort(data(dtype, (37,), rng))
    v = data(dtype, (4, 9), rng)
    perm = rng.permutation(37)
    shuffled = a[np.argsort(perm)]   # shuffled[perm] == a

    def f(a, v, shuffled, perm):
        return (np.searchsorted(a, v), np.searchsorted(a, v, side="right"), np.searchsorted(a, v[0, 0]),
                np.searchsorted(a[:0], v), np.searchsorted(a[:1], v, "right"), a.searchsorted(v[1]),
                np.searchsorted(shuffled, v, sorter=perm), np.searchsorted(shuffled, v, "right", perm),
                np.searchsorted(a[::-2][::-1], v[:, ::3]), np.searchsorted(a, a))
    check(f, a, v, shuffled, perm, backend=backend)


def test_searchsorted_promotes_like_numpy(backend):
    a8 = np.array([-3, 0, 5, 100], np.int8)
    au = np.array([0, 1, 7], np.uint64)
    af = np.array([0.5, 1.0, 2.0], np.float32)
    check(lambda a8, au, af: (np.searchsorted(a8, 1000), np.searchsorted(a8, 2.5), np.searchsorted(a8, [-200, 4]),
                              np.searchsorted(au, -1), np.searchsorted(au, np.int64(-1)),
                              np.searchsorted(af, np.array([1.0000001])), np.searchsorted(af, 1.0000001, "right"),
                              np.searchsorted(a8, np.float32(0.5)), np.searchsorted([True, False], 0.5)),
          a8, au, af, backend=backend)


def test_searchsorted_nan_order_and_digitize():
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 2.0, np.inf, np.nan, np.nan])
    v = np.array([np.nan, -np.nan, np.inf, 0.0, -0.0, -np.inf, 3.0])
    check(lambda a, v: (np.searchsorted(a, v), np.searchsorted(a, v, "right"), np.digitize(v, a[:6]),
                        np.digitize(v, a[:6], right=True), np.digitize(v, a[5::-1]),
                        np.digitize(np.array([0, 1, 5, 7], np.uint8), np.array([1, 5], np.uint8), right=True)),
          a, v, backend="llvm")


# ---- lexsort -----------------------------------------------------------------------------------------------------
def test_lexsort(backend):
    rng = np.random.default_rng(9)
    k1, k2 = rng.integers(0, 3, (4, 50)), data(np.float64, (4, 50), rng)
    k3 = rng.integers(0, 2, 50).astype(bool)

    def f(lexsort):
        return lambda k1, k2, k3: (lexsort((k1, k2)), lexsort([k2, k1], axis=0), lexsort((k3, k1[0], k2[1])),
                                   lexsort(np.stack([k1[0], k1[1]])), lexsort((k1,)), lexsort((k1, k2), axis=-2))
    # NumPy's dispatch of lexsort looks into a tuple of keys, not a list: fnp.lexsort takes both
    check(f(fnp.lexsort), k1, k2, k3, backend=backend, expected=numpy_result(f(np.lexsort), (k1, k2, k3)))


# ---- errors --------------------------------------------------------------------------------------------------------
ERRORS = [
    lambda x: np.sort(x, kind="bogus"), lambda x: np.sort(x, kind=1), lambda x: np.argsort(x, axis=2),
    lambda x: np.sort(x, order="f"), lambda x: np.sort(x, kind="stable", stable=True), lambda x: np.sort(x[0, 0]),
    lambda x: np.partition(x, 9), lambda x: np.partition(x, -10), lambda x: np.partition(x, 1.5),
    lambda x: np.partition(x, 1, kind="quick"), lambda x: np.argpartition(x, [[1]]),
    lambda x: np.partition(x[0, 0], 0), lambda x: np.searchsorted(x, 1), lambda x: np.searchsorted(x[0, 0], 1),
    lambda x: np.searchsorted(x[0], 1, "middle"),
    lambda x: np.searchsorted(x[0], 1, "L"), lambda x: np.searchsorted(x[0], 1, None),
    lambda x: np.searchsorted(x[0], 1, sorter=[0, 1]), lambda x: np.searchsorted(x[0], 1, sorter=np.zeros(5)),
    lambda x: np.searchsorted(x[0], 1, sorter=np.zeros((1, 5), int)), lambda x: np.lexsort([]),
    lambda x: np.lexsort((x[0], x[1, :3])), lambda x: np.lexsort(x, axis=3), lambda x: np.lexsort(x, axis=None),
    lambda x: x.sort(axis=None),
    lambda x: np.unique(x, axis=2), lambda x: np.quantile(x, 1.5), lambda x: np.percentile(x, -1),
    lambda x: np.percentile(x, [10, np.nan]), lambda x: np.quantile(x, 0.5, method="bogus"),
    lambda x: np.quantile(x, np.zeros((2, 2, 2))), lambda x: np.quantile(x, 0.5, weights=np.ones((3, 5))),
    lambda x: np.quantile(x[:0], 0.5), lambda x: np.median(x, axis=(0, 0)), lambda x: np.quantile(x > 0, 0.5),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_like_numpy(i):
    check_raises_like(ERRORS[i], np.arange(15.0).reshape(3, 5), backend="llvm")


def test_refused_with_a_clear_error():
    x = np.arange(6.0)
    for fn in (lambda x: np.unique(x.reshape(2, 3), axis=1), lambda x: np.partition(x, x[0].astype(int)),
               lambda x: np.quantile(x, 0.5, method="inverted_cdf", weights=np.ones(6)),
               lambda x: np.sort(x.reshape(2, 3)[x.reshape(2, 3)[:, 0] > 0], axis=None)):
        with pytest.raises(numfn.NumfnError, match="not supported"):
            numfn.jit(fn, backend="llvm")(x)


def test_without_the_native_extension(monkeypatch):
    import numfn.extern
    monkeypatch.setattr(numfn.extern, "native_routines", lambda: None)
    with pytest.raises(numfn.NumfnError, match="native extension"):
        numfn.jit(lambda x: np.median(x), backend="llvm")(np.arange(5.0))


def test_out_of_range_sorter_raises_after_the_call():
    f = numfn.jit(lambda a, s: np.searchsorted(a, 2.0, sorter=s), backend="llvm")
    with pytest.raises(ValueError, match="Sorter index out of range"):
        f(np.arange(4.0), np.array([0, 1, 2, 4]))
    assert f(np.arange(4.0), np.array([0, 1, 2, 3])) == 2


# ---- median, percentile, quantile ---------------------------------------------------------------------------------
def _stats_match(got, expected):
    """NumPy's dtypes and shapes; values to the dtype's relative tolerance."""
    for i, (g, e) in enumerate(zip(got, expected)):
        f = np.abs(np.asarray(e, np.float64))
        scale = float(f[np.isfinite(f)].max()) if np.isfinite(f).any() else 1.0
        assert_same(g, e, scale=min(scale, 1e30), path=f"variant {i}")


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint16],
                         ids=lambda d: np.dtype(d).name)
def test_median_and_quantiles(dtype, backend):
    rng = np.random.default_rng(10)
    x = data(dtype, (6, 70), rng) if dtype != np.float16 else data(dtype, (6, 9), rng)
    if np.dtype(dtype).kind == "f": x[2] = np.where(np.isnan(x[2]), 1.5, x[2])   # a row without NaN

    def f(x):
        return (np.median(x), np.median(x, axis=0), np.median(x, axis=1, keepdims=True), np.median(x[:, :5], 1),
                np.percentile(x, 37), np.percentile(x, [5, 50, 95], axis=1), np.quantile(x, 0.25, axis=0),
                np.quantile(x, np.array([[0.1, 0.9], [0.5, 1.0]]), axis=(0, 1), keepdims=True),
                np.quantile(x, [0.0, 1.0], axis=-1), np.quantile(x, 0), np.quantile(x, np.array([1, 0]), axis=0),
                np.nanmedian(x, axis=1), np.nanmedian(x), np.nanpercentile(x, [30, 60], axis=0),
                np.nanquantile(x, 0.4, axis=1, keepdims=True), np.percentile(x[2], np.float32(30)))
    expected = numpy_result(f, (x,))
    _stats_match(numfn.jit(f, backend=backend)(x), expected)


@pytest.mark.parametrize("method", ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                                    "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
                                    "normal_unbiased", "lower", "higher", "midpoint", "nearest"])
def test_quantile_methods(method):
    rng = np.random.default_rng(11)
    x = data(np.float64, (4, 11), rng)
    x[1] = np.round(x[1])
    xi = rng.integers(-100, 100, (4, 7)).astype(np.int8)
    qs = np.array([0.0, 0.05, 0.3, 0.5, 0.51, 0.75, 1.0])

    def f(x, xi):
        return (np.quantile(x, qs, axis=1, method=method), np.quantile(xi, 0.3, axis=0, method=method),
                np.nanquantile(x, qs, axis=1, method=method), np.percentile(x[1], 62.5, method=method),
                np.quantile(xi.astype(np.float32), np.float32(0.3), axis=1, method=method))
    _stats_match(numfn.jit(f, backend="llvm")(x, xi), numpy_result(f, (x, xi)))


def test_quantile_keeps_numpy_quirks(backend):
    """NumPy's own arithmetic: the difference of integers in their dtype (int8 wraps), inf - inf at the ends,
    the overflow of the mean of two middle elements, integer q taking elements, bool medians."""
    def f(a8, inf, big, b):
        return (np.quantile(a8, 0.5), np.quantile(a8, 0.75), np.quantile(inf, 1.0), np.quantile(inf, 0.5),
                np.median(big), np.median(big[:3]), np.quantile(a8, 1), np.median(b),
                np.quantile(b, 0.5, method="lower"))
    args = (np.array([-100, 100], np.int8), np.array([1.0, np.inf]), np.array([1e308] * 4), np.array([True, False]))
    _stats_match(numfn.jit(f, backend=backend)(*args), numpy_result(f, args))


def test_median_and_quantile_of_empty_and_all_nan():
    def f(e, c, n):
        return (np.median(e), np.median(c, axis=0), np.median(c, axis=1), np.nanmedian(n, axis=1), np.nanmedian(e),
                np.nanpercentile(n, [10, 90], axis=1), np.nanquantile(e, 0.5), np.percentile(c, 50, axis=1))
    args = (np.zeros(0), np.zeros((0, 3)), np.array([[1.0, np.nan], [np.nan, np.nan]]))
    _stats_match(numfn.jit(f, backend="llvm")(*args), numpy_result(f, args))


def test_pad_median(backend):
    x = data(np.float64, (3, 4), np.random.default_rng(12))
    xi = np.array([1, 2, 3, 10], np.int8)
    check(lambda x, xi: (np.pad(x, 2, mode="median"), np.pad(x, ((1, 2), (2, 1)), mode="median", stat_length=(2, 3)),
                         np.pad(xi, (1, 3), mode="median", stat_length=2), np.pad(xi, 2, mode="median")),
          x, xi, backend=backend)


def test_interp_with_period_sorts_long_xp():
    rng = np.random.default_rng(13)
    xp, fp, x = rng.uniform(-10, 10, 5000), rng.standard_normal(5000), rng.uniform(-20, 20, 300)
    check(lambda x, xp, fp: np.interp(x, xp, fp, period=3.5), x, xp, fp, backend="llvm")


# ---- unique ---------------------------------------------------------------------------------------------------------
def _all_unique(x):
    return (np.unique(x, return_index=True, return_inverse=True, return_counts=True), np.unique_all(x),
            np.unique(x), np.unique(x, return_counts=True, equal_nan=False), np.unique(x, return_inverse=True,
            sorted=False), np.unique_counts(x), np.unique_inverse(x))


def _assert_same_groups(got, expected, x) -> None:
    """NumPy's unique without return_index sorts unstably: which zero (-0.0 or 0.0) represents a group, and the
    order of distinct NaNs, are its sort's choice. Equal up to that: values (signs of zeros aside), counts, and
    inverses that map every element to an equal value (exactly NumPy's where x is not NaN)."""
    got = list(got) if isinstance(got, tuple) else [got]
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    assert_same(got[0], expected[0], rtol=0, atol=0)
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    for g, e in zip(got[1:], expected[1:]):
        if g.shape == x.shape and g.dtype == np.int64 and not (g.ndim == 1 and e.shape == got[0].shape):  # inverse
            np.testing.assert_array_equal(got[0][g], x)
            np.testing.assert_array_equal(g[~nan], e[~nan])
        else:
            assert_same(g, e, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_unique(dtype, backend):
    x = data(dtype, (5, 40), np.random.default_rng(14))
    got = numfn.jit(_all_unique, backend=backend)(x)
    expected = numpy_result(_all_unique, (x,))
    assert_same(got[:2], expected[:2], rtol=0, atol=0, signed_zeros=True)   # return_index: NumPy sorts stably
    for g, e in zip(got[2:], expected[2:]): _assert_same_groups(g, e, x)
    got_values = numfn.jit(np.unique_values, backend=backend)(x)
    assert_same(got_values, np.sort(numpy_result(np.unique_values, (x,))), rtol=0, atol=0)


def test_unique_shapes_and_axis(backend):
    rows = np.array([[np.nan, 1], [np.nan, 1], [0.0, 1], [-0.0, 1], [3, -1], [0.0, 1]])
    cube = np.random.default_rng(15).integers(0, 2, (6, 2, 2))

    def f(x0, e, rows, cube):
        return (np.unique(x0, return_inverse=True, return_counts=True), np.unique(e, return_index=True,
                return_inverse=True, return_counts=True), np.unique(rows, axis=0, return_index=True,
                return_inverse=True, return_counts=True), np.unique(cube, axis=0, return_counts=True),
                np.unique(cube, axis=-3), np.unique(rows[:, :0], axis=0, return_counts=True),
                np.unique(rows[:0], axis=0, return_counts=True, return_inverse=True))
    args = (np.array(5), np.zeros((0, 2)), rows, cube)
    assert_same(numfn.jit(f, backend=backend)(*args), numpy_result(f, args), rtol=0, atol=0, signed_zeros=True)


def test_arrays_of_run_time_length():
    """np.sort, argsort, unique, median and percentile of x[mask]; the padding past the length sorts last."""
    def f(x, i, with_percentile=True):
        y = x[x > -1]
        k = i[i % 3 != 0]
        return (np.sort(y, kind="stable"), np.argsort(y, kind="stable"),
                np.unique(y, return_counts=True, return_inverse=True, return_index=True), np.median(y), np.nanmedian(y),
                np.percentile(y, [10, 50]) if with_percentile else None, np.nanquantile(y, 0.3), np.sort(k),
                np.unique(k), np.median(k), np.argsort(k, kind="stable"))
    rng = np.random.default_rng(16)
    check(f, data(np.float64, (40,), rng), rng.integers(-5, 5, 30), backend="llvm")
    # nothing selected: NumPy's percentile raises IndexError (as numfn does, after the call); the rest gives NaN or []
    check(lambda x, i: f(x, i, False), np.full(9, -5.0), np.zeros(4, int), backend="llvm")
    with pytest.raises(IndexError):
        numfn.jit(f, backend="llvm")(np.full(9, -5.0), np.zeros(4, int))


def test_windows_of_run_time_length():
    """Slices with traced bounds: sorted along an axis of run-time length (its elements only) or a static one (the
    lengths stay), medians and quantiles over or along such axes, sorted in place (writing the array they view)."""
    def f(x, k):
        w, v = x[:, k:], x[k:]
        return (np.sort(w, axis=1), np.argsort(w, axis=1, kind="stable"), np.sort(w, axis=0), np.argsort(v, axis=0),
                np.median(w, axis=1), np.median(w, axis=0), np.median(w), np.percentile(w, [20, 80], axis=1),
                np.nanquantile(w, 0.3, axis=1, keepdims=True), np.quantile(v, 0.7, axis=0, keepdims=True),
                np.nanmedian(w, axis=(0, 1)), np.searchsorted(np.sort(x[0, k:]), x[1, k:]))
    x = data(np.float64, (6, 9), np.random.default_rng(18))
    x[3] = np.where(np.isnan(x[3]), 0.5, x[3])   # a row without NaN
    jf = check(f, x, 2, backend="llvm")
    check(f, x, 5, backend="llvm", jitted=jf)

    def in_place(x, k):
        x[k:].sort(axis=0)
        x[0, k:].sort()
    check_mutates(in_place, data(np.int32, (5, 7), np.random.default_rng(19)), 2, backend="llvm")


def test_selection_methods():
    """x[mask]: sorted in place (it is a copy no other name sees), argsort, partition, searchsorted as `a` (its
    elements only) and as `v` (the result keeps its length); partition's kth checked against the length."""
    def f(x):
        y = x[x > 0]
        y.sort()
        return (y, y.argsort(kind="stable"), np.partition(y, 2)[2], np.searchsorted(y, np.array([0.1, 0.5, 2.0])),
                np.searchsorted(np.sort(x[0]), y, side="right"), y.searchsorted(0.7), np.argpartition(y, -1)[-1])
    x = np.random.default_rng(20).standard_normal((6, 8))
    check(f, x, backend="llvm")
    one = -np.abs(x)
    one[0, 0] = 1.0   # one element selected: kth 2 is out of bounds, as NumPy says
    with pytest.raises(ValueError, match="out of bounds"):
        f(one)
    with pytest.raises(ValueError, match="out of bounds"):
        numfn.jit(f, backend="llvm")(one)


# ---- transformations -------------------------------------------------------------------------------------------------
def test_vmap_and_svmap_sort_more_rows():
    rng = np.random.default_rng(17)
    x = data(np.float64, (200, 16), rng)
    s, a, m = numfn.vmap(lambda r: (np.sort(r), np.argsort(r), np.median(r)))(x)
    assert_exact(s, stable_sort(x))
    assert_exact(a, stable_argsort(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(m, np.median(x, axis=1))
    xs = data(np.int32, (50, 90), rng)
    assert_exact(numfn.svmap(lambda r: np.sort(r[::-1]))(xs), stable_sort(xs[:, ::-1]))
    u = numfn.vmap(lambda r: np.searchsorted(np.sort(r), r, side="right"))(x)
    np.testing.assert_array_equal(u, np.array([np.searchsorted(stable_sort(r), r, "right") for r in x]))


# ---- generated -------------------------------------------------------------------------------------------------------
VALUES = [np.nan, -np.nan, 0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, 1e300]
_SORTS = {}


def _sorts(shape):
    if shape not in _SORTS:
        _SORTS[shape] = numfn.jit(lambda x: (np.sort(x, axis=0), np.argsort(x), np.unique(x, return_counts=True),
                                             np.median(x, axis=-1), np.searchsorted(np.sort(x, axis=None), x)),
                                  backend="llvm")
    return _SORTS[shape]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(7,), (3, 40), (2, 100), (90, 2)]), st.data())
def test_generated_values_with_ties_and_nans(shape, draw):
    n = int(np.prod(shape))
    x = np.array(draw.draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n)), np.float64).reshape(shape)
    got = _sorts(shape)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = (stable_sort(x, 0), stable_argsort(x), np.unique(x, return_counts=True), np.median(x, axis=-1),
                    np.searchsorted(stable_sort(x, None), x))
    for i in (0, 1, 4): assert_exact(got[i], expected[i], f"variant {i}")
    _assert_same_groups(got[2], expected[2], x)
    np.testing.assert_array_equal(got[3], expected[3])


def test_numfn_numpy_namespace():
    x = np.array([3, 1, 2])
    check(lambda x: (fnp.sort(x), fnp.argsort(x), fnp.unique(x), fnp.median(x), fnp.searchsorted(fnp.sort(x), 2)),
          x, backend="llvm", expected=(np.array([1, 2, 3]), np.array([1, 2, 0]), np.array([1, 2, 3]), np.float64(2.0),
                                       np.int64(1)))
