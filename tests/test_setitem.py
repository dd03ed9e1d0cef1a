"""Advanced indexing (integer arrays, mixed with basic indices) and assignment (x[index] = value, x[index] op= value)
inside traced functions, against NumPy: results, the arrays written into (computed ones, views, the caller's
arguments), the errors NumPy raises."""
import warnings

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from helpers import check, check_mutates, check_raises_like, check_xp, rand

RNG = np.random.default_rng(130)
X = rand((4, 5, 6), np.float64, RNG)

# index forms with integer arrays (known while tracing): NumPy's placement of the advanced axes
ADVANCED = [
    [0, 2], [-1, 0, -4], np.array([[1, 2], [3, 0]]), ([0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]),
    (slice(None), [0, 4], [5, 0]), (1, [0, 1], [2, 3]), (slice(None), [0, 1], 2), ([0, 1], slice(None), 1),
    (0, slice(None), [1, 2]), ([[0], [1]], [0, 2]), (Ellipsis, [0, -1]), ([1], None, [2]), (None, [1, 2], [0, 0]),
    (slice(1, None, 2), [4, 0], slice(None, None, -2)), [], np.array([], np.int64), (True,), (0, True),
    (Ellipsis, False), ([2, 2, 2],), (np.int64(1), [0, 1]), (np.array(1), slice(None), [0, 1]),
]


def test_advanced_indexing_forms(backend):
    check(lambda x: tuple(x[i] for i in ADVANCED), X, backend=backend)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_, np.uint8], ids=lambda d: np.dtype(d).name)
def test_traced_index_arrays(backend, dtype):
    x = rand((5, 7), dtype, RNG)
    i = np.array([4, -1, 0, 2, -5])
    j = np.array([[0, 6], [-7, 3]])
    check(lambda x, i, j: (x[i], x[:, j], x[i[:2], j[0]], x[i[::-1], 1:3], x[j % 5, ::-2], x[i[None, :4]]),
          x, i, j, backend=backend)
    check(lambda x, k: (x[k], x[k, 1:], x[2:, k]), x, np.int64(-2), backend=backend)   # a traced scalar index


def test_index_arrays_of_every_integer_dtype_and_views(backend):
    x = rand((6, 4), np.float64, RNG)
    for dt in (np.int8, np.uint16, np.int32, np.uint64, np.bool_):
        idx = np.array([1, 0, 1, 1], dt) if dt == np.bool_ else np.array([5, 0, 3], dt)
        if dt == np.bool_: continue   # boolean masks have data-dependent shapes (tests/test_masks.py)
        check(lambda x, i: (x[i], x.T[:, i], x[::-1][i]), x, idx, backend=backend)


def test_out_of_bounds_indices_raise_index_error(backend):
    x = np.arange(10.0).reshape(5, 2)
    f = numfn.jit(lambda x, i: x[i] * 2, backend=backend)
    np.testing.assert_array_equal(f(x, np.array([4, -5])), x[[4, -5]] * 2)
    for bad, msg in (([0, 5], "index 5 is out of bounds for axis 0 with size 5"),
                     ([-6], "index -6 is out of bounds for axis 0 with size 5")):
        with pytest.raises(IndexError, match=msg):
            f(x, np.array(bad))
    g = numfn.jit(lambda x, i: x[:, i], backend=backend)
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 1 with size 2"):
        g(x, np.array([0, 2]))


@pytest.mark.parametrize("fn", [lambda x: x[[0, 9]], lambda x: x[:, [2]], lambda x: x[[0, 1], [0, 1, 2]],
                                lambda x: x[np.array([1.0])], lambda x: x[1.5], lambda x: x[0, 0, 0, [0]],
                                lambda x: x[..., ..., 0]],
                         ids=["bounds", "bounds-axis1", "broadcast", "float-array", "float", "too-many", "ellipses"])
def test_invalid_indices_raise_like_numpy(backend, fn):
    check_raises_like(fn, np.zeros((3, 2)), backend=backend)


# ---- assignment into arrays the function computed --------------------------------------------------------------

SETS = [
    (0, 1.5), (-1, [1, 2, 3, 4, 5, 6]), ((1, 2), -3), ((slice(1, 3), 0), 7), (slice(None, None, -2), 0.5),
    ((Ellipsis, 1), 9), ((None, 2), 4), ((slice(3, 0, -1), slice(None, None, 2), 1), [1, 2, 3]),
    ([0, 2], 5), (([0, 0], [1, 1], [2, 2]), [1, 2]), (([3, 1], slice(None), [0, 5]), 8),
    ([2, 2, 2], np.arange(3.0)[:, None, None]),
    ((slice(None), [4, 0]), np.arange(6.0)), ((0, True), 3), ((), 2.5), (Ellipsis, 1.0),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32], ids=lambda d: np.dtype(d).name)
