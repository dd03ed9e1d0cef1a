"""Arguments that share memory with an argument the function writes into (numfn.trace.aliasing): the compiled function
gives NumPy's result, the same Python function run eagerly on the same memory layout, statement by statement."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import numfn
from helpers import assert_same, rand

RNG = np.random.default_rng(13)


def check_aliased(fn, memory: np.ndarray, make, backend: str, calls: int = 2):
    """fn(*make(memory)) run by NumPy and by numfn, each on its own copy of `memory`: the results and the memory
    afterwards agree (twice: the second call reuses the specialization)."""
    jitted = numfn.jit(fn, backend=backend)
    theirs, ours = memory.copy(), memory.copy()
    for _ in range(calls):
        want = fn(*make(theirs))
        got = jitted(*make(ours))
        if want is None: assert got is None
        else: assert_same(got, want)
        assert_same(ours, theirs)
    return jitted


def _shift_add(a, b):
    a[1:] += b
    return (a[1:] * b).sum()


def _add(a, b):
    a += b
    return a.sum()


def _add_returned(a, b):
    a += b
    return a, b          # returned arrays are copies, with the values after the write


def _assign_scaled(a, b):
    a[...] = b * 2 + a


def _swap_halves(a, b):
    t = a[0] + b[0]
    a[0] = b[-1]
    b[-1] = t
    return a * 1, b * 1


def _accumulate(a, b, c):
    a += b * c
    c -= a
    return b.sum()


def _read_after_write(a, b):
    a[:2] = -1
    s = b.sum()          # b sees the write through a
    a[2:] *= 3
    return s, b[0] + 0


def _matrix_update(a, b):
    a[1:, :] -= b[:-1, :] * 0.5
    return a.T @ b


def _stencil_into(u, out):
    out[1:-1] = 0.5 * (u[:-2] + u[2:])


PATTERNS = [   # (function, memory shape, arguments made from the memory)
    (_shift_add, (9,), lambda x: (x, x[:-1])),
    (_shift_add, (9,), lambda x: (x, x[1:])),
    (_add, (8,), lambda x: (x, x[::-1])),
    (_add, (8,), lambda x: (x, x)),
    (_add, (5, 5), lambda x: (x, x.T)),
    (_add, (6, 4), lambda x: (x[:, 1:], x[:, :-1])),
    (_add, (6, 8), lambda x: (x[::2, ::-2], x[1::2, 1::2][::-1])),
    (_add, (12,), lambda x: (x[::3][:3], x[::2][:3])),
    (_add, (3, 4, 5), lambda x: (x[1:, :, ::2], x[:-1].transpose(0, 1, 2)[:, :, ::2])),
    (_add, (4, 4), lambda x: (x[0], x[:, 1])),                       # a row and a column
    (_add_returned, (4, 4), lambda x: (x, x.T)),
    (_add, (5,), lambda x: (x[2:3].reshape(()), x[2:3].reshape(()))),  # 0-d
    (_add, (4, 6), lambda x: (x[:, None, 2:], x[:, None, :-2])),     # size-1 axes
    (_assign_scaled, (10,), lambda x: (x[:-1], x[1:])),
    (_assign_scaled, (10,), lambda x: (x[1:], x[:-1])),
    (_swap_halves, (7,), lambda x: (x[2:], x[:5])),
    (_accumulate, (10,), lambda x: (x[:6], x[2:8], x[4:])),
    (_read_after_write, (6,), lambda x: (x, x[::-1])),
    (_matrix_update, (6, 6), lambda x: (x, x.T)),
    (_stencil_into, (12,), lambda x: (x, x)),
]


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("fn, shape, make", PATTERNS, ids=lambda p: getattr(p, "__name__", None) or str(p))
def test_aliasing_patterns(backend, fn, shape, make):
    check_aliased(fn, rand(shape, np.float64, RNG), make, backend)


@pytest.mark.parametrize("fn, shape, make", [PATTERNS[0], PATTERNS[4], PATTERNS[17]], ids=["shift", "T", "rw"])
def test_aliasing_on_every_backend(backend, fn, shape, make):
    check_aliased(fn, rand(shape, np.float64, RNG), make, backend)


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.int8, np.bool_, np.complex128])
def test_aliasing_dtypes(backend, dtype):
    def f(a, b):
        a[1:] += b
        a[:-1] *= b[::-1]
        return a.sum(), (b * 2).sum()

    check_aliased(f, rand((9,), dtype, RNG), lambda x: (x, x[:-1]), backend)


def test_the_unaliased_specialization_stays_the_fast_one():
    jitted = numfn.jit(_add)
    x, y = np.arange(6.0), np.arange(6.0)
    jitted(x, y)
    jitted(x, x)
    assert len(jitted.specializations) == 1   # the aliased one hangs off it, not the jit's own table
    nf = jitted.specializations[0]
    assert not nf.aliases and len(nf._aliased_specializations) == 1
    np.testing.assert_array_equal(x, np.arange(6.0) * 4)


def test_different_offsets_are_different_patterns():
    jitted = numfn.jit(_assign_scaled)
    for k in (1, 2, 1):
        x, y = np.arange(8.0), np.arange(8.0)
        _assign_scaled(x[k:k + 5], x[:5])
        jitted(y[k:k + 5], y[:5])
        np.testing.assert_array_equal(y, x)
    assert len(jitted.specializations[0]._aliased_specializations) == 2


def test_read_only_arguments():
    def f(a, b):
        a[1:] += b
        return b * 1

    x = np.arange(6.0)
    ro = x[:-1]
    ro.flags.writeable = False
    want_x = np.arange(6.0)
    want = f(want_x, want_x[:-1])
    got = numfn.jit(f)(x, ro)               # the read-only one is read: fine, and it sees the write
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        numfn.jit(f)(ro, x[1:5])             # the read-only one is written: NumPy's error, before anything runs
    np.testing.assert_array_equal(x, want_x)
    # a broadcast (read-only, zero strides) of the written argument is read as one
    def g(a, b):
        a += b[0]
        return b.sum()

    x, y = np.arange(4.0), np.arange(4.0)
    want = g(x, np.broadcast_to(x, (3, 4)))
    got = numfn.jit(g)(y, np.broadcast_to(y, (3, 4)))
    np.testing.assert_array_equal(y, x)
    assert got == want


def test_arguments_in_containers_and_keywords():
    def f(pair, scale=None):
        a, b = pair
        a[:-1] += b[1:] * scale
        return a.sum()

    x, y = np.arange(7.0), np.arange(7.0)
    want = f((x, x[::-1]), scale=x[2:3])
    got = numfn.jit(f)((y, y[::-1]), scale=y[2:3])
    np.testing.assert_array_equal(y, x)
    assert got == want


def test_vmap_of_a_function_writing_into_aliased_arguments():
    """Each example in its own memory: as a loop over the examples. Examples sharing memory (rows of x and of x.T):
    as the batched function, one NumPy statement over the whole batch (vmap's meaning), not a loop."""
    def f(u, v):
        u[1:] += v[:-1]
        return u.sum()

    def batched(u, v):
        u[:, 1:] += v[:, :-1]
        return u.sum(axis=1)

    x = rand((3, 5), np.float64, RNG)
    y = x.copy()
    want = [f(x[k], x[k]) for k in range(3)]
    got = numfn.vmap(f)(y, y)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(y, x, rtol=1e-12)
    for make in (lambda m: (m[1:], m[:-1]), lambda m: (m, m.T)):
        x = rand((5, 5), np.float64, RNG)
        y = x.copy()
        want = batched(*make(x))
        got = numfn.vmap(f)(*make(y))
        np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(y, x, rtol=1e-12)


@pytest.mark.parametrize("make, match", [
    (lambda x: (x, x.view(np.int64)), "has another dtype"),
    (lambda x: (x, np.lib.stride_tricks.as_strided(x, (3, 4), (0, 8))), "zero stride"),
    (lambda x: (x, np.lib.stride_tricks.as_strided(x, (3, 3), (8, 8))), "interleave or overlap"),
    (lambda x: (x, np.lib.stride_tricks.as_strided(x, (4, 3), (48, 32))), "interleave or overlap"),
    (lambda x: (x, np.frombuffer(x.data.cast("B")[4:-4], np.float64)), "misaligned"),
], ids=["dtype", "zero-stride", "self-overlap", "interleaved", "misaligned"])
def test_views_numfn_cannot_express_are_refused(make, match):
    def f(a, b):
        a += 1
        return b * 1

    x = np.zeros(32)
    a, b = make(x)
    with pytest.raises(numfn.NumfnError, match=match):
        numfn.jit(f)(a, b)
    assert not x.any()   # nothing was written


def test_svmap_still_refuses_shared_memory():
    def f(a, b):
        a += b

    x = np.zeros((2, 4))
    with pytest.raises(numfn.NumfnError, match="shares memory"):
        numfn.svmap(f)(x, x)


def _both_written(a, b):
    a += b * 2
    b[...] = a - b
    return (a * b).sum()


@st.composite
def _strided_slices(draw, dims: tuple[int, ...], shape: tuple[int, ...]):
    """A basic index of memory of shape `dims` whose view has `shape` (steps of either sign)."""
    index = []
    for n, k in zip(dims, shape):
        step = draw(st.sampled_from([s for s in (-3, -2, -1, 1, 2, 3) if (k - 1) * abs(s) < n]))
        first = draw(st.integers(0, n - 1 - (k - 1) * abs(step)))
        index.append(slice(first, first + (k - 1) * step + 1, step) if step > 0 else
                     slice(first + (k - 1) * abs(step), first - 1 if first else None, step))
    return tuple(index)


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_generated_aliasing_patterns(data):
    """Two views of one memory by random strided slices (and transposes), both written: NumPy's result."""
    dims = data.draw(st.sampled_from([(24,), (6, 7)]))
    shape = tuple(data.draw(st.integers(1, min(n, 5))) for n in dims)
    transposed = [len(dims) == 2 and shape[0] <= min(dims) and shape[1] <= min(dims) and data.draw(st.booleans())
                  for _ in range(2)]
    index = [data.draw(_strided_slices(dims, shape[::-1] if t else shape)) for t in transposed]

    def make(x):
        return tuple(x[i].T if t else x[i] for i, t in zip(index, transposed))

    check_aliased(_both_written, rand(dims, np.float64, RNG), make, "llvm", calls=1)


def _write_then_read(a, b):
    a[:2] = -1
    return b.sum()


_inner = numfn.jit(_write_then_read)


def _calls_inner(x, inner):
    y = x * 2
    s = inner(y, y[::-1])      # traced arrays sharing memory: the inner function is traced on the caller's views
    t = inner(x, x[1:])        # the same for the caller's own argument
    u = inner(y[3:], x)        # separate memory: the inner function's own trace, spliced in
    return s, t, u, y


def test_a_jitted_function_called_with_traced_arrays_sharing_memory():
    x, want_x = np.arange(6.0), np.arange(6.0)
    want = _calls_inner(want_x, _write_then_read)
    got = numfn.jit(lambda x: _calls_inner(x, _inner))(x)
    for g, w in zip(got, want): np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(x, want_x)


def test_aliased_specializations_kept_in_memory_are_bounded():
    def f(a, b):
        a[:3] += b[:3]
        return a.sum()
    jf = numfn.jit(f)
    x = np.arange(60.0)
    y = x.copy()
    for k in range(20):   # 20 offset patterns, each compiled (or found in the disk cache) once
        assert jf(x[k:k + 30], x[:30]) == f(y[k:k + 30], y[:30])
    np.testing.assert_array_equal(x, y)
    from numfn.function import ALIASED_KEPT
    assert len(jf.specializations[-1]._aliased_specializations) == ALIASED_KEPT
