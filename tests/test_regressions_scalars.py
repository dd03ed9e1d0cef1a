"""Python scalars in compiled functions, against NumPy 2 and Python on the same inputs (issue 29): NEP 50's weak
promotion of Python scalars (as arguments, closure constants and literals), Python's own arithmetic between Python
scalars, NumPy functions of Python scalars (strong results), a native loop's index (a Python int), a Python float
meeting float16, and Python ints beyond an array's integer type."""
import math
import operator
import warnings

import numpy as np
import pytest

import numfn
from helpers import assert_same, check, check_raises_like, numpy_exception, public_type, rand

DTYPES = (np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64,
          np.complex64, np.bool_)


def forms(body: str, value):
    """`body`, an expression of an array `x` and a Python scalar `S`, as three functions of `x` alone or `x` and the
    scalar: the scalar as an argument (`arg(x, s)`), as a closure constant (`closure(x)`) and as a literal
    (`literal(x)`)."""
    ns = {"np": np, "math": math}
    exec(f"def arg(x, S):\n    return {body}", ns)
    exec(f"def make(S):\n    def closure(x):\n        return {body}\n    return closure", ns)
    exec(f"def literal(x):\n    return {body.replace('S', f'({value!r})')}", ns)
    return ns["arg"], ns["make"](value), ns["literal"]


def check_forms(body: str, x, value, *, backend: str, **kw):
    """`body` (see forms) computed by numfn equals NumPy's (or raises what NumPy raises) in all three forms."""
    arg, closure, literal = forms(body, value)
    for f, args in ((arg, (x, value)), (closure, (x,)), (literal, (x,))):
        e = numpy_exception(f, args)
        if e is not None:
            with pytest.raises(public_type(e), match=_escaped(str(e))):
                numfn.jit(f, backend=backend)(*args)
        else:
            check(f, *args, backend=backend, **kw)


def _escaped(message: str) -> str:
    import re
    return "^" + re.escape(message) + "$"


def sample(dtype, n: int = 25) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b": return np.arange(n) % 3 == 0
    if dt.kind in "fc": return np.linspace(-3, 3, n).astype(dt)
    return (np.arange(n) % 7 + (0 if dt.kind == "u" else -3)).astype(dt)


# ---- item 7: a Python float meeting float16 (or float32) is rounded to that type first --------------------------
F16_BINARY = ("np.fmod(x, S)", "np.fmod(S, x)", "np.arctan2(S, x)", "np.arctan2(x, S)", "np.hypot(x, S)",
              "np.copysign(S, x)", "np.nextafter(x, S)", "np.logaddexp(x, S)", "np.heaviside(x, S)",
              "np.float_power(x, S)", "np.maximum(x, S)", "np.fmax(x, S)", "x + S", "x * S", "x / S", "x - S",
              "x % S", "x // S", "x ** S", "S ** x", "x < S", "x == S", "x >= S", "np.where(x > 0, x, S)",
              "np.clip(x, -S, S)", "np.isclose(x, S)")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("value", [0.1, 1e5, 1e-8])
def test_python_float_is_rounded_to_the_arrays_float_type(dtype, value, backend):
    x = sample(dtype)
    body = "(" + ", ".join(F16_BINARY) + ",)"
    check_forms(body, x, value, backend=backend)


# ---- item 8: Python ints outside the range of the array's integer type ------------------------------------------
@pytest.mark.parametrize("dtype,value", [
    (np.uint64, -1), (np.uint64, 2**64 - 1), (np.uint64, 2**63), (np.uint64, 2**64), (np.uint8, -1),
    (np.uint8, 256), (np.int8, 300), (np.int8, -129), (np.int8, 2**63), (np.int64, 2**63), (np.int64, -2**63 - 1),
    (np.uint32, 2**63), (np.uint32, 2**32), (np.int16, 2**70), (np.float64, 10**30), (np.float32, 2**70),
    (np.float16, 2**70), (np.float64, -10**300), (np.complex64, 2**64), (np.bool_, 300), (np.bool_, 2**63)],
    ids=lambda v: np.dtype(v).name if isinstance(v, type) else str(v) if abs(v) < 2**80 else "huge")
def test_python_int_beyond_the_arrays_type(dtype, value, backend):
    x = sample(dtype, 5)
    check_forms("x + S", x, value, backend=backend)
    check_forms("x * S", x, value, backend=backend)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint64, np.int64, np.uint32])
@pytest.mark.parametrize("value", [1000, -1, -1000, 2**63, 2**64 + 5, -2**63 - 1, 255])
def test_comparisons_with_python_ints_beyond_the_type(dtype, value, backend):
    x = sample(dtype, 7)
    check_forms("(x < S, x <= S, x > S, x >= S, x == S, x != S, S < x, S == x)", x, value, backend=backend)


def test_python_int_argument_limits_name_the_first_type_it_does_not_fit(backend):
    # NumPy raises at the first operation whose type the int does not fit: the message names that type
    f = numfn.jit(lambda a, b, s: (a + s, b + s), backend=backend)
    a, b = np.zeros(2, np.uint8), np.zeros(2, np.int8)
    for s in (-1, 200, 300, 5):
        e = numpy_exception(lambda a, b, s: (a + s, b + s), (a, b, s))
        if e is None:
            assert_same(f(a, b, s), (a + s, b + s))
            continue
        with pytest.raises(OverflowError, match=_escaped(str(e))):
            f(a, b, s)


def test_int_argument_beyond_int64_is_traced_per_value(backend):
    f = numfn.jit(lambda x, s: (x + s, x * 2 + s), backend=backend)
    x = np.arange(4, dtype=np.uint64)
    for s in (2**64 - 1, 2**63, 2**64 - 1):
        assert_same(f(x, s), (x + s, x * 2 + s))
    g = numfn.jit(lambda x, s: x * s, backend=backend)
    y = np.linspace(0, 1, 3)
    for s in (10**30, -10**20):
        assert_same(g(y, s), y * s)