def test_assignment_forms(backend, dtype):
    def f(x):
        outs = []
        for index, value in SETS:
            y = x * 2
            y[index] = value
            outs.append(y)
        return outs

    check(f, rand((4, 5, 6), dtype, RNG), backend=backend)


def test_augmented_assignment_and_repeated_indices(backend):
    def f(x, i):
        y = x * 1
        y[[0, 0, 1]] += 1          # NumPy: reads once, writes each place once (the last write wins)
        y[1:3] *= 2
        y[i] -= 10                 # traced, with duplicates
        y[::2, 1] //= 3
        z = x * 1
        z[[1, 1]] = [[5], [6]]     # the last one
        return y, z

    check(f, rand((4, 3), np.float64, RNG), np.array([3, 3, 0]), backend=backend)


def _fuzz_79000310(x1):
    v1 = x1.T[0]                        # a view of x1's first column
    v1[np.clip(x1.T, -4, 3)] += x1      # repeated indices; np.clip of x1.T is in Fortran order in NumPy
    return x1


def test_repeated_indices_write_the_last_in_c_order(backend):
    """Which of several writes to one element wins is the last in the C order of the index array (NumPy leaves the
    order unspecified and takes the index's memory order: for a Fortran-ordered index another write wins; fuzz
    seed 79000310). numfn's answer is NumPy's with the index in C order, whatever its layout."""
    x1 = np.array([[0, 1, 0, 3], [1, 0, 2, 3], [2, 0, 3, 1], [1, 2, 2, 1]], dtype=np.uint8)

    def in_c_order(x):
        v1 = x.T[0]
        v1[np.ascontiguousarray(np.clip(x.T, -4, 3))] += x
        return x
    f = numfn.jit(_fuzz_79000310, backend=backend)
    np.testing.assert_array_equal(f(x1.copy()), in_c_order(x1.copy()))
    np.testing.assert_array_equal(f(np.asfortranarray(x1)), in_c_order(x1.copy()))   # the argument's layout too


def test_assignment_broadcasts_and_casts_like_numpy(backend):
    def f(x, v):
        a = x.astype(np.int32)
        a[0] = 2.9                 # truncated
        a[1] = v                   # float array into int: unsafe cast
        b = x * 1
        b[:, 1:3] = np.ones((1, 2))   # leading size-1 axes of the value are dropped
        b[2] = v[None]
        return a, b

    check(f, rand((3, 4), np.float64, RNG), rand((4,), np.float64, RNG), backend=backend)


@pytest.mark.parametrize("fn", [lambda x: _set(x, slice(0, 2), np.ones(3)), lambda x: _set(x.astype(int), 0, np.nan),
                                lambda x: _set(x.astype(np.int8), 0, 300), lambda x: _set(x, 5, 1.0),
                                lambda x: _set(x, [0, 7], 1.0)],
                         ids=["shape", "nan-int", "overflow", "bounds", "array-bounds"])
def test_invalid_assignments_raise_like_numpy(backend, fn):
    check_raises_like(fn, np.zeros((3, 2)), backend=backend)


def _set(x, index, value):
    y = x * 1
    y[index] = value
    return y


def test_writes_through_views_reach_the_base_and_its_other_views(backend):
    def f(x):
        y = x * 1
        t = y.T                    # a view
        r = y.reshape(-1)          # a view (contiguous)
        row = y[1]
        row[::2] = -1              # writes y (and t, r see it)
        t[0, 1:] = 7
        r[-1] = 100
        col = y[:, 2]
        col += 0.5
        flat_copy = y.T.reshape(-1)   # NumPy copies here: not a view
        flat_copy[0] = 55
        return y, t, r, row, col, flat_copy

    check(f, rand((3, 4), np.float64, RNG), backend=backend)


def test_values_read_before_a_write_keep_their_values(backend):
    # the old version is read (lazily, inside fused kernels) after the write in program order: numfn orders the
    # kernels or copies, as needed
    def f(x):
        y = x * 1
        before = y * 2             # read before the write
        y[0] = 5
        after = y + before         # reads both versions
        z = x * 1
        z[1:] = z[:-1]             # overlapping: the value is read before anything is written
        w = x * 1
        w[::-1] = w                # reversed onto itself
        v = x * 1
        v[[1, 0, 2]] = v[[0, 1, 1]]
        m = x[:3, :3] * 1
        m @= m                     # the product reads every element
        return y, before, after, z, w, v, m

    check(f, rand((4, 3), np.float64, RNG), backend=backend)


