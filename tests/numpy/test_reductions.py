"""Conformance of numfn.numpy's reductions and statistics with NumPy (issue 12, item 4): argmax/argmin, any/all,
count_nonzero, ptp, cumulative products and sums along any axis, var/std, average, the nan-functions,
sum/prod/max/min/mean with initial= and where=, trapezoid, and the ndarray methods among them.

The tables run every function over every dtype and the shapes 0-d, size 0, size 1, vectors, matrices, 3-D arrays and
a non-contiguous negative-stride view, with its keyword variants; all variants NumPy accepts are compiled together
(one specialization per function group and dtype) and compared with NumPy's results (values, dtype, shape), and each
variant NumPy rejects must raise the same exception type while tracing.
"""
import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from helpers import (ALL_DTYPES, FLOAT_DTYPES, check, check_raises_like, check_xp, numpy_exception,
                     numpy_result, rand)

SHAPES = {"0d": (), "empty": (0, 3), "one": (1,), "vec": (7,), "3d": (2, 3, 4)}
LARGEST = 24   # elements reduced at most: the absolute error scale of sums is magnitude * LARGEST


def operands(dtype, seed: int, lo: float = -3, hi: float = 3) -> dict:
    """One array per test shape, plus a non-contiguous matrix view with a negative stride."""
    rng = np.random.default_rng(seed)
    arrs = {name: rand(shape, dtype, rng, lo, hi) for name, shape in SHAPES.items()}
    arrs["strided"] = rand((8, 10), dtype, rng, lo, hi)[::2, ::-2]
    return arrs


def axis_variants(nd: int, tuples: bool = True) -> list[dict]:
    """All axes (None), the first, last and (3-D) middle axis, keepdims, a tuple of axes, and axes NumPy rejects
    (out of range, repeated)."""
    vs = [{}, {"axis": 0}, {"axis": nd}, {"axis": -nd - 1}]
    if nd: vs += [{"axis": -1, "keepdims": True}]
    if nd == 3: vs += [{"axis": 1}]
    if not nd: vs += [{"axis": None, "keepdims": True}]
    if tuples and nd >= 2: vs += [{"axis": (-1, 0), "keepdims": True}, {"axis": (0, 0)}]
    if tuples and nd == 1: vs += [{"axis": ()}]
    return vs


def check_table(fn, variants, dtype, backend: str, seed: int = 0, scale: float = 3.0 * LARGEST, **kw):
    """fn(x, **v) for every operand shape and every variant v of its ndim: those NumPy computes in one compiled
    function against NumPy, each one NumPy rejects raising the same exception type. Returns (accepted, rejected)."""
    arrs = operands(dtype, seed)
    ok, bad = [], []
    for name, x in arrs.items():
        for v in variants(x.ndim):
            (bad if numpy_exception(fn, (x,), v) is not None else ok).append((name, v))
    names = list(arrs)

    def table(*xs):
        by_name = dict(zip(names, xs))
        return {f"{n} {v}": fn(by_name[n], **v) for n, v in ok}
    if ok: check(table, *arrs.values(), backend=backend, scale=scale, **kw)
    for n, v in bad:
        check_raises_like(lambda x, v=v: fn(x, **v), arrs[n], backend=backend)
    return len(ok), len(bad)


def ids(d) -> str:
    return np.dtype(d).name


def _with(*fns):
    """Several functions of the same arguments as one table entry (they are valid for the same inputs)."""
    return lambda x, **v: tuple(f(x, **v) for f in fns)


def _method(name):
    return lambda x, **v: getattr(x, name)(**v)


# ---- the tables -----------------------------------------------------------------------------------------------
def _int_axes(nd):   # argmax-like: one axis or None (a tuple is NumPy's TypeError)
    return axis_variants(nd, tuples=False) + [{"axis": -1}, {"axis": (0,)}]


def _scan_axes(nd):
    return [{}, {"axis": 0}, {"axis": -1}, {"axis": nd}, {"dtype": np.float32, "axis": -1}]


