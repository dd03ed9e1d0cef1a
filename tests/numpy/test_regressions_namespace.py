"""Regressions in numfn.numpy's namespace (issue 29, items 5, 6, 16c, 16d and 16e), each against NumPy on both
backends: NaN-ignoring reductions and arg-reductions of complex arrays, max/min of complex arrays with NaN, nanmax
and friends of arrays of run-time length, np.arange's result dtype, sorting complex arrays, and writes of traced
values into NumPy arrays made inside the function.
"""
import re
import warnings

import numpy as np
import pytest

import numfn
from helpers import check, check_raises_like, long_only

nan, inf = np.nan, np.inf
CDTYPES = (np.complex64, np.complex128)
# the slowest tables compile complex64 in the long run only (the same code as complex128, another width)
CDTYPES_DEFAULT = (long_only(np.complex64), np.complex128)


def ids(d) -> str:
    return np.dtype(d).name


def complex_rows(dtype) -> np.ndarray:
    """Rows of complex values holding NaN in either part (or both), an all-NaN row, ties and signed zeros."""
    c = complex
    return np.array([[1 + 2j, c(nan, 1), 3 - 1j, c(2, nan)],
                     [-1 + 0j, 5 - 2j, 5 - 3j, c(0, nan)],
                     [c(nan, nan), c(nan, 2), c(nan, -1), c(nan, 0)],        # all NaN
                     [c(-inf, -1), c(nan, 0), c(-inf, 0), 4 + 0j],          # nanargmax fills NaN with -inf + 0j
                     [c(-0.0, 0), c(0, -0.0), 2 + 1j, 2 + 1j],               # equal values: the first one wins
                     [c(inf, 1), c(inf, inf), c(-inf, inf), c(1, -inf)]], dtype)


# ---- item 5: NaN-ignoring reductions of complex arrays ---------------------------------------------------------
NAN_REDUCTIONS = ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin")