def test_assignments_in_loops_and_helpers(backend):
    def make(xp):
        def f(x):
            out = xp.zeros((x.shape[0], 3))
            for i in range(x.shape[0]):
                out[i, 0] = x[i].sum()
                out[i, 1:] = x[i, :2] * i
            return out
        return f

    check_xp(make, rand((5, 4), np.float64, RNG), backend=backend)


# ---- writes into the function's arguments ----------------------------------------------------------------------

def test_writes_into_arguments_change_the_callers_arrays(backend):
    def step(u, out):
        out[1:-1] = 0.5 * (u[:-2] + u[2:])
        out[0] = out[-1] = 0

    def scale(a, b):
        a *= 2                     # the whole argument
        b[::2] += a[: b[::2].size]
        return a.sum() + b.sum()

    def reverse(x):
        x[:] = x[::-1]             # reads what it overwrites: NumPy computes the value first
        return None

    check_mutates(step, rand((9,), np.float64, RNG), np.zeros(9), backend=backend)
    check_mutates(scale, rand((6,), np.float64, RNG), rand((5,), np.float64, RNG), backend=backend)
    check_mutates(reverse, rand((7,), np.float64, RNG), backend=backend)


def test_writes_into_argument_views_and_strided_arguments(backend):
    def f(a):
        a[1:, 0] = -1
        a.T[0, 1] = 5
        row = a[2]
        row += 1
        return a[0] * 1

    base = rand((5, 6), np.float64, RNG)
    check_mutates(f, base, backend=backend)
    # non-contiguous and byte-swapped arguments: written back as NumPy would
    theirs, ours = base.copy(), base.copy()
    f(theirs[::2, 1:4])
    numfn.jit(f, backend=backend)(ours[::2, 1:4])
    np.testing.assert_array_equal(ours, theirs)
    swapped = base.astype(">f8")
    expected = base.copy()
    f(expected)
    numfn.jit(f, backend=backend)(swapped)
    np.testing.assert_array_equal(swapped, expected)


def test_read_only_and_non_array_arguments_are_refused(backend):
    def f(a):
        a[0] = 1

    jf = numfn.jit(f, backend=backend)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        jf(ro)
    assert not ro.any()
    with pytest.raises(TypeError, match="writes into it"):
        jf([1.0, 2.0])
    with pytest.raises(ValueError, match="read-only"):
        numfn.jit(lambda a: fnp.broadcast_to(a, (2, 3)).__setitem__(0, 1), backend=backend)(np.zeros(3))


def test_writes_into_arguments_under_vmap_and_svmap(backend):
    def f(u, v):
        u[0] = v.sum()
        u[1:] *= 2
        return v * 1

    for mapped in (numfn.vmap, numfn.svmap):
        u, v = rand((4, 3), np.float64, RNG), rand((4, 2), np.float64, RNG)
        theirs = u.copy()
        for k in range(4): f(theirs[k], v[k])
        out = mapped(f)(u, v)
        np.testing.assert_allclose(u, theirs, rtol=1e-12)
        np.testing.assert_array_equal(out, v)


def test_a_jitted_function_that_writes_called_from_another(backend):
    inner = numfn.jit(lambda a, k: a.__setitem__(slice(None, k), 0), static_argnums=1, backend=backend)

    def outer(x):
        y = x * 3
        inner(y, 2)
        inner(x, 1)                # the outer function's argument: the caller's array
        return y

    check_mutates(outer, rand((4,), np.float64, RNG), backend=backend)


def test_writing_an_argument_that_shares_memory_with_another(backend):
    """NumPy's result: the write through a shows through b (tests/test_aliasing.py has the patterns)."""
    def f(a, b):
        a[:] = b * 2

    a, want = np.arange(5.0), np.arange(5.0)
    f(want[:4], want[1:])
    numfn.jit(f, backend=backend)(a[:4], a[1:])
    np.testing.assert_array_equal(a, want)


def _write_empty_prefixes(x):
    y = x.copy()
    y[:0] = y[:0] * 2.0 - 1.0     # an empty region starting at 0 is not the whole array
    y[:0, :] = 5.0
    y[3:3] += 1.0
    x[:0] = 7.0                   # the argument keeps its shape and values
    return y, x


