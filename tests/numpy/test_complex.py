"""Complex numbers against NumPy (issue 16, item 1): complex64 and complex128 arrays, Python complex scalars (weak,
NEP 50), arithmetic, comparisons, the math functions, parts and views, reductions, products, casts, arguments and
results of jitted functions.

Elementwise results must be within 4 ulp of NumPy's in each part (NumPy's complex functions are glibc's), with the
same NaN and infinite parts and the same signs of zeros: every table runs over a grid of special parts (signed
zeros, infinities, NaN, the tiniest and largest numbers, ordinary values) crossed with each other, and over random
values of several magnitudes. Each table is one specialization per dtype; the C backend runs a representative
subset.
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numfn
import numfn.numpy as fnp
from helpers import check, check_mutates, check_raises_like, check_xp, numpy_result, run_jit

rng = np.random.default_rng(1616)
CDTYPES = (np.complex64, np.complex128)


def ids(d) -> str:
    return np.dtype(d).name


def special_parts(real_dtype) -> np.ndarray:
    f = np.finfo(real_dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, float(f.tiny), -float(f.max), float(f.max) / 4,
                     np.inf, -np.inf, np.nan], dtype=real_dtype)


def special_grid(dtype) -> np.ndarray:
    """Every special part as real part with every special part as imaginary part (196 values)."""
    parts = special_parts(np.dtype(dtype).char.lower() == "f" and np.float32 or np.float64)
    re, im = np.meshgrid(parts, parts)
    z = np.empty(re.size, dtype)
    z.real, z.imag = re.ravel(), im.ravel()
    return z


def random_values(dtype, n: int = 400, rng=rng) -> np.ndarray:
    """Random values: uniform in [-4, 4]^2 and log-uniform magnitudes from 1e-20 to 1e20 in all directions."""
    real = np.dtype(dtype).type(0).real.dtype
    mag = 10.0 ** rng.uniform(-20, 20, n // 2)
    phase = rng.uniform(-np.pi, np.pi, n // 2)
    a = rng.uniform(-4, 4, (n - n // 2, 2))
    z = np.concatenate([mag * np.exp(1j * phase), a[:, 0] + 1j * a[:, 1]])
    return z.astype(dtype) if real == np.float64 else z.astype(np.complex64)


def cdtype_parts(dtype):
    return np.float32 if np.dtype(dtype) == np.complex64 else np.float64


def assert_ulp(got, want, ulps: float = 4.0, path: str = "result", normwise: bool = False) -> None:
    """Same dtype and shape; for floats and each part of complex values: NaN where NumPy has NaN, the same
    infinities, signs (zeros included) and values within `ulps` units in the last place of NumPy's; bools and
    integers exactly. `normwise`: a part may also be off by `ulps` units of the complex value's magnitude (for
    NumPy's formulas that cancel in one part: the other side's last bit decides the small part's digits)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{path}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{path}: shape {got.shape}, NumPy gives {want.shape}"
    if want.dtype.kind == "c":
        size = normwise if isinstance(normwise, np.ndarray) else np.abs(want) if normwise else None
        assert_ulp(got.real, want.real, ulps, f"{path}.real", size)
        assert_ulp(got.imag, want.imag, ulps, f"{path}.imag", size)
        return
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=path, strict=True)
        return
    g, w = got.ravel(), want.ravel()
    nan = np.isnan(w)
    ok = np.isnan(g) == nan
    with np.errstate(all="ignore"):
        unit = np.spacing(np.abs(w))
        signed = np.ones(w.shape, bool)
        if isinstance(normwise, np.ndarray):
            noise = normwise.astype(np.float64).ravel() * np.finfo(w.dtype).eps
            unit = np.fmax(unit, noise)
            signed = ~(np.abs(w) <= ulps * noise)   # a part within the noise has no sign of its own
        close = (g == w) | (np.abs(g - w) <= ulps * unit)
    ok &= nan | (close & ((np.signbit(g) == np.signbit(w)) | ~signed))
    bad = np.nonzero(~ok)[0]
    assert bad.size == 0, f"{path}: {bad.size} values differ, e.g. at {bad[:5]}: {g[bad[:5]]} vs NumPy {w[bad[:5]]}"


