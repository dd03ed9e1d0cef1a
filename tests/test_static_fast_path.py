"""Calls with static arguments take a fast path (numfn.function.BoundStatics): a dispatcher per set of static
values over the other positional arguments, so a call does not compute the signature again (about 2 us instead of
50). Every call is checked against NumPy; static values never cross (2, 2.0, True, 0.0 and -0.0 each select their
own program), and what the slow path raises is raised the same."""
import numpy as np
import pytest

import numfn
import numfn.function
from numfn.function import MAX_BOUND_STATICS


def scaled(x, n):
    return x * n


def middle(a, k, b):
    return a[:k].sum() + b * k


def picked(x, i):
    return x[i] * 2.0


@pytest.fixture
def signature_calls(monkeypatch):
    calls = []
    real = numfn.function.signature

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(numfn.function, "signature", counting)
    return calls


def test_repeated_static_calls_skip_the_signature(signature_calls, backend):
    f = numfn.jit(scaled, static_argnums=(1,), backend=backend)
    x = np.arange(5.0)
    for n in (2, 3, 2, 3, 2):
        np.testing.assert_array_equal(f(x, n), x * n)
    assert len(signature_calls) == 2, signature_calls   # one per static value; the other calls took the fast path
    y = np.arange(7.0)   # a new shape for a known static value: compiled (a miss), then fast
    for _ in range(3): np.testing.assert_array_equal(f(y, 3), y * 3)
    assert len(signature_calls) == 3
    assert len(f.specializations) == 3


@pytest.mark.parametrize("values", [(2, 2.0, True), (0.0, -0.0), (1, np.int64(1)), ((1, 2), (1, 2.0))],
                         ids=["int-float-bool", "signed-zeros", "int-numpy-int", "tuples"])
def test_static_values_never_cross(values):
    f = numfn.jit(lambda x, n: x * (n[0] if isinstance(n, tuple) else n) + 0.0 * len(str(n)), static_argnums=(1,))
    x = np.arange(1.0, 4.0)
    for _ in range(2):
        for v in values:
            got = f(x, v)
            want = x * (v[0] if isinstance(v, tuple) else v) + 0.0 * len(str(v))
            assert got.dtype == want.dtype, (v, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want)
    assert len(f.specializations) == len(values)


def test_static_argument_in_the_middle_and_out(backend):
    f = numfn.jit(middle, static_argnums=(1,), backend=backend)
    a, b = np.arange(6.0), np.array([0.5, 1.5])
    for k in (2, 4, 2, 4):
        np.testing.assert_array_equal(f(a, k, b), middle(a, k, b))
        out = np.empty(2)
        assert f(a, k, b, out=out) is out
        np.testing.assert_array_equal(out, middle(a, k, b))


def test_checks_raise_on_the_fast_path():
    f = numfn.jit(picked, static_argnums=(1,))
    x = np.arange(4.0)
    assert f(x, 3) == 6.0 and f(x, 3) == 6.0
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        for _ in range(2): f(x, 4)
    with pytest.raises(IndexError):
        f(np.arange(2.0), 3)


def test_keywords_and_unhashable_statics_take_the_slow_path():
    f = numfn.jit(scaled, static_argnums=(1,))
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, n=4), x * 4)
    np.testing.assert_array_equal(f(x=x, n=4), x * 4)
    np.testing.assert_array_equal(f(x, 4), x * 4)
    with pytest.raises(TypeError, match="must be hashable"):
        f(x, [1, 2])
    with pytest.raises(TypeError):   # a missing argument: Python's error, as without static arguments
        f(x)


def test_many_static_values_stay_right():
    f = numfn.jit(scaled, static_argnums=(1,))
    x = np.arange(3)
    for n in list(range(MAX_BOUND_STATICS + 5)) + [0, 1, MAX_BOUND_STATICS + 4]:
        np.testing.assert_array_equal(f(x, n), x * n)
    assert len(f._bound_statics) <= MAX_BOUND_STATICS


# ---- containers among the arguments (numfn.fast_paths.BoundTree): a dispatcher per argument structure -----------
def affine(params, x):
    return x @ params[0] + params[1]


def from_dict(p, x, s):
    return p["w"] * x + p["b"][0] * s + len(p)


def nested(t, x):
    (a, (b, c)), d = t
    return a + b * c - d["k"] + x