def _cumulative_axes(nd):
    return [{}, {"axis": -1, "include_initial": True}, {"axis": 0}, {"axis": nd}, {"dtype": np.int64, "axis": 0}]


def _ddof_axes(nd):
    return axis_variants(nd) + [{"ddof": 1}, {"axis": -1, "ddof": 2}, {"axis": 0, "correction": 1},
                                {"ddof": 1, "correction": 1}, {"axis": -1, "dtype": np.float64}, {"ddof": 0.5}]


# name: (function, its variants, dtypes). The nan-functions of integers and bools are the plain ones: they run
# for one of them; methods share their function's implementation and compile to the same graph.
NAN_DTYPES = (np.float32, np.float64, np.int32)
TABLES = {
    "argmax argmin": (_with(np.argmax, np.argmin, _method("argmax"), _method("argmin")), _int_axes, ALL_DTYPES),
    "any all count_nonzero": (_with(np.any, np.all, _method("any"), _method("all"), np.count_nonzero),
                              axis_variants, ALL_DTYPES),
    "ptp": (np.ptp, axis_variants, ALL_DTYPES),
    "cumprod": (_with(np.cumprod, _method("cumprod")), _scan_axes, ALL_DTYPES),
    "cumulative_sum cumulative_prod": (_with(np.cumulative_sum, np.cumulative_prod), _cumulative_axes, ALL_DTYPES),
    "var std": (_with(np.var, np.std, _method("var"), _method("std")), _ddof_axes, ALL_DTYPES),
    "nansum nanprod nanmean": (_with(np.nansum, np.nanprod, np.nanmean), axis_variants, NAN_DTYPES),
    "nanmax nanmin": (_with(np.nanmax, np.nanmin), axis_variants, NAN_DTYPES),
    "nanargmax nanargmin": (_with(np.nanargmax, np.nanargmin), _int_axes, NAN_DTYPES),
    "nanvar nanstd": (_with(np.nanvar, np.nanstd), _ddof_axes, NAN_DTYPES),
    "nancumsum nancumprod": (_with(np.nancumsum, np.nancumprod), _scan_axes, FLOAT_DTYPES),
}
TABLE_CASES = [(t, d) for t, (_, _, dts) in TABLES.items() for d in dts]


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("table,dtype", TABLE_CASES, ids=[f"{t}-{ids(d)}" for t, d in TABLE_CASES])
def test_table(backend, table, dtype):
    fn, variants, _ = TABLES[table]
    ok, bad = check_table(fn, variants, dtype, backend, seed=sum(map(ord, table)))
    assert ok + bad > 0


@pytest.mark.parametrize("table", ["argmax argmin", "var std", "nanmax nanmin", "cumulative_sum cumulative_prod"])
def test_table_c_backend(backend, table):
    # a representative subset on the C backend too (the fixture gives both; the full tables run on LLVM)
    if backend == "llvm": pytest.skip("the full table runs on LLVM")
    fn, variants, _ = TABLES[table]
    check_table(fn, variants, np.float32, backend, seed=3)


def test_c_backend_where_average_trapezoid(backend):
    if backend == "llvm": pytest.skip("these run on LLVM for every dtype")
    test_where_and_initial(backend, np.float32)
    test_average_weights_returned_keepdims(backend, np.float64)
    test_trapezoid(backend, np.int32)


# ---- NaN, infinities, signed zeros ----------------------------------------------------------------------------
def _special_rows(dtype):
    nan, inf = np.nan, np.inf
    return np.array([[1.0, nan, 3.0, nan, -1.0],       # NaN inside: argmax/argmin pick the first NaN
                     [nan, nan, nan, nan, nan],        # all NaN
                     [-0.0, 0.0, -0.0, 0.0, -0.0],     # signed zeros compare equal: the first one wins
                     [inf, -inf, 2.0, inf, -inf],      # repeated extremes: the first one wins
                     [-inf, -inf, nan, -inf, -inf],    # NaN among -inf (nanargmax replaces NaN by -inf)
                     [2.0, 7.0, 7.0, -3.0, -3.0]], dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=ids)
