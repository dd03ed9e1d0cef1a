"""In-place operators (`+=`, `*=`, ... `@=`) inside traced functions, against NumPy: an update is seen by every name
bound to the array, the result is cast back under 'same_kind' casting, Python and NumPy scalars rebind, and an
update NumPy would make to memory numfn cannot update (an input, a captured array, a view) is refused."""
import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from numfn.dtype import dtypes
from numfn.ir.uop import Buffer, Ops, UOp
from helpers import check, check_mutates, check_raises_like, rand

RNG = np.random.default_rng(90)
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_accumulating_rows(backend, dtype):
    def f(x):
        acc = x[0] * 1                  # a fresh array (NumPy: a copy, not a view)
        for i in range(1, x.shape[0]):
            acc += x[i]
        return acc

    for shape in [(4, 3), (1, 5), (3, 0), (2, 1)]:
        check(f, rand(shape, dtype, RNG), backend=backend, scale=10.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_every_operator(backend, dtype):
    def f(x, y):
        z = x * 1
        z += y
        z -= 2
        z *= y
        z //= 3
        z %= 7
        z **= 2
        z @= np.ones((3, 3), z.dtype)
        if z.dtype.kind == "i":
            z &= 12
            z |= 1
            z ^= 5
            z <<= 2
            z >>= 1
        else:
            z /= 4
        return z

    x, y = rand((2, 3), dtype, RNG, 1, 5), rand((3,), dtype, RNG, 1, 5)
    check(f, x, y, backend=backend, scale=1e6)


def test_every_name_sees_the_update(backend):
    def f(x):
        y = x * 2
        z = y                 # the same array under another name
        z *= 3
        group = (y, [y])
        y += 1
        return y, z, group, y.flatten()

    check(f, rand((2, 3), np.float64, RNG), backend=backend)


def test_updates_after_numfns_own_temporary_views(backend):
    # matmul, stack, concatenate, cumsum, mean and dot view their operands internally; those views are gone when
    # they return, so the arrays may be updated afterwards, as in NumPy (an explicit Euler integrator, for one)
    def f(a, v0):
        v = v0 * 1
        history = []
        for _ in range(3):
            v += 0.1 * (a @ v)
            history.append(np.stack([v, v.cumsum()]))
        s = v * 1
        parts = np.concatenate([s, s]), s.mean(axis=0), np.dot(s, s), s.sum(), s.T.sum()
        s -= 1
        return v, history, parts, s

    a, v0 = rand((3, 3), np.float64, RNG), rand((3,), np.float64, RNG)
    check(f, a, v0, backend=backend, scale=100.0)


def test_a_view_whose_base_is_gone_may_be_updated(backend):
    # nothing else can see the memory any more, so NumPy's answer is this view's own
    def f(x):
        y = (x * 1).reshape(-1)
        y *= 2
        row = (x + 1)[1]
        row -= 3
        return y, row

    check(f, rand((2, 3), np.float64, RNG), backend=backend)


def test_a_copy_does_not_see_the_update(backend):
    def f(x):
        y = x + 0
        flat, copied, casted = y.flatten(), +y, y.astype(np.float32)
        y -= 5
        return y, flat, copied, casted

    check(f, rand((3, 2), np.float64, RNG), backend=backend)


@pytest.mark.parametrize("dtype, other", [(np.float32, np.float64), (np.int32, np.int64), (np.int64, np.uint8),
                                          (np.float64, np.int64)], ids=str)
def test_result_is_cast_back_to_the_arrays_dtype(backend, dtype, other):
    def f(x, y):
        z = x * 1
        z += y
        return z

    check(f, rand((2, 3), dtype, RNG), rand((2, 3), other, RNG), backend=backend)


def test_python_float_into_float32_stays_float32(backend):
    def f(x):
        z = x * 1
        z *= 2.5
        return z

    check(f, rand((4,), np.float32, RNG), backend=backend)


def test_unsafe_casts_and_growing_shapes_raise_like_numpy(backend):
    def int_div(x):
        z = x * 1
        z /= 2
        return z

    def int_plus_float(x):
        z = x * 1
        z += 0.5
        return z

    def grows(x):
        z = x[0] * 1
        z += x
        return z

    ints = rand((2, 3), np.int64, RNG)
    check_raises_like(int_div, ints, backend=backend, match="Cannot cast ufunc 'divide' output")
    check_raises_like(int_plus_float, ints, backend=backend, match="same_kind")
    check_raises_like(grows, ints, backend=backend, match="non-broadcastable output operand")


def test_scalars_rebind(backend):
    # Python and NumPy scalars are immutable: `s += 1` binds a new value to s and leaves other names alone
    def f(x, a):
        b = a
        a += 1
        s = x.sum()
        t = s
        s *= 2
        e = x[0, 0]
        e2 = e
        e -= 1
        return a, b, s, t, e, e2

    check(f, rand((2, 2), np.float64, RNG), 1.5, backend=backend)


CAPTURED = np.arange(3.0)


def _update_input(x):
    x += 1
    return x


def _update_a_view_of_an_input(x):
    first = x[0]
    first += 1
    return first


def _update_a_view(x):
    y = x * 1
    row = y[0]
    row += 1
    return y


def _update_an_array_with_a_view(x):
    y = x * 1
    yt = y.T
    y += 1
    return yt


def _update_a_captured_array(x):
    c = fnp.asarray(CAPTURED)
    c += x[0]
    return c


@pytest.mark.parametrize("fn", [_update_input, _update_a_view_of_an_input, _update_a_view,
                                _update_an_array_with_a_view],
                         ids=lambda f: f.__name__.removeprefix("_update_"))
def test_updates_reach_the_memory_numpy_would_change(backend, fn):
    # the caller's array (and views of it), the base of a view, the views of a base: as NumPy leaves them
    check_mutates(fn, rand((3, 3), np.float64, RNG), backend=backend)


def test_updating_a_captured_array_is_refused(backend):
    # NumPy would change the global for every later call: numfn says so instead
    with pytest.raises(numfn.NumfnError, match=r"writing into an array captured") as info:
        numfn.jit(_update_a_captured_array, backend=backend)(rand((3, 3), np.float64, RNG))
    assert "_update_a_captured_array" in str(info.value)   # points at the user's code


def test_numpy_arrays_made_while_tracing_are_traced(backend):
    def f(x):
        acc = np.zeros(3)   # np.zeros called by the traced function makes a traced array: it can be updated
        acc += x[0]
        acc[1] = x[1].sum()
        return acc

    check(f, rand((2, 3), np.float64, RNG), backend=backend)


def test_updating_a_captured_numpy_array_with_a_traced_value_is_refused(backend):
    def f(x):
        acc = CAPTURED      # a global NumPy array: NumPy would change it for every later call
        acc += x[0]
        return acc

    with pytest.raises(numfn.NumfnError, match=r"updating a NumPy array in place"):
        numfn.jit(f, backend=backend)(np.ones((2, 3)))


def _read_then_write_argument(x):
    total = x.sum()                # reads the caller's values before the write below changes them
    first = x[:2] * 1.0
    x[:2] = x[:2] * 2.0 - 1.0
    return total, first, x.sum()


def _both_versions_in_one_value(x):
    before = x * 1.0
    x[:2] = x[:2] * 2.0 - 1.0
    return before + x          # one kernel reads the argument before and after the write


def test_reads_of_an_argument_run_before_writes_into_it(backend):
    check_mutates(_read_then_write_argument, np.linspace(-1.0, 2.0, 6), backend=backend)
    check_mutates(_both_versions_in_one_value, np.linspace(-1.0, 2.0, 6), backend=backend)


# Strided slices of reshaped arrays: NumPy's result is a view (a write through it changes the array) exactly where
# strides describe it. numfn decides that from the chain of movement ops, where a strided slice is a pad, a split and
# a shrink; a 3-d array flattened and sliced with a step was once taken for a copy and the write was lost.
VIEW_CHAINS = [
    lambda x: x.reshape(-1)[::2],
    lambda x: x.reshape(-1)[1::3],
    lambda x: x.reshape(-1)[::-2],
    lambda x: x.reshape(-1)[2:-1:4],
    lambda x: x.reshape(-1)[::2].reshape(2, -1),
    lambda x: x.reshape(2, -1)[:, ::5],
    lambda x: x.reshape(4, -1)[:, ::2].reshape(-1),   # strides (6, 2) merge: still a view
    lambda x: x.reshape(-1)[::3][::-2],
    lambda x: x[:, ::2].reshape(-1),                  # strides that do not merge: NumPy copies
    lambda x: x.transpose(2, 0, 1).reshape(-1)[::2],  # the reshape copies, so the slice is of the copy
]


def _write_through(view):
    def f(x):
        v = view(x)
        v *= 2
        v[0] = -1
        return v
    return f


@pytest.mark.parametrize("view", VIEW_CHAINS, ids=range(len(VIEW_CHAINS)))
def test_writes_through_strided_views_of_reshaped_arrays(view):
    check_mutates(_write_through(view), rand((2, 3, 4), np.float64, RNG), backend="llvm", calls=1)


def _numpy_strides_in_elements(x: np.ndarray, view) -> tuple[int, ...] | None:
    try:
        v = view(x)
    except ValueError:
        return None
    if not np.shares_memory(v, x): return None
    return tuple(s // x.itemsize if n > 1 else 0 for s, n in zip(v.strides, v.shape))


@pytest.mark.nocompile
@pytest.mark.parametrize("shape", [(2, 3, 4), (4, 6), (12,), (3, 1, 4)], ids=str)
def test_which_reshaped_strided_slices_are_views(shape):
    # view_offset (numfn.codegen.lower), which decides whether a reshape is a view, against NumPy's strides, over
    # chains of a reshape, a strided slice of the last axis and another reshape (None: NumPy copies)
    from numfn.codegen.lower import view_offset
    from numfn.trace.subscript import basic_view, normalize

    steps = [slice(None, None, 2), slice(1, None, 3), slice(None, None, -2), slice(2, -1, 4), slice(None, None, 5),
             slice(None, None, 1)]
    x = np.zeros(shape)
    cases = 0
    for s in steps:
        for outer in [(-1,), (2, -1), (-1, 2), (-1, 1)]:
            for regroup in [None, (-1,), (2, -1), (-1, 1, 2)]:
                try:
                    first = x.reshape(outer)
                    sliced = first[(slice(None),) * (first.ndim - 1) + (s,)]
                    want = sliced if regroup is None else sliced.reshape(regroup, copy=False)
                    strides = tuple(st // x.itemsize if n > 1 else 0 for st, n in zip(want.strides, want.shape))
                except ValueError as e:
                    if "copy" not in str(e): continue   # a shape that does not divide
                    strides = None
                u = UOp(Ops.BUFFER, dtypes.float64, (), Buffer("intermediate", -1, shape)).reshape(first.shape)
                u = basic_view(u, normalize(first.shape, (slice(None),) * (first.ndim - 1) + (s,)))
                if regroup is not None: u = u.reshape(sliced.reshape(regroup).shape)
                chain = []
                while u.op is not Ops.BUFFER:
                    chain.append((u.op, u.arg))
                    u = u.src[0]
                got = view_offset(shape, tuple(reversed(chain)))
                assert got == strides, (outer, s, regroup)
                cases += 1
    assert cases > 40