def check_table(table, inputs: dict, backend: str = "llvm", ulps: float = 4.0, conditioned=None):
    """Run the jitted table (a function of the inputs returning {label: result}) and compare every entry with
    NumPy's (assert_ulp); labels name the failing entry. `conditioned` maps labels to the magnitude their errors
    scale with (see CANCELLING and power_condition) and to a mask of the values to compare."""
    args = tuple(inputs.values())
    want = numpy_result(table, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got, _ = run_jit(table, args, backend=backend)
    assert sorted(got) == sorted(want)
    for label in want:
        g, w, norm = np.asarray(got[label]), np.asarray(want[label]), label in CANCELLING
        if conditioned and label in conditioned:
            norm, keep = conditioned[label]
            g, w, norm = g[keep], w[keep], norm[keep]
        elif label == "log1p":   # log of hypot(1 + x, y): NumPy's absolute accuracy (that of the sum near 1)
            norm = np.fmax(np.abs(w), 1.0)
        assert_ulp(g, w, max(ulps, WIDER.get(label, 0)), path=label, normwise=norm)


# functions where glibc's results themselves are further from the exact value than 4 ulp (benchmarks/ulp_complex.py:
# ctanf/ctanhf up to 5.8 ulp off where numfn's are correctly rounded, ctan/ctanh up to 5.9 ulp, numfn's up to 5.1;
# ccosh 2.6 and numfn's 3.0 ulp, 5 apart)
WIDER = {"tan": 8, "tanh": 8, "cosh": 6}

# NumPy's formulas whose parts cancel (expm1: expm1(x) cos(y) - 2 sin(y/2)**2; log1p: log(hypot(1 + x, y))): their
# small parts carry the rounding of the large terms, so they are compared relative to the value's magnitude
CANCELLING = {"expm1", "log1p"}


def power_condition(a: np.ndarray, b: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a ** b = exp(b log a) amplifies the last-bit difference of two logarithms by |b log a| (NumPy's and numfn's
    log differ by an ulp at times): the magnitude errors scale with, and the values where that amplification
    leaves no digit at all (|b log a| > 1e6: the angle of the result is noise) are not compared."""
    with np.errstate(all="ignore"):
        cond = np.abs(b) * np.abs(np.log(a))
        keep = ~(cond > 1e6) | ~np.isfinite(a) | ~np.isfinite(b)
        return np.abs(want).astype(np.float64) * (1 + np.nan_to_num(cond, nan=0.0, posinf=0.0)), keep


# ---- the math functions ------------------------------------------------------------------------------------------

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "exp2", "expm1", "log2", "log10",
         "log1p", "reciprocal", "sign", "conjugate", "absolute", "square", "negative", "positive", "rint", "isnan",
         "isinf", "isfinite"]
FUNCTIONS = {"angle": np.angle, "angle-deg": lambda z: np.angle(z, deg=True), "real": np.real, "imag": np.imag,
             "conj": np.conj, "iscomplex": np.iscomplex, "isreal": np.isreal, ".real": lambda z: z.real,
             ".imag": lambda z: z.imag, ".conj()": lambda z: z.conj(), "abs()": abs, "-z": lambda z: -z,
             "z**2": lambda z: z ** 2, "z**-1": lambda z: z ** -1, "z**0.5": lambda z: z ** 0.5,
             "z**1": lambda z: z ** 1, "z**0": lambda z: z ** 0, "z**3": lambda z: z ** 3}


def unary_table(z):
    out = {name: getattr(np, name)(z) for name in UNARY}
    out.update({label: f(z) for label, f in FUNCTIONS.items()})
    return out


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_math_functions_on_special_values(dtype):
    check_table(unary_table, {"z": special_grid(dtype)})


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_math_functions_on_random_values(dtype):
    check_table(unary_table, {"z": random_values(dtype)})


@settings(max_examples=15, deadline=None)
@given(st.floats(-50, 50), st.floats(-50, 50), st.sampled_from([1e-6, 1.0, 1e6]))
def test_math_functions_hypothesis(a, b, scale):
    z = (np.linspace(-1, 1, 64) * (a + 1j * b) * scale + 1j * scale).astype(np.complex128)
    check_table(unary_table, {"z": z})


def test_math_functions_on_the_c_backend():
    fns = ["exp", "log", "sqrt", "sin", "tanh", "reciprocal", "sign", "isinf"]
    check_table(lambda z: {name: getattr(np, name)(z) for name in fns}, {"z": special_grid(np.complex128)},
                backend="c")


def test_numfn_numpy_namespace():
    def make(xp):
        return lambda z: (xp.angle(z), xp.real(z), xp.imag(z), xp.conj(z), xp.isreal(z), xp.iscomplex(z),
                          xp.exp(z) * xp.sqrt(z), xp.abs(z), xp.sum(z * 1j))
    check_xp(make, random_values(np.complex128, 16)[8:] / 10, backend="llvm")
    assert fnp.iscomplexobj(np.ones(2, np.complex64)) and not fnp.iscomplexobj(np.ones(2))


# ---- arithmetic and comparisons ----------------------------------------------------------------------------------

BINARY = ["add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "maximum", "minimum", "fmax", "fmin", "float_power"]


def binary_table(a, b):
    out = {name: getattr(np, name)(a, b) for name in BINARY}
    out.update({"a/b": a / b, "a*b": a * b, "a**b": a ** b, "a==b": a == b, "a!=b": a != b, "a+1j": a + 1j,
                "2j*b": 2j * b, "a/(1+1j)": a / (1 + 1j), "(3-4j)/a": (3 - 4j) / a, "a**2.0": a ** 2.0,
                "power(a,2)": np.power(a, 2), "power(a,-3)": np.power(a, -3), "a**(0.5+1j)": a ** (0.5 + 1j)})
    return out


def cross(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(z, z.size), np.tile(z, z.size)


def powers(a, b) -> dict:
    """The table's non-integer powers and their conditioning (see power_condition)."""
    with np.errstate(all="ignore"):
        pairs = {"power": (a, b), "a**b": (a, b), "float_power": (a.astype(np.complex128), b.astype(np.complex128)),
                 "a**(0.5+1j)": (a, np.asarray(0.5 + 1j, a.dtype))}
        return {k: power_condition(x, y, np.power(x, y)) for k, (x, y) in pairs.items()}


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_arithmetic_on_special_values(dtype):
    a, b = cross(special_grid(dtype))
    check_table(binary_table, {"a": a, "b": b}, conditioned=powers(a, b))


def test_arithmetic_on_the_c_backend():
    a, b = cross(special_grid(np.complex128))
    check_table(binary_table, {"a": a, "b": b}, backend="c", conditioned=powers(a, b))


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_arithmetic_on_random_values(dtype):
    a, b = random_values(dtype), random_values(dtype)[::-1]
    check_table(binary_table, {"a": a, "b": b}, conditioned=powers(a, b))


def test_mixed_real_and_complex_operands():
    # values of their own (drawn from the module's generator, they depended on which tests ran first in the
    # process); the powers' errors scale with the modulus and the power's condition, as the table's above: a real
    # part far below the modulus (z ** f of 0.0119 - 2.49j) carries the modulus' last-bit error, in NumPy too
    own = np.random.default_rng(2)
    z64, z128 = random_values(np.complex64, 8, own), random_values(np.complex128, 8, own)
    f32, f64, i32 = own.standard_normal(8).astype(np.float32), own.standard_normal(8), np.arange(8, dtype=np.int32)
    with np.errstate(all="ignore"):
        conditioned = {"c64**f32": power_condition(z64, f32, z64 ** f32),
                       "f64**c64": power_condition(f64, z64, f64 ** z64)}

    def table(z64, z128, f32, f64, i32):
        return {"c64+f32": z64 + f32, "c64*f64": z64 * f64, "c64+c128": z64 + z128, "i32*c64": i32 * z64,
                "f32/c128": f32 / z128, "c128-i32": z128 - i32, "c64**f32": z64 ** f32, "f64**c64": f64 ** z64,
                "c64==f32": z64 == f32, "c128!=i32": z128 != i32, "where": np.where(f32 > 0, z64, f64)}
    check_table(table, {"z64": z64, "z128": z128, "f32": f32, "f64": f64, "i32": i32}, ulps=8,
                conditioned=conditioned)


# NEP 50: Python complex scalars are weak (they take the array's precision); NumPy scalars are not
SCALARS = [("f32+1j", np.float32, lambda x: x + 1j), ("f16*2j", np.float16, lambda x: x * 2j),
           ("f64-1j", np.float64, lambda x: x - (0.5 - 1j)), ("i32+1j", np.int32, lambda x: x + 1j),
           ("i8*1j", np.int8, lambda x: x * 1j), ("u64+1j", np.uint64, lambda x: x + 1j),
           ("bool+1j", np.bool_, lambda x: x + 1j), ("c64+1.5", np.complex64, lambda x: x + 1.5),
           ("c64*2", np.complex64, lambda x: x * 2), ("c64+c128 scalar", np.complex64, lambda x: x + np.complex128(1j)),
           ("f32+c64 scalar", np.float32, lambda x: x + np.complex64(1j)),
           ("c64 where", np.complex64, lambda x: np.where(x == 0, 1j, x)),
           ("f32 full 1j", np.float32, lambda x: np.full_like(x, 1j, dtype=np.complex64) * x),
           ("c64/1e30j", np.complex64, lambda x: x / 1e30j), ("f32**1j", np.float32, lambda x: x ** 1j)]


@pytest.mark.parametrize("dtype,fn", [(d, f) for _, d, f in SCALARS], ids=[label for label, _, _ in SCALARS])
def test_python_complex_scalars_are_weak(dtype, fn):
    x = (np.arange(1, 7) * (1 + 1j if np.dtype(dtype).kind == "c" else 1)).astype(dtype)
    want = numpy_result(fn, (x,))
    got, _ = run_jit(fn, (x,), backend="llvm")
    assert_ulp(got, want, ulps=4)


# ---- parts, views and writes -------------------------------------------------------------------------------------

def test_real_and_imag_writes_into_computed_arrays(backend):
    def f(z, v):
        y = z * 2
        y.real = v
        w = z + 1
        w.imag[1:] = -v[1:]
        u = z.copy()
        u.real[::2] *= 3
        r = np.zeros(4, np.complex128)
        r.imag = v
        return y, w, u, r, y.real + w.imag
    check(f, random_values(np.complex128, 4), rng.standard_normal(4), backend=backend)


def test_real_and_imag_writes_into_arguments():
    def f(z, v):
        z.imag[:] = v
        z.real[::-1] += 1
    check_mutates(f, random_values(np.complex128, 5), rng.standard_normal(5), backend="llvm")


def test_imag_of_a_real_array_is_read_only_zeros():
    check(lambda x: (x.imag, np.imag(x), x.real is x), rng.standard_normal(3), backend="llvm")
    check_raises_like(_set_imag_of_real, rng.standard_normal(3), backend="llvm")


def _set_imag_of_real(x):
    x.imag = 1.0
    return x


# ---- reductions --------------------------------------------------------------------------------------------------

def reduction_table(z):
    return {"sum": z.sum(), "sum0": np.sum(z, axis=0), "prod1": np.prod(z, axis=1), "prod": z.prod(),
            "mean": z.mean(axis=1, keepdims=True), "cumsum": np.cumsum(z, axis=1), "cumprod": np.cumprod(z, axis=1),
            "var": np.var(z, axis=0), "std": z.std(), "max": z.max(axis=1), "min": np.min(z, axis=0),
            "argmax": np.argmax(z, axis=1), "nansum": np.nansum(z), "any": np.any(z, axis=0), "all": z.all()}


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
def test_reductions(dtype):
    z = (rng.standard_normal((6, 7)) + 1j * rng.standard_normal((6, 7))).astype(dtype)
    z[2, 3] = 0
    table = reduction_table
    if dtype == np.complex64:   # the single-precision subset: the rest is the same code in the other width
        def table(z): return {k: v for k, v in reduction_table(z).items() if k in ("sum0", "prod1", "mean", "cumprod")}
    want = numpy_result(table, (z,))
    got, _ = run_jit(table, (z,), backend="llvm")
    eps = np.finfo(cdtype_parts(dtype)).eps
    for k in want:
        w, g = np.asarray(want[k]), np.asarray(got[k])
        assert g.dtype == w.dtype and g.shape == w.shape, k
        np.testing.assert_allclose(g, w, rtol=64 * eps, atol=64 * eps * np.abs(w).max(), err_msg=k)


def test_reductions_of_special_values():
    z = special_grid(np.complex128).reshape(14, 14)
    check_table(lambda z: {"sum": z.sum(axis=1), "prod": z[:, :3].prod(axis=1), "cumsum": np.cumsum(z, axis=0),
                           "max": z.max(axis=0), "min": z.min(axis=1)}, {"z": z})


def test_products_of_empty_and_masked_axes():
    z = random_values(np.complex128, 6).reshape(2, 3) / 1e10 ** 0.5
    check(lambda z: (np.prod(z[:0], axis=0), np.prod(z[:, :0], axis=1), z[:0].prod(), np.prod(z[:0], axis=0,
                                                                                          initial=3j),
                     np.prod(z, axis=1, initial=2j), np.prod(z, axis=0, where=np.array([True, False, True])),
                     np.cumprod(z[:0], axis=0), np.sum(z[:0], axis=0)), z, backend="llvm", rtol=1e-14)


# ---- products ----------------------------------------------------------------------------------------------------

PRODUCTS = {"matmul": lambda a, b, v: a @ b, "dot": lambda a, b, v: np.dot(a, b), "vdot": lambda a, b, v: np.vdot(v, v),
            "matvec": lambda a, b, v: a @ v, "einsum": lambda a, b, v: np.einsum("ij,jk->ik", a, b),
            "einsum-trace": lambda a, b, v: np.einsum("ii", a[:4, :4]), "einsum-conj": lambda a, b, v: np.einsum(
                "i,i", v.conj(), v),
            "inner": lambda a, b, v: np.inner(v, v), "outer": lambda a, b, v: np.outer(v[:3], v),
            "real@complex": lambda a, b, v: a.real @ b, "conj.T@a": lambda a, b, v: a.conj().T @ a}


@pytest.mark.parametrize("dtype", CDTYPES, ids=ids)
@pytest.mark.parametrize("size", ["small", "blas"])
def test_matrix_products(dtype, size):
    n = 4 if size == "small" else 96   # the large ones go through BLAS's cgemm/zgemm
    a = (rng.standard_normal((n, 5 if size == "small" else n)) + 1j * rng.standard_normal(
        (n, 5 if size == "small" else n))).astype(dtype)
    b = (rng.standard_normal((a.shape[1], 3)) + 1j * rng.standard_normal((a.shape[1], 3))).astype(dtype)
    v = (rng.standard_normal(a.shape[1]) + 1j * rng.standard_normal(a.shape[1])).astype(dtype)

    def table(a, b, v): return {k: f(a, b, v) for k, f in PRODUCTS.items()}
    eps = np.finfo(cdtype_parts(dtype)).eps
    check(table, a, b, v, backend="llvm", rtol=16 * eps * math.sqrt(a.shape[1]), scale=4.0 * a.shape[1])


# ---- casts -------------------------------------------------------------------------------------------------------

def test_casts_and_predicates(backend):
    z = special_grid(np.complex128)[::7]
    x = rng.standard_normal(z.size).astype(np.float32)

    def f(z, x):
        return {"c64": z.astype(np.complex64), "c128": z.astype(np.complex64).astype(np.complex128),
                "bool": z.astype(bool), "f32->c64": x.astype(np.complex64), "i->c": np.arange(3).astype(complex),
                "asarray": np.asarray(x, dtype=np.complex128), "iscomplexobj": np.iscomplexobj(z),
                "isrealobj": np.isrealobj(z), "iscomplexobj-x": np.iscomplexobj(x), "result_type": z.astype(
                    np.result_type(np.float32, 1j)).real}
    check_table(f, {"z": z, "x": x}, backend=backend, ulps=0)


@pytest.mark.parametrize("to", [np.float64, np.float32, np.int64, np.int16])
def test_complex_to_real_casts_warn_and_keep_the_real_part(to):
    z = (np.array([1.5 + 2j, -3.25 - 1j, 0.5j, 7 + 0j])).astype(np.complex128)
    with pytest.warns(np.exceptions.ComplexWarning):
        want = z.astype(to)
    with pytest.warns(np.exceptions.ComplexWarning):
        got = numfn.jit(lambda z: z.astype(to))(z)
    np.testing.assert_array_equal(got, want, strict=True)


# ---- arguments and results ---------------------------------------------------------------------------------------

def test_complex_arguments_and_results(backend):
    def f(z, w, s):
        return z * s, w, np.complex64(2 - 1j) * w, s * 2, z.sum() * s
    check(f, random_values(np.complex128, 6), np.array(1 + 2j, np.complex64), 0.5 - 3j, backend=backend)


def test_captured_complex_constants_and_nested_jit():
    table = random_values(np.complex128, 5)
    inner = numfn.jit(lambda z: z * table + 1j)
    check(lambda z: inner(z).conj() * 2, random_values(np.complex128, 5), backend="llvm")


def test_vmap_over_complex_values():
    z = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))) * 3
    got = numfn.vmap(lambda row: np.exp(row) * row.sum())(z)
    # a product's real part may cancel (ar br - ai bi): compared relative to the magnitude
    assert_ulp(got, np.exp(z) * z.sum(axis=1, keepdims=True), ulps=8, normwise=True)


# ---- errors ------------------------------------------------------------------------------------------------------

ERRORS = [("floor", lambda z: np.floor(z)), ("floor_divide", lambda z: z // 2), ("remainder", lambda z: z % 2),
          ("arctan2", lambda z: np.arctan2(z, z)), ("bitwise", lambda z: z & 1), ("fmod", lambda z: np.fmod(z, 2)),
          ("hypot", lambda z: np.hypot(z, z)), ("heaviside", lambda z: np.heaviside(z, 0.5)),
          ("ldexp", lambda z: np.ldexp(z, 2)), ("signbit", lambda z: np.signbit(z))]


@pytest.mark.parametrize("fn", [f for _, f in ERRORS], ids=[label for label, _ in ERRORS])
def test_operations_numpy_refuses_on_complex_values(fn):
    check_raises_like(fn, random_values(np.complex128, 3), backend="llvm")


def test_unsupported_complex_functions_are_refused_by_name():
    with pytest.raises(numfn.NumfnError, match="arcsin"):
        numfn.jit(np.arcsin)(random_values(np.complex128, 3))
