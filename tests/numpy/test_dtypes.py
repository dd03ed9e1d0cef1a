"""numfn.numpy's scalar types, dtype helpers and constants against NumPy's, outside and inside compiled
functions, and float16 as a storage dtype (conversions, promotion, arithmetic computed in float32)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from helpers import check, check_raises_like, numpy_result

SCALAR_TYPES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp", "uintp",
                "float32", "float64", "double", "single", "byte", "ubyte", "short", "ushort", "intc", "uintc", "int_",
                "uint"]


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_types_outside_jit(name):
    ours, theirs = getattr(fnp, name), getattr(np, name)
    assert np.dtype(ours) == np.dtype(theirs)
    assert np.zeros(2, ours).dtype == np.dtype(theirs)
    assert np.ones(3).astype(ours).dtype == np.dtype(theirs)
    v = ours(1)
    assert type(v) is theirs and v == theirs(1)
    assert isinstance(theirs(3), ours) and issubclass(theirs, ours)
    assert np.dtype(theirs) == ours


def test_constants_and_helpers_outside_jit():
    assert (fnp.pi, fnp.e, fnp.inf, fnp.euler_gamma) == (np.pi, np.e, np.inf, np.euler_gamma)
    assert math.isnan(fnp.nan) and fnp.newaxis is None and fnp.ndarray is np.ndarray and fnp.dtype is np.dtype
    assert isinstance(np.ones(2), fnp.ndarray)
    assert fnp.finfo(fnp.float32).eps == np.finfo(np.float32).eps and fnp.iinfo(fnp.int8).min == -128
    assert fnp.result_type(fnp.float32, 1.0) == np.float32 and fnp.result_type(np.int8, np.uint8) == np.int16
    assert fnp.promote_types(fnp.int32, fnp.float32) == np.float64
    assert fnp.can_cast(fnp.int8, fnp.float32) and not fnp.can_cast(np.float64, np.int32)
    assert fnp.issubdtype(fnp.float32, fnp.floating) and not fnp.issubdtype(fnp.int8, fnp.floating)


def test_scalar_types_inside_jit(backend):
    x = np.linspace(-2, 2, 7).astype(np.float32)
    i = np.arange(-3, 4, dtype=np.int32)

    def f(xp, x, i):
        return (xp.float32(2.0) * x, xp.float64(2.0) * x, xp.float32(x), xp.int8(x * 10), xp.uint8(i), xp.bool_(i),
                x.astype(xp.int8), i.astype(xp.float32), x.astype(xp.float16), xp.int16(3) + i, xp.float32(1) + i,
                xp.uint64(5) + i, x[xp.newaxis, :, xp.newaxis], x * xp.pi, i * xp.e, xp.where(x > 0, xp.inf, x),
                xp.zeros(3, dtype=xp.uint16), xp.full(2, 7, xp.int8), xp.add(i, i, dtype=xp.int64),
                xp.arange(4, dtype=xp.float32))
    check(lambda x, i: f(fnp, x, i), x, i, backend=backend, expected=numpy_result(lambda x, i: f(np, x, i), (x, i)))


def test_dtype_helpers_on_traced_arrays(backend):
    x = np.ones(3, np.float32)
    i = np.ones(3, np.int16)

    def f(xp, x, i):
        ft = xp.result_type(x, 1.0)              # weak Python float: float32
        it = xp.result_type(i, 1)                # weak Python int: int16
        mixed = xp.result_type(x, i, np.int32)
        info = xp.finfo(x.dtype)
        return (x.astype(ft), i.astype(it), x.astype(mixed), x * float(info.eps), i + int(xp.iinfo(i.dtype).max) // 2,
                i.astype(xp.promote_types(i.dtype, np.float16)), xp.full(2, xp.can_cast(x, np.float64)),
                x.astype(np.result_type(x, 1.0)), i.astype(np.result_type(i, np.uint8)))
    check(lambda x, i: f(fnp, x, i), x, i, backend=backend, expected=numpy_result(lambda x, i: f(np, x, i), (x, i)))


def test_can_cast_refuses_python_scalars_as_numpy():
    def f(x):
        return fnp.zeros(1) + fnp.can_cast(1.0, np.float32)
    with pytest.raises(TypeError):
        np.can_cast(1.0, np.float32)
    with pytest.raises(TypeError):
        numfn.jit(f)(np.ones(1))


# ---------------------------------------------------------------------------------------------------------------
# float16

def _all_halves() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def test_float16_conversions_are_exact(backend):
    """Every float16 to float32/float64/int and back, and float32/float64 values rounded to float16 (ties, the
    overflow threshold, denormals), bit for bit as NumPy."""
    h = _all_halves()
    rng = np.random.default_rng(0)
    f32 = np.concatenate([h.astype(np.float32) * np.float32(1 + 2**-11), h.astype(np.float32) * np.float32(1 - 2**-12),
                          (rng.standard_normal(5000) * 10.0 ** rng.integers(-9, 6, 5000)).astype(np.float32),
                          np.array([65519.99, 65520, 65504, 2.0**-25, 2.0**-24, 3 * 2.0**-26, 1e-30], np.float32)])
    f64 = np.concatenate([f32.astype(np.float64) * (1 + 2**-40), h.astype(np.float64) * (1 + 2.0**-11)])
    i = np.array([0, 1, -1, 2049, 65504, 65519, 65520, 70000, -2**31, 2**31 - 1], np.int32)

    def f(h, f32, f64, i):
        return (h.astype(np.float32), h.astype(np.float64), f32.astype(np.float16), f64.astype(np.float16),
                i.astype(np.float16), h[::97].astype(np.int16), h.astype(np.bool_), (h < 1.5))
    with np.errstate(all="ignore"):
        expected = f(h, f32, f64, i)
    got = numfn.jit(f, backend=backend)(h, f32, f64, i)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        if e.dtype.kind == "f":
            same = (g.view(np.uint16 if e.dtype == np.float16 else e.dtype) == e.view(g.view(
                np.uint16 if e.dtype == np.float16 else e.dtype).dtype)) | (np.isnan(g) & np.isnan(e))
            assert same.all(), (g[~same][:5], e[~same][:5])
        else:
            np.testing.assert_array_equal(g, e)


def test_float16_arithmetic_and_promotion(backend):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(50) * 8).astype(np.float16)
    b = (rng.standard_normal(50) * 8).astype(np.float16)
    s = np.float32(1.5)

    def f(xp, a, b):
        return (a + b, a * b, a / b, a - 1, a * 2.5, a + s, a + b.astype(np.float32), a + np.int8(1), a // b, a % b,
                -a, abs(a), xp.maximum(a, b), a < b, a ** 2, xp.sqrt(xp.abs(a)), xp.exp(a / 4), xp.sin(a), xp.tanh(a),
                xp.arctan2(a, b), xp.hypot(a, b), xp.nextafter(a, b), xp.spacing(a), xp.copysign(a, b),
                xp.sum(a), xp.max(a), xp.cumsum(a), xp.mean(a), xp.where(a > 0, a, b),
                xp.sin(np.arange(5, dtype=np.int8)),
                xp.ldexp(a, 3), xp.frexp(a), xp.modf(a), xp.floor(a), xp.rint(a), xp.float16(3.0) * a)
    check(lambda a, b: f(fnp, a, b), a, b, backend=backend, signed_zeros=True,
          expected=numpy_result(lambda a, b: f(np, a, b), (a, b)))


def test_float16_invalid(backend):
    a = np.ones(3, np.float16)
    check_raises_like(lambda a: np.bitwise_and(a, a), a, backend=backend)
    check_raises_like(lambda a: np.gcd(a, a), a, backend=backend)