def test_writes_into_empty_regions_change_nothing(backend):
    x = rand((4, 3), np.float64, RNG)
    got_x = x.copy()
    got = numfn.jit(_write_empty_prefixes, backend=backend)(got_x)
    want_x = x.copy()
    want = _write_empty_prefixes(want_x)
    for g, w in zip(got, want): np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_x, want_x)


def _write_through_flat_views(a):
    b = a * 1.0
    b.reshape(-1)[np.array([0, 13])] = 9.5       # a view of a 3-D array: the write reaches b
    np.put(a, [1, 26], -2.0)                      # into the 3-D argument
    c = b.transpose(1, 0, 2).reshape(9, 3)        # NumPy copies here: the write does not reach b
    c[0] = 7.0
    return b, c


def test_writes_through_reshapes_of_three_or_more_axes(backend):
    """Found while adding fill_diagonal: a reshape of 3+ axes was taken for a copy (its index expressions keep
    nested divisions), so writes through it were lost."""
    x = rand((3, 3, 3), np.float64, RNG)
    got_x, want_x = x.copy(), x.copy()
    got, want = numfn.jit(_write_through_flat_views, backend=backend)(got_x), _write_through_flat_views(want_x)
    for g, w in zip(got, want): np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_x, want_x)


# A Python float written into an integer array goes through Python's int() in NumPy: NaN raises ValueError, infinity
# and a value out of the dtype's range OverflowError (a bool array takes the float's truth). A NumPy float scalar
# (x.sum()) does the same through basic indices into a signed array, and is cast (wraps) otherwise. Values come in as
# arguments, so each form compiles once per dtype and the run-time check decides (fuzz seed 44102298 wrapped 1e10).
def _at_index(a, v):
    a[0] = v
    return a


def _at_slice_numpy_scalar(a, v):
    a[1:] = (v * np.ones(2)).sum() / 2   # a NumPy float64 scalar, traced
    return a


def _at_index_array(a, v):
    a[np.array([0, 2])] = v
    return a


def _at_index_array_numpy_scalar(a, v):
    a[np.array([0, 2])] = (v * np.ones(2)).sum() / 2
    return a


def _filled(a, v):
    a.fill(v)
    return a


def _in_a_loop(a, v):
    for i in range(a.shape[0]):
        a[i] = v * (i + 1)
    return a


FLOAT_WRITES = [_at_index, _at_slice_numpy_scalar, _at_index_array, _at_index_array_numpy_scalar, _filled,
                _in_a_loop]
FLOATS = [2.7, -1.5, -1.0, 100.0, 300.0, 1e10, -1e10, 2.0 ** 63, 1e19, 1e30, np.inf, -np.inf, np.nan]


def _outcome(fn, dtype, v):
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(np.zeros(3, dtype), v).tolist()
    except (OverflowError, ValueError) as e:
        return type(e), str(e)


