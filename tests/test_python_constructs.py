"""Python code written for scalars and Python's own iteration, compiled unchanged: `math` functions of traced values
(with math's errors), the builtins any/all, ndarray.item(), `for ... in enumerate(...)`/`zip(...)` over arrays as
native loops (the compile does not grow with their length), `for`/`while` loops with an `else:` clause, and loops
left to Python (a return inside) whose branches break. Each against plain Python and NumPy on the same inputs."""
import math

import numpy as np
import pytest

import numfn


def _outcome(fn, *args):
    """fn's result, or the type and message of what it raises."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args)
    except (ValueError, OverflowError, TypeError, ZeroDivisionError) as e:
        return type(e), str(e)


def _same(got, want):
    if isinstance(want, int) and not isinstance(want, bool) and not -2 ** 63 <= want < 2 ** 63:
        # a Python int beyond 64 bits (math.floor(1e300)): numfn's Python ints have 64, so it raises rather than wrap
        assert got[0] is OverflowError and "64-bit" in got[1], got
        return
    if isinstance(want, tuple) and want and isinstance(want[0], type):   # an error
        assert got == want
        return
    assert not isinstance(got, tuple), (got, want)
    value = np.asarray(got).item()
    assert type(value) is type(want), (got, want)
    if isinstance(want, float) and math.isnan(want): assert math.isnan(value)
    elif isinstance(want, bool): assert value is want
    else: assert value == pytest.approx(want, rel=4e-16, abs=1e-300), (got, want)


# ---- math --------------------------------------------------------------------------------------------------------
UNARY = ["sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "degrees", "radians", "floor", "ceil", "trunc", "isnan",
         "isinf", "isfinite"]
VALUES = [0.5, -0.5, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 710.0, -745.5, 1e300, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("name", UNARY)
def test_math_functions_of_traced_values(name):
    fn = getattr(math, name)

    def f(x):
        return fn(x[0] * 1.0)   # a NumPy float64 scalar: math takes it as a float

    jitted = numfn.jit(f)
    for v in VALUES:
        x = np.array([v])
        _same(_outcome(jitted, x), _outcome(f, x))


@pytest.mark.parametrize("name", ["atan2", "hypot", "copysign", "fmod", "pow", "log"])
def test_math_functions_of_two_traced_values(name):
    fn = getattr(math, name)

    def f(x):
        return fn(x[0], x[1])

    jitted = numfn.jit(f)
    for a in [0.5, -2.0, 0.0, 3.0, np.inf, np.nan]:
        for b in [2.0, -0.5, 0.0, 1.0, 3.0, -np.inf]:
            x = np.array([a, b])
            _same(_outcome(jitted, x), _outcome(f, x))


def test_math_in_a_scalar_loop_and_on_integers():
    def f(x, n):
        s = 0.0
        for i in range(x.shape[0]):
            s += math.exp(-x[i]) * math.sqrt(i) + math.floor(x[i] * 3)
        return s + math.log(n + 1) + math.pi

    x = np.linspace(0, 2, 50)
    got = numfn.jit(f)(x, 4)
    assert got == pytest.approx(f(x, 4), rel=1e-14)


def _floor_of_first(x):
    return math.floor(x[0])


def test_math_floor_gives_a_python_int():
    got = numfn.jit(_floor_of_first)(np.array([2.7, 0.0]))
    assert np.asarray(got).dtype == np.int64 and got == 2
    with pytest.raises(ValueError, match="NaN"):
        numfn.jit(_floor_of_first)(np.array([np.nan, 0.0]))


def _isclose_count(x):
    c = 0
    for v in x:
        if math.isclose(v, 0.5, abs_tol=0.25): c += 1
        if math.isclose(v, 1.0, rel_tol=1e-3): c += 10
    return c


def test_math_isclose():
    x = np.array([0.5, 0.3, 0.2, 1.0005, 1.0, np.inf, np.nan, -0.5])
    assert numfn.jit(_isclose_count)(x) == _isclose_count(x)
    with pytest.raises(ValueError, match="non-negative"):
        numfn.jit(_isclose_bad)(x)


def _isclose_bad(x):
    return math.isclose(x[0], 1.0, rel_tol=-1.0)


def _sorted_sum(x):
    s = 0.0
    for k, v in enumerate(sorted(x, reverse=True)):
        s = s * 0.5 + v * (k + 1)
    return s, np.array(sorted(x))


def test_builtin_sorted_of_a_traced_array():
    x = np.array([3.0, -1.0, 2.5, 0.0, 7.0])
    got, want = numfn.jit(_sorted_sum)(x), _sorted_sum(x)
    assert got[0] == pytest.approx(want[0], rel=1e-14)
    np.testing.assert_array_equal(got[1], want[1])


# ---- any, all, item ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: np.array([0.0, 2.0, 0.0]), lambda: np.zeros(3), lambda: np.ones(4),
                                  lambda: np.ones((3, 1)), lambda: np.zeros((0, 5)), lambda: np.array([np.nan]),
                                  lambda: np.ones((2, 2)), lambda: np.array(1.0)],
                         ids=["mixed", "zeros", "ones", "column", "no-rows", "nan", "ambiguous", "0-d"])
def test_builtin_any_and_all(make):
    def f(x):
        return any(x), all(x), any([x.sum() > 1, False]), all((x.size > 0, x.sum() >= 0))

    x = make()
    want, got = _outcome(f, x), _outcome(numfn.jit(f), x)
    if isinstance(want, tuple) and isinstance(want[0], type): assert got[0] is want[0]
    else: assert [bool(g) for g in got] == [bool(w) for w in want]


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.bool_, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_item(dtype):
    def f(x):
        return x[1:2].item(), x.item(2), x.reshape(2, 2).item(1, 0), x.reshape(2, 2).item((0, 1)) * 2

    x = np.array([1, 2, 0, 5]).astype(dtype)
    got, want = numfn.jit(f)(x), f(x)
    for g, w in zip(got, want):
        assert np.asarray(g).item() == w and np.asarray(g).dtype == np.asarray(w).dtype
    with pytest.raises(ValueError, match="size 1"):
        numfn.jit(lambda x: x.item())(x)


# ---- loops over enumerate and zip ----------------------------------------------------------------------------------
def _enumerated(x):
    s = 0.0
    for i, v in enumerate(x, start=1):
        s = s * 0.5 + v * i
    return s


def _zipped(x, y):
    s = 0.0
    for a, b in zip(x, y[::-1]):
        if a * b > 5.0: break
        s = s + a * b
    return s


def _rows_of_pairs(p):
    out = 0.0
    for a, b in p:   # a tuple target over the rows of an (n, 2) array
        out = out + a * b
    return out


@pytest.mark.parametrize("n", [1, 7, 2000])
def test_enumerate_and_zip_loops_are_native(n):
    x, y = np.linspace(0.0, 1.0, n), np.linspace(-1.0, 3.0, n + 3)
    assert numfn.jit(_enumerated)(x) == pytest.approx(_enumerated(x), rel=1e-13)
    assert numfn.jit(_zipped)(x, y) == pytest.approx(_zipped(x, y), rel=1e-13)
    p = np.stack([x, x * 2], axis=1)
    assert numfn.jit(_rows_of_pairs)(p) == pytest.approx(_rows_of_pairs(p), rel=1e-13)


def test_enumerate_loop_compiles_the_same_program_at_every_length():
    # the loop is native: its program does not grow with the array (it once unrolled, one step per element)
    short, long = (numfn.jit(_zipped).specialize(np.ones(n), np.ones(n)) for n in (50, 5000))
    assert len(short.schedule) == len(long.schedule)
    assert len(numfn.jit(_enumerated).specialize(np.ones(50)).schedule) == \
        len(numfn.jit(_enumerated).specialize(np.ones(5000)).schedule)


def test_enumerate_and_zip_of_python_values_stay_python():
    def f(x):
        for i, w in enumerate([2.0, 3.0]):
            x = x * w + i
        for a, _letter in zip(range(3), "abc"):
            x = x + a
        return x

    np.testing.assert_array_equal(numfn.jit(f)(np.ones(2)), f(np.ones(2)))


# ---- else clauses and loops left to Python --------------------------------------------------------------------------
def _for_else(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        if s > 2.0: break
    else:
        s = -1.0
    return s


def _while_else(x):
    k = 0
    while k < 20:
        if x.sum() > 50.0: break
        x = x * 2.0
        k += 1
    else:
        x = -x
    return x, k


def _nested_else(x):
    count = 0
    for i in range(3):
        for j in range(4):
            if x[i] * j > 1.0: break
        else:
            count += 1
    return count


def _python_loop_with_breaks(x):
    for i in range(6):
        if i == 4: break
        if i == 1: continue
        x = x + i
        if i == 5: return x * 0.0
    return x


@pytest.mark.parametrize("fn", [_for_else, _while_else, _nested_else, _python_loop_with_breaks],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_else_clauses_and_breaks(fn, scale):
    x = np.linspace(0.0, 1.0, 5) * scale
    want, got = fn(x.copy()), numfn.jit(fn)(x.copy())
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        np.testing.assert_allclose(g, w, rtol=1e-14)


def test_a_loop_left_to_python_says_why_a_traced_branch_in_it_cannot_compile():
    def f(x):
        for i in range(5):
            with np.errstate(all="ignore"):
                if x[i] > 0.5: return x[i]
        return x[0]

    with pytest.raises(numfn.TracerConversionError, match="return inside a with or try block runs as Python"):
        numfn.jit(f)(np.linspace(0, 1, 5))


class _Scaler:
    def __init__(self, s):
        self.s = s

    def __hash__(self):
        return hash(self.s)

    def __eq__(self, other):
        return isinstance(other, _Scaler) and other.s == self.s

    @numfn.jit(static_argnames=("self",))
    def scale(self, x):
        return x * self.s

    @numfn.jit
    def twice(self, x):
        return x * 2.0


def test_a_jitted_method_is_called_with_its_object():
    """@numfn.jit in a class body makes a method (JitFunction.__get__): obj.f(x) passes obj first. An object that
    is no array is a static argument (its attributes constants), or the error says how to make it one."""
    x = np.arange(4.0)
    np.testing.assert_array_equal(_Scaler(3.0).scale(x), x * 3.0)
    np.testing.assert_array_equal(_Scaler(2.0).scale(x), x * 2.0)
    np.testing.assert_array_equal(_Scaler.scale(_Scaler(5.0), x), x * 5.0)
    with pytest.raises(TypeError, match=r"argument 'self' of type _Scaler .*static_argnames=\('self',\)"):
        _Scaler(1.0).twice(x)