def test_nan_inf_and_signed_zeros(backend, dtype):
    x = _special_rows(dtype)
    check(lambda x: (np.argmax(x, axis=1), np.argmin(x, axis=1), x.T.argmax(axis=0), np.argmax(x), np.argmin(x[2]),
                     np.any(x, axis=1), np.all(x, axis=1), np.count_nonzero(x, axis=1), np.ptp(x, axis=1),
                     np.nanmax(x, axis=1), np.nanmin(x, axis=1), np.nansum(x, axis=1), np.nanprod(x, axis=1),
                     np.nanmean(x, axis=1), np.nanvar(x, axis=1), np.nanstd(x, axis=1, ddof=1),
                     np.nancumsum(x, axis=1), np.nancumprod(x, axis=1), np.var(x, axis=1), np.std(x, axis=0),
                     np.nanmax(x, axis=1, initial=0.5), np.nanmin(x, axis=1, initial=np.nan),
                     np.cumprod(x, axis=1), np.mean(x, axis=1), np.average(x, axis=1)),
          x, backend=backend, scale=10.0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=ids)
def test_nanargmax_with_nan_and_all_nan_slices(backend, dtype):
    # an all-NaN slice is NumPy's ValueError, found by the program and raised by the call
    x = _special_rows(dtype)

    def make(xp):
        def f(x):
            others = xp.concatenate([x[:1], x[2:]])   # without the all-NaN row
            return (xp.nanargmax(others, axis=1), xp.nanargmin(others, axis=1), xp.nanargmax(x, axis=0),
                    xp.nanargmin(others.T, axis=0, keepdims=True), xp.nanargmax(x), x.argmax(axis=1))
        return f
    check_xp(make, x, backend=backend)
    for g in (lambda x: np.nanargmax(x, axis=1), lambda x: np.nanargmin(x[1]),
              lambda x: np.nanargmin(x[1:3], axis=1, keepdims=True)):
        check_raises_like(g, x, backend=backend, match="All-NaN slice encountered")


# ---- where= and initial= --------------------------------------------------------------------------------------
def _masked(x, m, r):
    return (np.sum(x, where=m), np.sum(x, axis=-1, where=m), np.prod(x, axis=0, where=r, keepdims=True),
            np.max(x, where=m, initial=-1), np.min(x, axis=1, where=r, initial=2), x.sum(where=r),
            x.max(axis=-1, where=m, initial=0), np.mean(x, where=m), np.mean(x, axis=-1, where=r),
            x.mean(axis=(0, 1), where=m, keepdims=True), np.any(x, where=m), np.all(x, axis=0, where=r),
            x.any(axis=-1, where=r), np.var(x, where=m), np.std(x, axis=-1, where=r, ddof=1),
            np.nansum(x, where=m), np.nanmax(x, axis=0, where=r, initial=-5), np.nanmean(x, axis=-1, where=m),
            np.nanvar(x, where=r), np.nanstd(x, axis=0, where=m), np.sum(x, where=True), np.sum(x, where=False),
            np.max(x, where=False, initial=3), np.mean(x, axis=1, where=False), np.count_nonzero(x, axis=0))


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_where_and_initial(backend, dtype):
    rng = np.random.default_rng(20)
    x = rand((3, 4, 5), dtype, rng)
    m = rng.random((3, 4, 5)) < 0.6
    r = rng.random(5) < 0.5      # broadcast along the last axis
    m[0, 0] = False               # a slice with nothing selected (sum 0, mean NaN, max = initial)
    check(_masked, x, m, r, backend=backend, scale=3.0 * 60)


