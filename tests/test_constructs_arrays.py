"""Constructs of real NumPy programs around arrays, against NumPy: np.ndarray(...) and NumPy's array-making
functions called by any name (issue 28 item 5), attribute assignment (`y.shape = ...`, several targets at once,
`x.dtype = ...` refused) and tuple targets (item 6), and the errors for values numfn cannot trace: another
library's function, a string argument, a pandas object (item 12)."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import numfn
from numpy import empty, full, zeros_like   # NumPy's, imported by name: traced all the same
from tests.helpers import check, check_mutates, check_raises_like, rand

RNG = np.random.default_rng(28)
CAPTURED = np.ones((2, 3))


# ---- item 5: np.ndarray(...) and creation functions by any name ----------------------------------------------------
def nd_positional(a):
    y = np.ndarray(a.shape, a.dtype)
    y[...] = a
    return y


def nd_keywords(a):
    y = np.ndarray(shape=(a.size,), dtype=np.float64, order="F")
    y[:] = a.ravel() * 2
    z = np.ndarray(3, np.int32, offset=8, order="K")   # (NumPy ignores offset= without a buffer)
    z.fill(7)
    return y, z


def nd_filled_in_a_loop(a):
    y = np.ndarray((a.shape[0],))
    for i in range(a.shape[0]):
        y[i] = a[i].sum()
    return y


def imported_names(a):
    y = empty(a.shape)
    y[...] = a
    z = zeros_like(CAPTURED)   # of a concrete array
    z[0] = a.ravel()[:3] if a.size >= 3 else 0
    return y, z, full((2,), a.sum())


def aliased(a):
    make = np.zeros
    y = make(a.shape)
    y += a
    return y


def make_in_helper(shape):
    return np.empty(shape)


def from_helper(a):
    y = make_in_helper(a.shape)
    y[...] = a + 1
    return y


def nd_over_traced_buffer(a):
    flat = a.ravel().copy()
    view = np.ndarray((2, 2), dtype=a.dtype, buffer=flat, offset=flat.itemsize)
    view[0, 0] = -1   # a view: the write reaches flat
    return view, flat


@pytest.mark.parametrize("fn", [nd_positional, nd_keywords, nd_filled_in_a_loop, imported_names, aliased, from_helper],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 4)])
def test_creation_by_any_name(fn, shape):
    check(fn, rand(shape, np.float64, RNG), backend="llvm")


def test_ndarray_dtypes_and_views(backend):
    def f(a):   # (a def: numfn converts its calls, a lambda's it cannot read)
        return nd_positional(a[::-1, ::2]), nd_positional(a.astype(np.int32)), nd_over_traced_buffer(a[0])
    check(f, rand((4, 6), np.float32, RNG), backend=backend)


def test_ndarray_constructor_errors():
    x = rand((5,), np.float64, RNG)

    def too_small(a):
        return np.ndarray((3,), dtype=a.dtype, buffer=a.copy(), offset=24)
    check_raises_like(too_small, x, backend="llvm", match="buffer is too small")

    def reinterpreting(a):
        return np.ndarray((5,), dtype=np.int64, buffer=a.copy())

    def strided(a):
        return np.ndarray((2,), dtype=a.dtype, buffer=a.copy(), strides=(16,))

    for fn, match in ((reinterpreting, "numpy.ndarray of dtype int64 over a traced array of dtype float64"),
                      (strided, r"strides=.*slicing")):
        with pytest.raises(numfn.NumfnError, match=match):
            numfn.jit(fn)(x)


def test_isinstance_ndarray_keeps_working():
    seen = []

    def f(a):
        seen.append((isinstance(CAPTURED, np.ndarray), isinstance(3.0, np.ndarray), np.ndarray is type(CAPTURED)))
        y = np.ndarray((3,))
        y[...] = a
        return y
    check(f, rand((3,), np.float64, RNG), backend="llvm")
    assert seen[0] == (True, False, True)
    assert np.ndarray((2,)).shape == (2,) and isinstance(np.ndarray((1,)), np.ndarray)   # outside: NumPy's own


# ---- item 6: attribute assignment and tuple targets ----------------------------------------------------------------
def reshape_local(a):
    y = a * 2
    y.shape = (a.size,)
    return y


def reshape_seen_by_every_name(a):
    y = a.copy()
    z = y                 # the same array: sees the new shape
    row = y[0]            # a view made before: keeps its shape
    y.shape = (-1,)
    y[0] = 100.0          # one memory: row sees the write
    assert z.shape == y.shape == (a.size,) and row.shape == (a.shape[1],)
    return y, z, row


def several_targets(a):
    xi, yi, c = a + 0, a + 1, a * 3
    xi.shape = yi.shape = c.shape = a.size
    return xi, yi, c


def view_reshaped_in_place(a):
    v = a[:, :1]          # one column: reshaped without a copy
    v.shape = (a.shape[0],)
    v[0] = -5.0           # writes into the argument, as NumPy's view does
    return v


def tuple_targets(a):
    p, q = np.zeros(3), np.ones(2)
    p[0], q[0] = divmod(a.sum(), 2.0)
    (p[1], q[1]), p[2] = (a.min(), a.max()), a.mean()
    return p, q


@pytest.mark.parametrize("fn", [reshape_local, reshape_seen_by_every_name, several_targets, tuple_targets],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_attribute_assignment(fn, dtype, backend):
    check(fn, rand((3, 4), dtype, RNG), backend=backend)


@pytest.mark.parametrize("shape", [(1, 1), (2, 1), (4, 3)])
def test_shape_of_a_view(shape):
    check_mutates(view_reshaped_in_place, rand(shape, np.float64, RNG), backend="llvm")


def test_shape_assignment_errors():
    x = rand((3, 4), np.float64, RNG)
    # NumPy's own errors
    check_raises_like(lambda a: setattr(a.T.copy().T, "shape", (12,)), x, backend="llvm",
                      match="Incompatible shape for in-place modification")
    check_raises_like(lambda a: setattr(a[:, ::3], "shape", (6,)), x, backend="llvm", match="Incompatible shape")
    check_raises_like(lambda a: setattr(a.copy(), "shape", (5,)), x, backend="llvm", match="cannot reshape")
    check_raises_like(lambda a: setattr(a.sum(), "shape", (1,)), x, backend="llvm", match="numpy.generic")

    # what numfn refuses, naming the construct and the rewrite
    def argument_reshaped(a):
        a.shape = (12,)
        return a

    def dtype_set(a):
        y = a.copy()
        y.dtype = np.int64
        return y

    for fn, match in ((argument_reshaped, r"shape of a function argument.*x = x.reshape"),
                      (dtype_set, r"setting ndarray.dtype.*astype")):
        with pytest.raises(numfn.NumfnError, match=match) as info:
            numfn.jit(fn)(x)
        assert "test_constructs_arrays.py" in str(info.value)   # the user's line


# ---- item 12: errors naming what the user passed or called ---------------------------------------------------------
@pytest.fixture
def fakelib():
    """A module of another library exporting a ufunc that is not NumPy's (as scipy.special.erf is)."""
    module = types.ModuleType("fakelib")
    module.erf = np.linalg._umath_linalg.det   # a ufunc NumPy's namespace does not export
    sys.modules["fakelib"] = module
    yield module
    del sys.modules["fakelib"]