@pytest.mark.parametrize("fn", FLOAT_WRITES, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_float_scalars_written_into_integer_arrays(fn, dtype):
    jitted = numfn.jit(fn)
    for v in FLOATS:
        assert _outcome(jitted, dtype, v) == _outcome(fn, dtype, v), v


# A NumPy integer scalar goes through Python's int() the same way (NumPy 2): through basic indices (and fill) into a
# signed integer array, a value out of its range raises OverflowError ("Python integer 300 out of bounds for int8",
# "Python int too large to convert to C long" past int64); into an unsigned array, or through an index array or a
# mask, it is cast (wraps). Fuzz seed 47000090: `x0[-1:] = np.maximum(x2, x1)` of two Python ints, into int8, wrapped.
def _at_slice_int_scalar(a, v):
    a[1:] = v.max()   # a NumPy integer scalar of v's dtype, traced
    return a


def _at_index_int_scalar(a, v):
    a[0] = v.min()
    return a


def _filled_int_scalar(a, v):
    a.fill(v.max())
    return a


def _at_index_array_int_scalar(a, v):
    a[np.array([0, 2])] = v.max()
    return a


def _at_mask_int_scalar(a, v):
    a[a == 0] = v.max()
    return a


def _maximum_of_python_ints(a, x1, x2):   # the fuzz run's program: np.maximum of two Python ints is an np.int64
    a[-1:] = np.maximum(x2, x1)
    return a


INT_WRITES = [_at_slice_int_scalar, _at_index_int_scalar, _filled_int_scalar, _at_index_array_int_scalar,
              _at_mask_int_scalar]


@pytest.mark.parametrize("fn", INT_WRITES, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("src", [np.int16, np.int64, np.uint8, np.uint64], ids=lambda d: np.dtype(d).name)
def test_integer_scalars_written_into_integer_arrays(fn, src):
    jitted = numfn.jit(fn)
    for dtype in (np.int8, np.uint8, np.int64):
        for v in (1, 127, 128, 255, 300, 2 ** 15 - 1, 2 ** 63 - 1, 2 ** 63 + 5, 2 ** 64 - 1, -1, -129, -2 ** 15):
            if not np.iinfo(src).min <= v <= np.iinfo(src).max: continue
            values = np.array([v, v], src)
            assert _outcome(lambda a, _: jitted(a, values), dtype, None) == \
                _outcome(lambda a, _: fn(a, values), dtype, None), (dtype, v)


def test_numpy_int_from_python_ints_written_into_int8(backend):
    jitted = numfn.jit(_maximum_of_python_ints, backend=backend)
    for x1 in (1, 100, 127, 128, 2 ** 63 - 1, -129):
        assert _outcome(lambda a, _: jitted(a, x1, 1), np.int8, None) == \
            _outcome(lambda a, _: _maximum_of_python_ints(a, x1, 1), np.int8, None), x1


def test_float_constants_written_into_integer_arrays(backend):
    for value, dtype in [(1e10, np.int8), (np.nan, np.int64), (np.inf, np.uint8), (-1.0, np.uint16),
                         (np.nan, np.bool_), (1e10, np.int64), (-2.5, np.int8)]:
        def f(a):
            a[1] = value
            a.fill(value) if a.shape[0] > 5 else None
            return a
        assert _outcome(lambda a, _: numfn.jit(f, backend=backend)(a), dtype, None) == \
            _outcome(lambda a, _: f(a), dtype, None), (value, dtype)


# fuzz seed 48000738: `x0[np.clip(v, -3, 2)] = v` with v computed from x0 itself. The value stored for the write is
# needed only where the index is in bounds, so its store was gated by the index's bounds test; that test read the
# index from the intermediate buffer the same kernel stores it into afterwards (an uninitialized read), and the
# write was lost. A gate computes the kernel's own values inline now, as the values do
def _index_and_value_from_target_matmul(x0, x1):
    v = np.matmul(x1, x0)
    x0[np.clip(v, -3, 2)] = v
    return x0


def _index_and_value_from_target_sum(x0, x1):
    v = (x1 * x0).sum(axis=-1)
    x0[np.clip(v, -3, 2)] = v * 2
    return x0


def _index_and_value_from_target_2d(x0, x1):
    v = (x1 * x0[0]).sum(axis=-1).reshape(-1)
    x0[1, np.clip(v, 0, 2)] += v
    return x0


@pytest.mark.parametrize("fn", [_index_and_value_from_target_matmul, _index_and_value_from_target_sum],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int8], ids=lambda d: np.dtype(d).name)
def test_a_write_whose_index_and_value_read_the_target(fn, dtype, backend):
    for first in ([1, 1, 0], [0, 0, 0], [1, 1, 1]):
        check_mutates(fn, np.array(first, dtype), np.array([[[1, 1, 1]]], np.int32), backend=backend, calls=1)


def test_a_2d_write_whose_index_and_value_read_the_target(backend):
    check_mutates(_index_and_value_from_target_2d, np.arange(6).reshape(2, 3) % 2, np.ones((1, 3), np.int64),
                  backend=backend, calls=1)


# A new constant array written at traced indices: `r = np.zeros(n, np.int64)` is the same node as the 0 of the
# write's own bounds test `0 <= p` at shape (n,), and that 0 was loaded from `r` as the write changed it (the inverse
# of a permutation came out as [0 0 0 0 1 3 5 2]). Constants are computed where they are used, never loaded.
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64, np.uint8], ids=lambda d: np.dtype(d).name)
def test_a_new_constant_array_written_at_traced_indices(dtype, backend):
    p = np.array([2, 4, 7, 5, 0, 6, 3, 1])

    def inverse(p):
        r = np.zeros(p.size, dtype)
        r[p] = np.arange(p.size)
        return r

    def ranks(v):
        order = np.argsort(v)
        r = np.empty_like(order)
        r[order] = np.arange(len(v))
        return r, order

    def filled(p, v):
        a = np.full(p.size, 1, dtype)
        a[p] = v
        b = np.zeros((2, p.size), dtype)
        b[1, p[::-1]] = v
        b[0, p] += 1
        return a, b

    check(inverse, p, backend=backend)
    check(ranks, np.array([0.5, -1.0, 3.0, 2.5, 0.0, 7.0, -3.0, 1.0]), backend=backend)
    check(filled, p, np.arange(8, dtype=dtype) * 3, backend=backend)