@pytest.mark.parametrize("dtype", CDTYPES_DEFAULT, ids=ids)
def test_nan_reductions_of_complex_skip_nan(backend, dtype):
    x = complex_rows(dtype)
    ok = x[[0, 1, 3, 4]]   # no all-NaN row along axis 1
    finite = x[[0, 1, 2, 4]]   # products: numfn multiplies pairwise; infinities tell that from NumPy's order

    def f(x, ok, finite):
        out = {}
        for name in NAN_REDUCTIONS:
            fn = getattr(np, name)
            a, b = (finite, finite[[0, 1, 3]]) if name == "nanprod" else (x, ok)
            out[name] = (fn(a, axis=1), fn(a, axis=0, keepdims=True), fn(b), fn(b, axis=None, keepdims=True),
                         fn(a[::-2, 1::2], axis=1), fn(a[0, :1]))
        out["cum"] = (np.nancumsum(x, axis=1), np.nancumprod(finite, axis=0), np.nancumsum(ok),
                      np.nancumprod(finite[::-1, 1]))
        out["ddof"] = (np.nanvar(x, axis=1, ddof=1), np.nanstd(ok, axis=0, ddof=3), np.nanmean(x, axis=1, dtype=dtype))
        return out
    check(f, x, ok, finite, backend=backend, scale=100.0)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_arg_reductions_of_complex_with_nan(backend, dtype):
    x = complex_rows(dtype)
    ok = x[[0, 1, 3, 4, 5]]
    check(lambda x, ok: (np.argmax(x, axis=1), np.argmin(x, axis=1), np.argmax(x, axis=0), np.argmin(x),
                         np.argmax(x.T, axis=0, keepdims=True), np.argmax(x[4]), np.argmin(x[5]),
                         np.nanargmax(ok, axis=1), np.nanargmin(ok, axis=1), np.nanargmax(x), np.nanargmin(x),
                         np.nanargmax(x, axis=0), np.nanargmin(x[::-1, ::2], axis=0, keepdims=True),
                         x.argmax(axis=1), ok.argmin(axis=-1)),
          x, ok, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_nanargmax_of_complex_all_nan_raises(backend, dtype):
    x = complex_rows(dtype)
    for f in (lambda x: np.nanargmax(x, axis=1), lambda x: np.nanargmin(x[2]), lambda x: np.nanargmax(x[2:3], 0)):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            numfn.jit(f, backend=backend)(x)


@pytest.mark.parametrize("dtype", CDTYPES_DEFAULT, ids=ids)
def test_max_min_of_complex_propagate_the_first_nan(backend, dtype):
    """NumPy's max of complex values is lexicographic and stops at the first NaN (in C order over the axes)."""
    x = complex_rows(dtype)
    rng = np.random.default_rng(29)
    re, im = rng.integers(-2, 3, (2, 5, 19)).astype(float), rng.integers(-2, 3, (2, 5, 19)).astype(float)
    re[rng.random(re.shape) < 0.05], im[rng.random(im.shape) < 0.05] = nan, nan
    y = (re + 1j * im).astype(dtype)
    check(lambda x, y: (np.max(x), np.min(x), np.max(x, axis=0), np.min(x, axis=1, keepdims=True), np.ptp(x, axis=1),
                        np.max(y), np.min(y, axis=(0, 2)), np.max(y, axis=(2, 0)), np.min(y, axis=-1),
                        np.argmax(y, axis=2), np.argmin(y.reshape(-1)), np.max(x.T[::-1]),
                        np.nanmax(y, axis=(0, 2)), np.nanmin(y), np.max(y[:, :, :0], axis=1),
                        np.max(x[:0], axis=0, initial=-5 + 1j), np.min(x[:, :0], axis=1, initial=2j),
                        np.prod(x[0, 1]), np.prod(x, axis=())),
          x, y, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_nanmax_of_complex_all_nan_initial_and_where(backend, dtype):
    """An all-NaN slice gives fmax's result (the slice's first element); initial= and where= take part."""
    x = complex_rows(dtype)
    m = np.array([True, False, True, True])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NumPy's warning for an all-NaN slice
        check(lambda x: (np.nanmax(x, axis=1), np.nanmin(x, axis=1, keepdims=True), np.nanmax(x[2]),
                         np.nanmax(x, axis=1, initial=3 + 0j), np.nanmin(x, axis=1, initial=complex(nan, 1)),
                         np.nanmax(x, axis=1, where=m, initial=-9j), np.nanmin(x[:, :0], axis=1, initial=1j),
                         np.nanmax(x[2:3], axis=0)),
              x, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_nan_reductions_of_complex_zero_size_and_errors(backend, dtype):
    x = np.zeros((0, 3), dtype)
    check(lambda x: (np.nansum(x, axis=0), np.nanprod(x), np.nancumsum(x), np.nanmax(x, axis=1),
                     np.nanargmax(x, axis=1), np.nanvar(x, axis=1)), x, backend=backend)
    check_raises_like(lambda x: np.nanmax(x, axis=0), x, backend=backend)
    check_raises_like(lambda x: np.nanargmin(x, axis=0), x, backend=backend)
    check_raises_like(lambda x: np.nanmax(x[:, 0], where=np.ones(0, bool)), x, backend=backend)
    check_raises_like(lambda x: np.nanmean(x, dtype=np.int64), complex_rows(dtype), backend=backend)
    check(lambda x: np.nanmean(x, axis=1, dtype=np.complex128), complex_rows(dtype), backend=backend)
    z, w = np.array(complex(nan, 1), dtype), np.array(2 - 1j, dtype)   # 0-d arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(lambda z, w: (np.nansum(z), np.nanprod(z), np.nanmax(z), np.nanmin(w, axis=0), np.argmax(z),
                            np.argmin(w), np.nanargmax(w), np.max(z), np.nancumsum(z), np.nanmean(w), np.nanvar(z),
                            np.sort(w[None]), np.median(w)), z, w, backend=backend)
    check_raises_like(lambda z: np.nanargmax(z), z, backend=backend)


# ---- item 16c: nan-reductions of arrays of run-time length ------------------------------------------------------
DYN_VALUES = {"float64": np.array([3.0, -1.0, nan, 2.0, 5.0, -2.0, nan]),
              "float32": np.array([1, 2, -3, nan], np.float32),
              "float16": np.array([1, 2, -3, nan, 7], np.float16),
              "int64": np.array([3, -1, 4, 1]),
              "complex128": np.array([1 + 2j, complex(nan, 1), -1j, 3 + 0j, complex(2, nan)]),
              "complex64": np.array([complex(nan, 1), -1 + 0j, complex(1, nan), 2 - 1j], np.complex64)}


def _positive(x):
    return x.real > 0


@pytest.mark.parametrize("key", DYN_VALUES)
def test_nan_reductions_of_a_selection(backend, key):
    x = DYN_VALUES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(lambda x: (np.nanmax(x[_positive(x)]), np.nanmin(x[_positive(x) | np.isnan(x)]),
                         np.nanargmax(x[_positive(x) | np.isnan(x)]), np.nanargmin(x[x.real != 2]),
                         np.nancumsum(x[_positive(x) | np.isnan(x)]), np.nancumprod(x[_positive(x)]),
                         np.nanmax(x[_positive(x)], initial=4), np.nanmin(x[_positive(x)], keepdims=True),
                         np.max(x[_positive(x)]), np.argmax(x[_positive(x) | np.isnan(x)]),
                         np.ptp(x[_positive(x)]), np.nansum(x[_positive(x)]), np.nanmean(x[x.real != 2])),
              x, backend=backend)


@pytest.mark.parametrize("dtype", (np.float64, np.float16, np.complex64))
def test_nan_reductions_of_selected_rows(backend, dtype):
    x = np.array([[1.0, nan, 3.0], [nan, nan, nan], [2, 5, nan], [-1, 4, 2]])
    if np.dtype(dtype).kind == "c":   # parts set one by one: 1j * nan is NaN in both parts
        z = np.empty(x.shape, dtype)
        z.real, z.imag = x, x[:, ::-1]
        x = z
    else: x = x.astype(dtype)

    def f(x):
        rows = x[x[:, 0].real > 0]
        window = x[2:(x[:, 2].real > 0).sum() + 2]
        return (np.nanmax(rows, axis=0), np.nanmin(rows, axis=1, keepdims=True), np.nanmax(rows),
                np.nanargmax(rows, axis=1), np.nanargmin(rows, axis=0, keepdims=True), np.nanargmax(rows),
                np.argmax(rows), np.argmin(rows, keepdims=True), np.cumsum(rows), np.nancumsum(rows, axis=1),
                np.nancumprod(rows), rows.ravel(), np.nanmax(window, axis=1), np.nanargmin(window, axis=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(f, x, backend=backend)


@pytest.mark.parametrize("dtype", (np.float64, np.complex128))
def test_nan_reductions_of_an_empty_or_all_nan_selection(backend, dtype):
    x = np.array([nan, nan, -1.0]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(lambda x: (np.nanmax(x[np.isnan(x)]), np.nanmin(x[x.real != -1], axis=0),
                         np.nanmax(x[x.real > 0], initial=2), np.nancumsum(x[x.real > 0])), x, backend=backend)
    for f, message in ((lambda x: np.nanmax(x[x.real > 0]), "zero-size array to reduction operation fmax"),
                       (lambda x: np.nanmin(x[x.real > 0]), "zero-size array to reduction operation fmin"),
                       (lambda x: np.nanargmax(x[x.real > 0]), "attempt to get argmax of an empty sequence"),
                       (lambda x: np.nanargmin(x[np.isnan(x)]), "All-NaN slice encountered"),
                       (lambda x: np.argmax(x[x.real > 0]), "attempt to get argmax of an empty sequence")):
        with pytest.raises(ValueError, match=message):
            f(x)   # the test's own premise: NumPy raises this
        with pytest.raises(ValueError, match=message):
            numfn.jit(f, backend=backend)(x)


# ---- item 6: np.arange's dtype and values ------------------------------------------------------------------------
ARANGE_CASES = [((3.0,), {}), ((3.5,), {}), ((2.0, 5), {}), ((np.float32(3),), {}), ((np.float32(0.5), 4), {}),
                ((0, 1, 0.1), {}), ((5, 0, -1), {}), ((5.0, 0, -0.5), {}), ((0, 5, -1), {}), ((3, 3), {}),
                ((1, 2.5), {}), ((10,), {"dtype": np.float32}), ((0.5, 4), {"dtype": np.int64}),
                ((3,), {"dtype": complex}), ((1, 7), {"dtype": np.complex64}), ((0, 3000), {"dtype": np.float16}),
                ((np.float16(0.1), 3000), {}), ((np.float16(0.1), np.float16(30), np.float16(0.3)), {}),
                ((np.int8(5),), {}), ((np.uint8(3), 10), {}), ((np.uint64(3), 10), {}), ((10, np.int32(0), -3), {}),
                ((0.0, 1.0, 0.3), {"dtype": np.float32}), ((1e20, 1e20 + 1e6, 1e5), {}),
                ((2, 20, 3), {"dtype": np.int8}),
                ((np.float64(2), 9), {"dtype": np.float16}), ((0, 300), {"dtype": np.int8}),
                ((1.5, -2.5, -1.0), {"dtype": np.int32}), ((0, 5), {"step": 2}), ((-1.5,), {}), ((3j,), {}),
                ((np.int8(-100), np.int8(100)), {}), ((True,), {}), ((0, 3, True), {})]


def test_arange_dtype_and_values(backend):
    def f(x):
        with warnings.catch_warnings():   # NumPy's overflow warning for np.int8(100) - np.int8(-100)
            warnings.simplefilter("ignore", RuntimeWarning)
            return [np.arange(*args, **kw) for args, kw in ARANGE_CASES] + [np.arange(*args, **kw) + x
                                                                            for args, kw in ARANGE_CASES[:12]]
    check(f, np.zeros((), np.int8), backend=backend)


def test_arange_of_a_float_is_float_for_updates(backend):
    n = 7

    def f(x):
        a = np.arange(3.0)
        a += x            # a float array: NumPy updates it in place
        a[1] = 0.5
        b = np.arange(n * 1.0)
        b[2:] *= x
        c = np.arange(np.float32(4))
        c[0] = x
        return a, b, c, np.arange(3.5) * 0.5
    check(f, 0.25, backend=backend)


@pytest.mark.parametrize("args", [(0, 5, 0), (-3, 4, 1, np.uint8), (0, 5, 1, np.bool_)])
def test_arange_errors(backend, args):
    check_raises_like(lambda x: np.arange(*args[:3], dtype=args[3] if len(args) > 3 else None) + x, 0,
                      backend=backend)


# ---- item 16d: sorting complex arrays ---------------------------------------------------------------------------
def complex_grid(dtype, shape, seed: int = 3) -> np.ndarray:
    """Complex values whose parts are drawn from signed zeros, small integers, infinities and NaN."""
    rng = np.random.default_rng(seed)
    parts = np.array([0.0, -0.0, 1.0, -1.0, 2.0, inf, -inf, nan])
    z = np.empty(shape, dtype)
    z.real, z.imag = rng.choice(parts, shape), rng.choice(parts, shape)
    return z


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_sort_complex_arrays(backend, dtype):
    """NumPy's order: R + Rj, R + nan j, nan + Rj, nan + nan j, each by its parts that are not NaN (stable)."""
    x, m, big = complex_grid(dtype, (40,)), complex_grid(dtype, (5, 13), 4), complex_grid(dtype, (300,), 5)
    check(lambda x, m, big: (np.sort(x), np.argsort(x, kind="stable"), np.sort(m, axis=0), np.sort(m.T[::-1]),
                             np.argsort(m, axis=None, stable=True), np.sort(m, axis=None), np.sort(big),
                             np.argsort(big, kind="stable"), np.sort(x[:1]), np.sort(x[:0]),
                             np.lexsort((x, x.real)), np.lexsort((x.imag, x)),
                             np.searchsorted(np.sort(x), m.ravel()), np.searchsorted(np.sort(x), x, side="right"),
                             np.sort_complex(m), np.sort_complex(m.real), np.sort_complex(m.real.astype(np.int16)),
                             np.partition(big, 150)[150], np.partition(m, (1, 7), axis=1)[:, [1, 7]],
                             np.argpartition(x, 5)[5] == np.argsort(x, kind="stable")[5]),
          x, m, big, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_sort_complex_in_place_and_of_selections(backend, dtype):
    x = complex_grid(dtype, (30,), 6)

    def f(x):
        y = x.copy()
        y.sort()
        sel = x[x.real != 1]
        sel.sort()
        return y, sel, np.sort(x[x.imag > 0]), np.argsort(x[x.real >= 0], stable=True), np.median(x[x.real > 0])
    check(f, x, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_unique_of_complex_arrays(backend, dtype):
    """equal_nan: every complex NaN is one value; NumPy keeps the first in the array's order when it finds the values
    alone (a hash table), the first in sort order when it also returns positions or counts."""
    x, m = complex_grid(dtype, (60,), 7), complex_grid(dtype, (6, 3), 8)
    check(lambda x, m: (np.unique(x), np.unique(x[::-1]), np.unique(x, equal_nan=False), np.sort(np.unique_values(x)),
                        tuple(np.unique(x, return_index=True, return_inverse=True, return_counts=True)),
                        tuple(np.unique_counts(m)), np.unique(m, axis=0), np.unique(x[x.real > 0])),
          x, m, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_median_of_complex_arrays(backend, dtype):
    x = complex_grid(dtype, (5, 13), 9)
    finite = x.copy()
    finite[np.isinf(finite)] = 3   # NumPy's nanmedian along an axis sorts NaN as inf + 0j, among infinite values
    c = complex
    all_nan = np.array([[c(nan, 1), c(1, nan)], [c(nan, 2), 1 + 1j], [c(nan, 3), c(nan, nan)]], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(lambda x, finite, all_nan: (
            np.median(x, axis=1), np.median(x), np.median(x[:, :4], axis=0, keepdims=True), np.median(x[:0]),
            np.nanmedian(finite, axis=1), np.nanmedian(x), np.nanmedian(x[0]), np.nanmedian(finite[:, :4], axis=0),
            np.nanmedian(all_nan, axis=1), np.nanmedian(all_nan[0]), np.nanmedian(all_nan[:, :1]),
            np.nanmedian(x[:0], axis=0), np.median(finite[finite.real > 0])),
            x, finite, all_nan, backend=backend)
    check_raises_like(lambda x: np.percentile(x, 50), x, backend=backend)
    check_raises_like(lambda x: np.sort_complex(x[0, 0]), x, backend=backend)


# ---- item 16e: traced values stored into NumPy arrays made while tracing ----------------------------------------
CONSTANT = np.array([1.0, 2.0, 3.0])


def test_arrays_made_inside_the_function_take_traced_values(backend):
    """NumPy's creation functions called by the function make traced arrays (numfn.interpose), which take writes."""
    def f(x):
        a = np.array([1.0, 2.0, 3.0])
        a[1] = x.sum()
        b = np.zeros(3)
        b[0] = x[0]
        c = np.array(CONSTANT)   # a copy of a captured array: traced
        c[:2] = x[:2]
        d = np.asarray([[1, 2], [3, 4]], dtype=np.float32)
        d[x[:2] > 0] = 9
        e = np.full((2, 3), 2.0)
        e[:, 1] += x[:2]
        return a, b, c, d, e
    check(f, np.array([1.5, -2.0, 3.25]), backend=backend)


STORES = {
    "copy of a captured array": lambda x: _store(CONSTANT.copy(), 0, x[0]),
    "captured array": lambda x: _store(CONSTANT, 0, x[0]),
    "slice": lambda x: _store(CONSTANT.copy(), slice(0, 2), x[:2]),
    "int array": lambda x: _store(CONSTANT.astype(np.int64), 1, x[1]),
    "complex array": lambda x: _store(CONSTANT.astype(np.complex128), 1, x[1]),
    "bool array": lambda x: _store(CONSTANT > 1, 1, x[1] > 0),
    "traced index": lambda x: _store(CONSTANT.copy(), (x > 0).sum(), 1.0),
    "concatenated": lambda x: _store(np.concatenate([CONSTANT, CONSTANT]), slice(2, 4), x[:2]),
}


def _store(a, index, value):
    a[index] = value   # the line the error names
    return a


@pytest.mark.parametrize("case", STORES)
def test_storing_into_a_numpy_array_is_explained(backend, case):
    with pytest.raises(numfn.errors.StoreIntoConstantError, match=r"storing into a NumPy array with a traced value "
                       r"or index \(at .*test_regressions_namespace.py:\d+ in _store: a\[index\] = value .*"
                       r"a = np.array\(a\)"):
        numfn.jit(STORES[case], backend=backend)(np.array([1.5, -2.0, 3.25]))


def test_storing_into_a_numpy_array_in_loops_and_methods(backend):
    def loop(x):
        a = CONSTANT.copy()
        for i in range(3):
            a[i] = x[i] * 2   # in a compiled loop
        return a

    def augmented(x):
        a = CONSTANT.copy()
        a[0] += x[0]
        return a

    def fill(x):
        a = CONSTANT.copy()
        a.fill(x[0])   # NumPy's own ValueError: numfn's explanation instead
        return a
    for f, line in ((loop, "a[i] = x[i] * 2"), (augmented, "a[0] += x[0]")):
        with pytest.raises(numfn.errors.StoreIntoConstantError, match=re.escape(line)):
            numfn.jit(f, backend=backend)(np.array([1.5, -2.0, 3.25]))
    with pytest.raises(numfn.errors.TracerConversionError, match=re.escape("a.fill(x[0])")):
        numfn.jit(fill, backend=backend)(np.array([1.5, -2.0, 3.25]))


# ---- neighbours: clip, ufunc reductions and accumulations of complex arrays -----------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_clip_of_complex_arrays(backend, dtype):
    """np.clip with both bounds is NumPy's clip loop (a NaN value kept, a bound compared with its NaN parts as they
    are); with one bound it is np.maximum or np.minimum (NaN on either side wins)."""
    x, lo, hi = complex_grid(dtype, (64,), 11), complex_grid(dtype, (64,), 12), complex_grid(dtype, (64,), 13)
    check(lambda x, lo, hi: (np.clip(x, lo, hi), np.clip(x, lo, 1 + 1j), np.clip(x, -1 - 1j, hi), np.clip(x, lo, None),
                             np.clip(x, None, hi), np.clip(x, -1, 2.5), np.clip(x.real, -1j, 2 + 1j),
                             np.clip(x[x.real != 1], -1 - 1j, 2 + 0j), x.clip(lo, hi),
                             np.maximum(x, lo), np.minimum(x, hi), np.fmax(x, lo), np.fmin(x, hi)),
          x, lo, hi, backend=backend)


@pytest.mark.parametrize("dtype", CDTYPES_DEFAULT, ids=ids)
def test_ufunc_reduce_and_accumulate_of_complex_arrays(backend, dtype):
    rng = np.random.default_rng(14)
    x = (rng.integers(-3, 4, (4, 6)) + 1j * rng.integers(-3, 4, (4, 6))).astype(dtype)
    x[1, 2], x[3, 0], x[3, 4] = complex(nan, 1), complex(2, nan), complex(nan, nan)

    def f(x):
        out = []
        for u in (np.maximum, np.minimum, np.fmax, np.fmin, np.multiply, np.add):
            out += [u.reduce(x, axis=0), u.reduce(x, axis=1, keepdims=True), u.reduce(x, axis=None),
                    u.reduce(x, axis=1, initial=1 + 1j), u.accumulate(x, axis=0), u.accumulate(x, axis=1)]
        out += [np.subtract.reduce(x, axis=0), np.subtract.reduce(x[0]), np.subtract.accumulate(x, axis=1),
                np.maximum.reduce(x, axis=()), np.multiply.reduce(x[:0], axis=0)]
        return out
    check(f, x, backend=backend, scale=1e4)


def test_np_array_copies_and_asarray_shares(backend):
    """np.array makes a new array (a write into it does not change its source, the caller's array among them);
    np.asarray and copy=None share; ascontiguousarray and asfortranarray copy only where NumPy does."""
    def f(x):
        y = x * 1
        a = np.array(x)
        a[0] = 5
        b = np.array(y)
        b[1] = 6
        c = np.asarray(y)
        c[2] = 7                                            # y too
        d = np.array(y, copy=None)
        d[0] += 1                                           # y too
        e = np.asarray(y, copy=True)
        e[0] = -1
        m = np.ones((2, 3)) * x
        f_ = np.ascontiguousarray(m.T)
        f_[0, 0] = 9
        g = np.asfortranarray(m)
        g[0, 1] = 8
        h = np.ascontiguousarray(m[0])
        h[2] = 4                                            # m too: a contiguous view
        return x, y, a, b, c, d, e, m, f_, g, h, np.array(x, ndmin=3), np.array(2.0, ndmin=1) + np.float32(1), \
            np.asarray(3) + np.int8(1), np.array(x, dtype=np.float32)
    check(f, np.array([1.0, 2.0, 3.0]), backend=backend)
    check_raises_like(lambda x: np.array([1, 2], copy=False) + x, np.ones(2), backend=backend)
    check_raises_like(lambda x: np.array(x, dtype=np.float32, copy=False), np.ones(2), backend=backend)


def test_float16_nan_reductions_sorting_and_ranges(backend):
    rng = np.random.default_rng(2)
    x = rng.uniform(-3, 3, (5, 7)).astype(np.float16)
    x[rng.random((5, 7)) < 0.2], x[2], x[0, 0] = nan, nan, -0.0

    def f(x):
        out = []
        for fn in (np.nansum, np.nanmean, np.nanvar, np.nanmax, np.nanmin, np.nanmedian, np.median, np.ptp):
            out += [fn(x, axis=1), fn(x.T[::-1], axis=-1, keepdims=True), fn(x)]
        out += [np.nanargmax(x[[0, 1, 3, 4]], axis=1), np.nanargmin(x, axis=0), np.sort(x, axis=0), np.argsort(x.T),
                np.nancumsum(x, axis=1), np.nancumprod(x[:, :3], axis=0), np.unique(x), np.argmax(x, axis=1),
                np.clip(x, np.float16(-1), np.float16(1.5)), np.arange(np.float16(0.5), np.float16(100.0),
                                                                        np.float16(0.7)),
                np.arange(0, 3000, 3, dtype=np.float16), np.nanmax(x[x > 0]), np.nanargmin(x[~(x > 0)])]
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(f, x, backend=backend, scale=30.0)