def test_initial(backend):
    rng = np.random.default_rng(21)
    x, i, e = rand((3, 4), np.float32, rng), rand((3, 4), np.int32, rng), np.zeros((0, 3), np.float64)
    check(lambda x, i, e: (np.sum(x, initial=5), np.prod(x, axis=0, initial=2), np.max(x, axis=1, initial=2.5),
                           np.min(i, initial=-10), x.max(initial=np.float32(100)), np.max(e, axis=0, initial=-1),
                           np.min(e, initial=7.0), np.sum(i, axis=1, initial=3, keepdims=True),
                           np.nanmax(x, initial=10), np.nanmin(e, axis=0, initial=1.5), np.nansum(x, initial=1)),
          x, i, e, backend=backend, scale=50.0)


def test_where_errors_like_numpy(backend):
    x = np.arange(12.0).reshape(3, 4)
    m, ints = np.ones(4, bool), np.ones(4, np.int64)
    for f in (lambda x: np.max(x, where=m),                 # no identity: initial= needed with a mask
              lambda x: np.min(x, axis=0, where=np.True_),
              lambda x: np.nanmax(x, where=m),
              lambda x: np.sum(x, where=ints),               # the mask must be bool
              lambda x: np.sum(x, where=np.ones((2, 3, 4), bool)),   # and broadcast to x's shape
              lambda x: np.mean(x, where=np.ones(3, bool)),
              lambda x: np.max(np.zeros((0, 2)), axis=0),
              lambda x: np.nanmin(np.zeros((0, 2)), axis=0),
              lambda x: np.argmax(np.zeros((2, 0)), axis=1),
              lambda x: np.nanargmin(np.zeros(0)),
              lambda x: np.ptp(x > 3),                       # bool subtraction
              lambda x: np.var(x, ddof=1, correction=1),
              lambda x: np.nanmean(x, dtype=np.int32),
              lambda x: np.cumulative_sum(x),                # 2-D needs an axis
              lambda x: x.ptp(),                             # gone from ndarray in NumPy 2
              lambda x: np.average(x, weights=np.ones(4)),   # weights of another shape need an axis
              lambda x: np.average(x, axis=0, weights=np.ones(4)),
              lambda x: np.average(np.zeros((3, 0)), axis=0)):
        check_raises_like(f, x, backend=backend)


# ---- average --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_average_weights_returned_keepdims(backend, dtype):
    rng = np.random.default_rng(22)
    x = rand((3, 4, 5), dtype, rng)
    w = rng.uniform(0.5, 2.0, (3, 4, 5))
    w1, w20 = rand((5,), np.int32, rng, 1, 4), rng.uniform(0.5, 2.0, (5, 3)).astype(np.float32)
    check(lambda x, w, w1, w20: (np.average(x), np.average(x, axis=1), np.average(x, weights=w),
                                 np.average(x, axis=-1, weights=w1), np.average(x, axis=(2, 0), weights=w20),
                                 np.average(x, axis=(0, 2), weights=w20.T, returned=True),
                                 np.average(x, axis=1, returned=True), np.average(x, returned=True),
                                 np.average(x, axis=-1, weights=w1, keepdims=True, returned=True),
                                 np.average(x, weights=w, axis=(0, 1), keepdims=True),
                                 np.average(x[0, 0, 0]), np.average(x[:, :0], axis=1)),
          x, w, w1, w20, backend=backend, scale=3.0 * 60)


def test_average_weights_summing_to_zero_raise(backend):
    # NumPy's ZeroDivisionError depends on the weights' values: the program checks, the call raises
    x, w = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, -1.0], [2.0, -2.0]])
    check_raises_like(lambda x, w: np.average(x, weights=w), x, w, backend=backend)
    check_raises_like(lambda x, w: np.average(x, axis=1, weights=w), x, w, backend=backend, match="Weights sum to zero")
    check(lambda x, w: np.average(x, axis=0, weights=w), x, w, backend=backend)