def test_another_librarys_ufunc_is_named_by_its_module(fakelib):
    def f(a):
        return fakelib.erf(a)
    with pytest.raises(numfn.NumfnError, match=r"^fakelib\.erf is not supported.*another library") as info:
        numfn.jit(f)(np.eye(3))
    assert "numpy.det" not in str(info.value) and "test_constructs_arrays.py" in str(info.value)


def test_a_string_argument_suggests_static_argnames():
    def f(a, mode):
        return a * 2 if mode == "double" else a
    with pytest.raises(TypeError, match=r"argument 'mode' of type str .*static_argnames=\('mode',\)"):
        numfn.jit(f)(np.ones(3), "double")
    np.testing.assert_array_equal(numfn.jit(f, static_argnames=("mode",))(np.ones(3), "double"), np.full(3, 2.0))

    def g(a, options):
        return a
    with pytest.raises(TypeError, match=r"static_argnames=\('options',\)"):
        numfn.jit(g)(np.ones(3), {"mode": "fast"})


def test_a_pandas_object_suggests_to_numpy():
    Series = type("Series", (), {"__module__": "pandas.core.series", "to_numpy": lambda self: np.ones(3)})
    with pytest.raises(TypeError, match=r"argument 'a' of type Series .*x\.to_numpy\(\)"):
        numfn.jit(lambda a: a + 1)(Series())