def _tree_cases():
    rng = np.random.default_rng(3)
    w, b, x = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((2, 4))
    v = rng.standard_normal(5)
    return [
        (affine, ((w, b), x)),
        (affine, ([w, b], x)),
        (from_dict, ({"w": v, "b": [v, v]}, v, 2.5)),
        (from_dict, ({"b": [v, v], "w": v}, v, 2.5)),   # another insertion order: another structure, same answer
        (nested, (((v, (v, 2.0)), {"k": v}), v)),
    ]


@pytest.mark.parametrize("k", range(5))
def test_container_arguments_take_the_fast_path(signature_calls, backend, k):
    fn, args = _tree_cases()[k]
    f = numfn.jit(fn, backend=backend)
    for _ in range(4):
        np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-14)
    assert len(signature_calls) == 1, signature_calls   # computed once: the later calls were the fast path's


def test_container_structures_and_leaves_never_cross(signature_calls):
    f = numfn.jit(affine)
    w, b = np.ones((4, 3)), np.arange(3.0)
    x = np.ones((2, 4))
    calls = [((w, b), x), ([w, b], x), ((w, b.astype(np.float32)), x), ((w, 2.0), x), ((w, 2), x),
             ((w, np.float64(2.0)), x), ((w, [1.0, 2.0, 3.0]), x), ((w.T.copy().T, b), x[:, ::-1])]
    for rounds in (1, 2):
        for args in calls:
            got, want = f(*args), affine(*args)
            assert got.dtype == want.dtype, args
            np.testing.assert_array_equal(got, want)
        # the strided call reuses the first's program; a NumPy scalar or a list leaf takes the slow path at every
        # call, as it does passed alone (f(w, np.float64(2.0)))
        assert len(signature_calls) == (len(calls) - 1) + 2 * (rounds - 1)


def test_container_calls_with_out_and_errors():
    f = numfn.jit(affine)
    w, b, x = np.ones((4, 3)), np.arange(3.0), np.ones((2, 4))
    out = np.empty((2, 3))
    f((w, b), x)
    assert f((w, b), x, out=out) is out
    np.testing.assert_array_equal(out, affine((w, b), x))
    with pytest.raises(ValueError):
        f((w, b), np.ones((2, 5)))   # NumPy's matmul error, through the slow path
    with pytest.raises(TypeError, match="params"):
        f((w, object()), x)           # a leaf that is no array, named by its place


def test_namedtuple_and_dataclass_arguments_take_the_fast_path(signature_calls):
    from typing import NamedTuple
    from dataclasses import dataclass

    class Layer(NamedTuple):
        w: np.ndarray
        b: np.ndarray

    @dataclass(frozen=True)
    class Frozen:
        w: np.ndarray
        b: np.ndarray

    def apply(p, x):
        return x * p.w + p.b

    f = numfn.jit(apply)
    w, b, x = np.ones(3), np.arange(3.0), np.full(3, 2.0)
    for p in [Layer(w, b), Frozen(w, b), Layer(w, b * 2), Frozen(w * 3, b)] * 2:
        np.testing.assert_array_equal(f(p, x), apply(p, x))
    assert len(signature_calls) == 2   # one per class; the other calls were the fast path's


def fib_table(n):
    f = np.zeros(n, dtype=np.int64)
    f[1] = 1
    for i in range(2, n):
        f[i] = f[i - 1] + f[i - 2]
    return f


def sized(x, n, m):
    return np.zeros((n, m)) + x.sum(), np.arange(n) * m


def test_python_ints_that_size_arrays_become_static(signature_calls, backend):
    """np.zeros(n) of a Python int argument is sized by its value: after the first call, the positions of such
    ints are static arguments (one program per value, as before), so later calls take the fast path instead of
    computing the value by a program of its own first. An array or NumPy int in their place still works."""
    f = numfn.jit(fib_table, backend=backend)
    for n in (10, 12, 10, 12, 10):
        np.testing.assert_array_equal(f(n), fib_table(n))
    assert len(signature_calls) == 3, signature_calls   # the first call twice (learning, then static), 12 once
    for n in (np.int64(10), np.array(12)):   # not Python ints: sized by value, as before
        np.testing.assert_array_equal(f(n), fib_table(int(n)))
    g = numfn.jit(sized, backend=backend)
    x = np.arange(3.0)
    for n, m in ((2, 3), (2, 3), (1, 4), (2, 3)):
        for got, want in zip(g(x, n, m), sized(x, n, m)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(g(x, m=3, n=2)[0], sized(x, 2, 3)[0])   # by keyword
    with pytest.raises(ValueError, match="negative dimensions"):
        g(x, -1, 2)
