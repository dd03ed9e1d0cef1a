"""np.vectorize, np.apply_along_axis and np.piecewise on traced arrays against NumPy (numfn.numpy.functional), and
np.frompyfunc's refusal: Python functions with `if`, `while`, helpers, closures over traced values and checks,
across shapes (0-d, size 0 and 1, broadcasting, non-contiguous and reversed views) and dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from tests.helpers import check, check_raises_like, check_xp, rand

RNG = np.random.default_rng(28)


# ---- per-element functions -----------------------------------------------------------------------------------------
def clip_double(v):
    if v > 1:
        return 1.0
    return v * 2


def sign_word(v):   # if/elif/else, Python ints out
    if v > 0.5:
        return 1
    elif v < -0.5:
        return -1
    else:
        return 0


def halvings(v):   # a while loop whose trip count is the element's own
    n = 0
    v = abs(v) * 10
    while v > 1:
        v = v / 2
        n += 1
    return n


def helper_scale(v):
    if v < 0:
        return -v
    return v


def calls_helper(v):   # a helper of the user's, converted too
    return helper_scale(v) + 0.5


def min_max(a, b):   # two outputs
    if a < b:
        return a, b
    return b, a


PER_ELEMENT = [clip_double, sign_word, halvings, calls_helper, lambda v: v * np.float32(2), lambda v: v > 0,
               lambda v: 3.0]


@pytest.mark.parametrize("fn", PER_ELEMENT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_vectorize_functions(fn, dtype):
    x = rand((3, 4), dtype, RNG)
    check(lambda a: np.vectorize(fn)(a), x, backend="llvm")


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3, 2)])
def test_vectorize_shapes(shape, backend):
    x = rand(shape, np.float64, RNG)
    check(lambda a: np.vectorize(clip_double)(a), x, backend=backend)


def test_vectorize_views_and_broadcasting(backend):
    x = rand((4, 6), np.float64, RNG)
    y = rand((6,), np.float64, RNG)
    check(lambda a, b: (np.vectorize(min_max)(a[::-1, ::2], b[::2]), np.vectorize(clip_double)(a.T),
                        np.vectorize(lambda p, q: p * q + 1)(a[:, :1], b)), x, y, backend=backend)


def test_vectorize_bool_and_python_scalar_arguments():
    def choose(p, q):
        if p:
            return q
        return -q

    def both(p, q):
        return p & (q > 0)

    x = rand((5,), np.bool_, RNG)
    check(lambda a: (np.vectorize(choose)(a, 2.5), np.vectorize(both)(a, 1), np.vectorize(both)(a[::-1], a),
                     np.vectorize(clip_double)(0.75)), x, backend="llvm")


def test_vectorize_otypes_excluded_keywords():
    x = rand((3, 4), np.float64, RNG)
    check(lambda a: (np.vectorize(clip_double, otypes=[np.float32])(a), np.vectorize(sign_word, otypes="d")(a),
                     np.vectorize(lambda v, k: v * k, excluded={1})(a, 3),
                     np.vectorize(lambda v, scale=1.0: v * scale, excluded={"scale"})(a, scale=2.0),
                     np.vectorize(lambda v, offset=0.0: v + offset)(a, offset=a[0]),
                     np.vectorize(min_max, otypes=[np.float64, np.float64])(a, 0.0)), x, backend="llvm")


def test_vectorize_size_zero():
    x = np.zeros((0, 3))
    check(lambda a: np.vectorize(clip_double, otypes=[np.float64])(a), x, backend="llvm")
    check_raises_like(lambda a: np.vectorize(clip_double)(a), x, backend="llvm", match="size 0 inputs")


def test_vectorize_closure_over_traced_values(backend):
    x = rand((7,), np.float64, RNG)

    def f(a):
        threshold = a.mean()

        def above(v):
            if v > threshold:
                return v - threshold
            return 0.0
        return np.vectorize(above)(a)
    check(f, x, backend=backend)


def test_vectorize_decorated_and_numfn_namespace():
    @np.vectorize
    def g(v):
        if v > 0:
            return v
        return -2 * v
    x = rand((2, 3), np.float64, RNG)
    check(lambda a: g(a), x, backend="llvm")
    check_xp(lambda xp: lambda a: xp.vectorize(halvings)(a), x, backend="llvm")


def test_vectorize_checks_hold_per_element(backend):
    def lookup(i, table):
        if i < 3:
            return table[i]   # only elements that take this branch are checked
        return -1.0

    def f(a, table):
        return np.vectorize(lookup, excluded={1})(a, table)

    i, table = np.array([0, 5, 2, 7, 1]), np.array([10.0, 20.0, 30.0])
    check(f, i, table, backend=backend)
    check_raises_like(lambda a, t: np.vectorize(lambda k: t[k])(a), i, table, backend=backend)


def test_vectorize_with_signature():
    x = rand((4, 3), np.float64, RNG)
    y = rand((3,), np.float64, RNG)
    check(lambda a, b: (np.vectorize(lambda r: r.max() - r.min(), signature="(n)->()")(a),
                        np.vectorize(lambda r, s: r @ s, signature="(n),(n)->()")(a, b),
                        np.vectorize(lambda v: np.array([v, v * 2]), signature="()->(k)")(b),
                        np.vectorize(lambda r: (r.sum(), r[::-1]), signature="(n)->(),(n)")(a)), x, y,
          backend="llvm")


def test_vectorize_errors():
    x = rand((3,), np.float64, RNG)
    check_raises_like(lambda a: np.vectorize(lambda v: np.array([v, v]))(a), x, backend="llvm",
                      match="setting an array element with a sequence")
    check_raises_like(lambda a: np.vectorize(lambda r: r.sum(), signature="(n)->()")(a[0]), x, backend="llvm",
                      match="does not have enough dimensions")


def test_a_conditional_expression_is_refused_naming_the_rewrite():
    with pytest.raises(numfn.TracerConversionError, match=r"as a Python bool.*numpy.vectorize traces the function "
                       r"once.*statements of a def") as info:
        numfn.jit(lambda a: np.vectorize(lambda v: 1.0 if v > 0 else 0.0)(a))(np.ones(3))
    assert "test_vectorize.py" in str(info.value)
    # math's functions of a traced value are traced (numfn.trace.pymath), with math's errors
    import math
    f = numfn.jit(lambda a: np.vectorize(math.sqrt)(a))
    np.testing.assert_array_equal(f(np.array([1.0, 4.0, 2.0])), np.vectorize(math.sqrt)(np.array([1.0, 4.0, 2.0])))
    with pytest.raises(ValueError, match="math domain error"):
        f(np.array([1.0, -4.0]))


def test_frompyfunc_is_refused_naming_vectorize():
    u = np.frompyfunc(clip_double, 1, 1)
    with pytest.raises(numfn.NumfnError, match=r"numpy\.frompyfunc is not supported.*np\.vectorize\(f, otypes"):
        numfn.jit(lambda a: u(a))(np.ones(3))

    def f(a):
        return u(a)
    with pytest.raises(numfn.NumfnError, match=r"numpy\.frompyfunc is not supported.*np\.vectorize\(f, otypes"):
        numfn.jit(f)(np.ones(3))
    assert u(np.ones(2)).dtype == object   # outside a trace: NumPy's


# ---- apply_along_axis ----------------------------------------------------------------------------------------------
FUNC1D = [lambda v: v.sum(), lambda v: v[::-1] * 2, lambda v: v[:2], lambda v: 1.0, lambda v: (v.min(), v.max()),
          lambda v: np.outer(v, v), lambda v: np.sort(v), lambda v: v.mean() > 0]


@pytest.mark.parametrize("k", range(len(FUNC1D)))
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_apply_along_axis(k, axis):
    x = rand((3, 4), np.float64, RNG)
    check(lambda a: np.apply_along_axis(FUNC1D[k], axis, a), x, backend="llvm")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_apply_along_axis_dtypes(dtype, backend):
    x = rand((2, 3, 4), dtype, RNG)
    check(lambda a: (np.apply_along_axis(lambda v: v.sum(), 1, a), np.apply_along_axis(np.cumsum, 2, a[:, ::-1])),
          x, backend=backend)


def test_apply_along_axis_arguments_views_and_branches():
    x = rand((4, 5), np.float64, RNG)

    def norm_or_zero(v, scale, shift=0.0):
        total = (v * v).sum()
        if total > 4:
            return v * scale / total + shift
        return v * 0

    check(lambda a: (np.apply_along_axis(norm_or_zero, 1, a, 2.0, shift=a[0, 0]),
                     np.apply_along_axis(norm_or_zero, 0, a.T[::-1], 3.0), np.apply_along_axis(np.sum, 0, a[0]),
                     np.apply_along_axis(lambda v: v.sum(), 1, a[:, :0])), x, backend="llvm")


def test_apply_along_axis_errors():
    x = rand((3, 4), np.float64, RNG)
    check_raises_like(lambda a: np.apply_along_axis(np.sum, 2, a), x, backend="llvm")
    check_raises_like(lambda a: np.apply_along_axis(np.sum, 1, a[:0]), x, backend="llvm",
                      match="iteration dimensions are 0")
    check_raises_like(lambda a: np.apply_along_axis(np.sum, 0, a[0, 0]), x, backend="llvm")


# ---- piecewise -----------------------------------------------------------------------------------------------------
def test_piecewise(backend):
    x = rand((9,), np.float64, RNG)
    check(lambda a: (np.piecewise(a, [a < 0, a > 1], [lambda v: -v, lambda v: v ** 2, 7.0]),
                     np.piecewise(a, [a < 0, a >= 0], [lambda v: v - v.mean(), lambda v: v.sum()]),
                     np.piecewise(a, a > 0, [lambda v: v * 2]),
                     np.piecewise(a, [a < 1, a < 0], [1.0, 2.0]),   # a later condition wins
                     np.piecewise(a[::-1], [a > 0], [lambda v, k, s=1.0: v * k + s, 0.5], 3, s=a[0])), x,
          backend=backend)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_])
@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 4)])
def test_piecewise_shapes_dtypes(dtype, shape):
    x = rand(shape, dtype, RNG)
    check(lambda a: (np.piecewise(a, [a > 0], [lambda v: v * 1.5, lambda v: v]),
                     np.piecewise(a, [a > 0, a <= 0], [0, 1])), x, backend="llvm")


def test_piecewise_conditions_of_other_arrays_and_python_bools():
    x = rand((2, 3), np.float64, RNG)
    m = rand((2, 3), np.bool_, RNG)
    check(lambda a, b: (np.piecewise(a, [b, ~b], [np.sin, np.cos]), np.piecewise(a, True, [lambda v: v + 1]),
                        np.piecewise(a[0], [[True, False, True], [False, False, True]], [lambda v: -v, 2.0]),
                        np.piecewise(a[1], b[1], [lambda v: -v]),                  # one condition, an array
                        np.piecewise(a, [b.astype(np.int8)], [lambda v: -v]),  # conditions are cast to bool
                        np.piecewise(a[0, 0], a[0, 0] > 0, [lambda v: v + 1, 5.0])),   # a NumPy bool
          x, m, backend="llvm")


def test_piecewise_errors():
    x = rand((4,), np.float64, RNG)
    check_raises_like(lambda a: np.piecewise(a, [a > 0], [1, 2, 3]), x, backend="llvm",
                      match="either 1 or 2 functions")
    check_raises_like(lambda a: np.piecewise(a[0], np.asarray(a[0] > 0), [1]), x, backend="llvm",
                      match="0-dimensional")


def test_numfn_namespace():
    assert fnp.piecewise is not np.piecewise and fnp.apply_along_axis is not np.apply_along_axis
    x = rand((3, 4), np.float64, RNG)
    check_xp(lambda xp: lambda a: (xp.piecewise(a, [a > 0], [np.exp]), xp.apply_along_axis(np.diff, 1, a)), x,
             backend="llvm")


def test_refused_side_effects():
    seen = []
    out = np.zeros(3)

    def appends(v):
        seen.append(v)   # NumPy appends once per element; a trace would append one traced value
        return v

    def f(a):
        return np.vectorize(appends)(a)
    with pytest.raises(numfn.NumfnError, match=r"numpy.vectorize.*changes 'seen', a Python list"):
        numfn.jit(f)(np.ones(3))
    assert seen == []

    def writes_outside(a):
        acc = np.zeros(3)

        def g(v):
            acc[0] = v
            return v
        return np.vectorize(g)(a), acc
    with pytest.raises(numfn.NumfnError, match="numpy.vectorize of a function that writes into an array from outside"):
        numfn.jit(writes_outside)(np.ones(3))

    def writes_argument(a):
        def g(v):
            v[0] = 1.0
            return v.sum()
        return np.apply_along_axis(g, 0, a)
    with pytest.raises(numfn.NumfnError, match="apply_along_axis of a function that writes into its argument"):
        numfn.jit(writes_argument)(np.ones((3, 2)))
    assert out.sum() == 0


def test_outside_a_trace_numfn_numpy_runs_numpys():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(fnp.vectorize(clip_double)(x), np.vectorize(clip_double)(x))
    np.testing.assert_array_equal(fnp.apply_along_axis(np.sum, 1, x), np.apply_along_axis(np.sum, 1, x))


def test_inside_loops_and_vmap():
    x = rand((4, 5), np.float64, RNG)

    def f(a):
        out = np.zeros_like(a)
        for i in range(a.shape[0]):   # a native loop (more than 4 iterations unroll no more)
            out[i] = np.vectorize(clip_double)(a[i] * i)
        return out
    check(f, np.concatenate([x, x]), backend="llvm")
    rows = numfn.jit(numfn.vmap(lambda r: np.apply_along_axis(np.cumsum, 0, r) + np.vectorize(sign_word)(r)))(x)
    np.testing.assert_array_equal(rows, np.stack([np.cumsum(r) + np.vectorize(sign_word)(r) for r in x]))


@pytest.mark.parametrize("dtype", [np.complex128, np.uint8, np.int64, np.float16])
def test_vectorize_more_dtypes(dtype):
    def f(v):
        if v != 0:
            return v * 2 + 1
        return v

    x = rand((2, 5), dtype, RNG)
    if np.dtype(dtype).kind == "c": x = x + 1j * rand((2, 5), np.float64, RNG)
    check(lambda a: (np.vectorize(f)(a), np.vectorize(f, otypes=[np.complex64])(a)), x, backend="llvm")


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, v):
        if v > 0:
            return v * self.k
        return v

    def __call__(self, v):
        return self.scale(v) - 1


def test_methods_and_callable_objects(backend):
    s = Scaler(3.0)
    x = rand((2, 4), np.float64, RNG)

    def f(a):
        return np.vectorize(s.scale)(a), np.vectorize(s)(a), np.apply_along_axis(lambda r: s(r.sum()), 1, a)
    check(f, x, backend=backend)