def test_an_array_like_suggests_asarray():
    class Wrapped:
        def __array__(self, dtype=None, copy=None):
            return np.ones(3)
    with pytest.raises(TypeError, match=r"argument 'a' of type Wrapped .*np\.asarray\(x\)"):
        numfn.jit(lambda a: a + 1)(Wrapped())


# ---- NumPy functions whose dispatcher does not name the traced argument ---------------------------------------------
# NumPy hands a call to __array_function__ only for the arguments its dispatcher names (np.take's `a` and `out`,
# np.repeat's and np.roll's `a`): with a NumPy array or a Python number there and a traced array elsewhere, NumPy's
# own function ran and could not convert the traced one (fuzz seeds 81000161, 81000196: np.take of a loop's counter)
TABLE = np.arange(10.0) ** 2


def undispatched(x, i):
    c = 0
    while c < 5:
        c = c + 1
    k = i % 3
    return (np.take(c, np.array([0, 0, 2 - 2])), np.take(TABLE, i), np.take(TABLE, i, mode="wrap"),
            np.take(TABLE.reshape(2, 5), k, axis=1), np.repeat(TABLE[:3], k[:3]), np.roll(TABLE, 3),
            np.take(x, 1), np.take(7, k[:2] * 0), np.take_along_axis(TABLE[None], i[None], axis=1))


def take_from_table(i):
    return np.take(TABLE, i)


def test_numpy_functions_with_a_traced_argument_their_dispatch_does_not_see(backend):
    check(undispatched, rand((3,), np.float64, RNG), np.array([1, 4, 2, 9]), backend=backend)
    check_raises_like(take_from_table, np.array([3, 10]), backend=backend)   # IndexError, as NumPy


# ---- out= of NumPy's functions: the result written into the array given ----------------------------------------------
def outs_of_functions(a, b):
    c = np.empty_like(a)
    np.add(a, b, out=c)
    np.clip(c, 0.2, 0.8, out=c)
    d = np.zeros(3)
    np.sum(a.reshape(3, -1), axis=1, out=d)
    e = np.zeros(a.shape, np.float32)
    np.round(a, 2, out=e)
    r = np.cumsum(a, out=a)   # into an argument: the caller's array
    return c, d, e, r is a


def clip_into_ints(a):
    o = np.zeros(a.shape, np.int64)
    np.clip(a, 0.5, 2.5, out=o)
    return o


def sum_into_wrong_shape(a):
    o = np.zeros(2)
    return np.sum(a.reshape(3, -1), axis=1, out=o)


def test_out_of_numpy_functions(backend):
    a, b = rand((12,), np.float64, RNG), rand((12,), np.float64, RNG)
    check_mutates(outs_of_functions, a, b, backend=backend)
    check_raises_like(clip_into_ints, a, backend=backend)          # float into int64 under 'same_kind': TypeError
    check_raises_like(sum_into_wrong_shape, a, backend=backend)    # ValueError


# ---- numpy.lib.stride_tricks.sliding_window_view: a read-only view of overlapping windows ----------------------------
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402 - imported by name, as users do


def rolling_zscores(x, w):
    r = sliding_window_view(x, w)
    return r.mean(axis=1), (x[w - 1:] - r.mean(axis=1)) / r.std(axis=1), r.shape


def windows_2d(a):
    v = sliding_window_view(a, (2, 3))
    return (v.sum(axis=(-1, -2)), sliding_window_view(a, 3, axis=0).max(axis=-1),
            sliding_window_view(a[::-1, 1:], 2, axis=1).min(axis=-1), np.lib.stride_tricks.sliding_window_view(a, 5, 1))


def windows_see_later_writes(x):
    w = sliding_window_view(x, 3)
    x[0] = 100.0
    return w.sum(axis=1)


def write_into_windows(x):
    w = sliding_window_view(x, 3)
    w[0, 0] = 1.0
    return x


def windows_too_wide(x):
    return sliding_window_view(x, x.size + 1)


def test_sliding_window_view(backend):
    x = rand((40,), np.float64, RNG)
    check(rolling_zscores, x, 7, backend=backend)
    check(windows_2d, np.arange(30.0).reshape(5, 6), backend=backend)
    check_mutates(windows_see_later_writes, x, backend=backend)
    check_raises_like(write_into_windows, x, backend=backend)   # read-only: NumPy's ValueError
    check_raises_like(windows_too_wide, x, backend=backend)