# ---- trapezoid ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_trapezoid(backend, dtype):
    rng = np.random.default_rng(23)
    y, v = rand((3, 4, 5), dtype, rng), rand((6,), dtype, rng)
    xs, xn = np.sort(rng.uniform(0, 4, 5)), np.cumsum(rng.uniform(0.1, 1, (3, 4, 5)), axis=0)
    check(lambda y, v, xs, xn: (np.trapezoid(y), np.trapezoid(y, axis=0), np.trapezoid(y, dx=0.5, axis=1),
                                np.trapezoid(y, x=xs), np.trapezoid(y, x=xn, axis=0), np.trapezoid(v),
                                np.trapezoid(v, dx=2), np.trapezoid(v[:1]), np.trapezoid(y[:, :, ::-2], axis=-1),
                                np.trapezoid(y, dx=np.float32(0.25))),
          y, v, xs, xn, backend=backend, scale=100.0)
    for f in (lambda y: np.trapezoid(y[0, 0, 0]), lambda y: np.trapezoid(y, axis=3),
              lambda y: np.trapezoid(y, x=np.ones(4))):
        check_raises_like(f, y, backend=backend)


# ---- the functions as numfn.numpy names, and how they reach users -----------------------------------------------
@pytest.mark.parametrize("backend", ["llvm"])
def test_numfn_numpy_names(backend):
    # each function is also numfn.numpy.NAME (the same implementation np.NAME dispatches to)
    x = rand((3, 4), np.float64, np.random.default_rng(24))

    def make(xp):
        return lambda x: (xp.argmax(x, axis=1), xp.argmin(x), xp.any(x > 1), xp.all(x > -5, axis=0),
                          xp.count_nonzero(x > 0), xp.ptp(x, axis=0), xp.cumprod(x, axis=1), xp.var(x, ddof=1),
                          xp.std(x, axis=0), xp.average(x, axis=1), xp.nansum(x), xp.nanmean(x, axis=0),
                          xp.nanmax(x), xp.nanmin(x, axis=1), xp.nanargmax(x, axis=0), xp.nanargmin(x),
                          xp.nanstd(x), xp.nanvar(x, axis=1), xp.nanprod(x, axis=0), xp.nancumsum(x),
                          xp.nancumprod(x, axis=0), xp.cumulative_sum(x, axis=1), xp.cumulative_prod(x, axis=0),
                          xp.trapezoid(x), xp.sum(x, where=x > 0), xp.amax(x, axis=0))
    expected = numpy_result(make(np), (x,))
    check(make(fnp), x, backend=backend, expected=expected, scale=50.0)
    import numfn.numpy.reductions as r
    import numfn.numpy.statistics as s
    from numfn.trace.tensor import NUMPY_IMPLEMENTATIONS
    for mod in (r, s):
        for name in mod.__all__:
            assert NUMPY_IMPLEMENTATIONS[getattr(np, name)] is getattr(fnp, name), name


def test_argmax_fuses_into_one_kernel():
    # the max and the first-index reductions share one loop nest per row, reading only the input (nanargmax's
    # all-NaN check is computed apart, into hidden outputs)
    x = np.zeros((64, 32))
    for f in (lambda x: np.argmax(x, axis=1), lambda x: x.argmin(axis=0), lambda x: np.nanargmax(x, axis=1)):
        schedule = numfn.jit(f).specialize(x).schedule
        (result,) = [ei for ei in schedule if any(b.category == "output" and b.number == 0 for b in ei.buffers)]
        assert [b.category for b in result.buffers] == ["output", "input"], str(schedule)


def test_reductions_under_vmap(backend):
    x = rand((3, 4, 5), np.float32, np.random.default_rng(25))
    f = lambda x: (np.argmax(x, axis=0), np.var(x, axis=1), np.nanmax(x), x.cumprod(axis=-1), np.any(x > 2))
    out = numfn.jit(numfn.vmap(f), backend=backend)(x)
    expected = [np.stack(v) for v in zip(*(f(x[i]) for i in range(3)))]
    for a, e in zip(out, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
        assert a.dtype == e.dtype
