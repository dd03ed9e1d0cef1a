"""The numerical policy (docs/performance.md, "Numerical policy"): by default every float operation rounds on its
own, as NumPy's loops do, on both backends alike (no a*b + c contracted into one FMA, no reassociation outside the
accumulation of reductions, no fast-math flag that changes results); jit(fastmath=True) allows contraction and
reassociation, keeps NaN and inf, and is part of the cache and specialization keys."""
import pickle
import re
from fractions import Fraction

import numpy as np
import pytest

import numfn
from numfn.runtime import clang
from numfn.ir.uop import Ops
from tests.helpers import assert_same, check, check_raises_like

FLOATS = (np.float32, np.float64)


def _near_fma_inputs(dtype, n: int = 257):
    """(a, b, c, d) with c = -(a*b) rounded, d = b: a*b + c and a*b - a*d are exactly 0 when every operation rounds
    on its own and the rounding error of a*b (almost never 0) when a*b + c is one FMA. The first element is the
    classic case: (1 + e)(1 - e) - 1 with e = 2**-27 (float64) or 2**-13 (float32)."""
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 2.0, n).astype(dtype)
    b = rng.uniform(0.5, 2.0, n).astype(dtype)
    e = dtype(2.0 ** (-27 if dtype is np.float64 else -13))
    a[0], b[0] = 1 + e, 1 - e
    c = -(a * b)
    return a, b, c, b.copy()


def exact(fn, *args, backend):
    check(fn, *args, backend=backend, rtol=0.0, atol=0.0, signed_zeros=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_times_b_plus_c_is_never_one_fma(backend, dtype):
    a, b, c, d = _near_fma_inputs(dtype)
    # the exact a*b + c: almost never 0, so a contraction would show
    assert sum(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)) != 0 for p, q, r in zip(a, b, c)) > 200
    exact(lambda a, b, c, d: (a * b + c, c + a * b, a * b - a * d, -(a * b) - c, (a * b + c) * 3.0), a, b, c, d,
          backend=backend)


@pytest.mark.parametrize("dtype", FLOATS)
def test_elementwise_arithmetic_rounds_like_numpy(backend, dtype):
    rng = np.random.default_rng(1)
    x, y, z, w = (rng.standard_normal(1000).astype(dtype) for _ in range(4))

    def programs(x, y, z, w):
        return (x * y + z, x * y - z * w, x * y + z * w,
                ((0.3 * x - 1.7) * x + 2.1) * x - 0.9,                    # Horner
                1.0 + x + x * x / 2 + x * x * x / 6 + x ** 4 / 24,        # power form
                (x + y) * (z - w) + x / (y * y + 1.0),
                x * y * z + w * w - x * z)
    exact(programs, x, y, z, w, backend=backend)


@pytest.mark.parametrize("dtype", FLOATS)
def test_broadcast_multiply_add_rounds_like_numpy(backend, dtype):
    a, b, c, _ = _near_fma_inputs(dtype, 60)
    x, y = a[:12].reshape(12, 1), b[:5]
    z = -(x * y)   # (12, 5): every element cancels exactly unless contracted
    exact(lambda x, y, z: (x * y + z, y * x + z[3], x[0] * y + z), x, y, z, backend=backend)
    exact(lambda x, y, z: x * y + z, dtype(a[0]), dtype(b[0]), dtype(c[0]), backend=backend)   # 0-d
    exact(lambda x, y, z: x * y + z, a[:1], b[:1], c[:1], backend=backend)   # size 1
    exact(lambda x, y, z: x * y + z, a[:0], b[:0], c[:0], backend=backend)   # size 0
    exact(lambda x, y, z: x * y + z, a[::3], b[::3], c[::3], backend=backend)   # strided


@pytest.mark.parametrize("dtype", FLOATS)
def test_in_place_updates_round_like_numpy(backend, dtype):
    a, b, c, _ = _near_fma_inputs(dtype)

    def update(a, b, c):
        out = c.copy()
        out += a * b
        out[::2] -= a[::2] * b[::2]
        return out
    exact(update, a, b, c, backend=backend)


def _thomas(lower, diag, upper, d):
    """The constant tridiagonal system solved along axis 0 for every column of d (Thomas's algorithm)."""
    n = d.shape[0]
    cp = np.zeros(n, d.dtype)
    dp = np.zeros_like(d)
    cp[0] = upper / diag
    dp[0] = d[0] / diag
    for i in range(1, n):
        m = diag - lower * cp[i - 1]
        cp[i] = upper / m
        dp[i] = (d[i] - lower * dp[i - 1]) / m
    x = np.zeros_like(d)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def _adi(solve):
    """An alternating-direction implicit solver of the heat equation: 5 steps, each explicit in one direction and
    a tridiagonal solve in the other (the recurrence whose a*b + c contractions made the LLVM backend drift)."""
    def adi(u, r):
        for _ in range(5):
            rhs = u + r * (np.roll(u, 1, axis=1) - 2 * u + np.roll(u, -1, axis=1))
            u = solve(-r, 1 + 2 * r, -r, rhs)
            ut = u.T
            rhs = ut + r * (np.roll(ut, 1, axis=1) - 2 * ut + np.roll(ut, -1, axis=1))
            u = solve(-r, 1 + 2 * r, -r, rhs).T
        return u
    return adi


@pytest.mark.parametrize("dtype", FLOATS)
def test_adi_recurrence_equals_numpy_bit_for_bit(backend, dtype):
    u = np.random.default_rng(3).standard_normal((100, 100)).astype(dtype)
    r = dtype(0.7)
    expected = _adi(_thomas)(u, r)
    got = numfn.jit(_adi(numfn.jit(_thomas)), backend=backend, progress=False)(u, r)
    assert_same(got, expected, rtol=0.0, atol=0.0, signed_zeros=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_backends_agree_bit_for_bit(dtype):
    # the math functions' polynomial code and complex products too: the same roundings on both backends
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(4099) * 4).astype(dtype)
    z = (x[:1000] + 1j * x[1000:2000]).astype(np.complex64 if dtype is np.float32 else np.complex128)

    def f(x, z):
        return (np.exp(x), np.log(np.abs(x) + 0.5), np.sin(x), np.tan(x), np.tanh(x), np.exp2(x),
                x * x[::-1] + x, z * z + z, np.exp(z), 1 / z)
    llvm = numfn.jit(f, backend="llvm")(x, z)
    c = numfn.jit(f, backend="c")(x, z)
    for i, (a, b) in enumerate(zip(llvm, c)):
        assert a.tobytes() == b.tobytes(), f"output {i}: the backends differ"


# flags that change results, outside `reassoc` on a reduction's accumulation
_LLVM_FLAGS = re.compile(r"= (?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|call|select)((?: (?:nnan|ninf|nsz|arcp|contract|"
                         r"afn|reassoc|fast))*) ")


def _program_flags(source: str) -> set[str]:
    return {flag for m in _LLVM_FLAGS.finditer(source) for flag in m.group(1).split()}


def _mixed(x, z):
    return (x * x + 1.0, np.exp(x) * 2.0 - x, (x * x).sum(), np.sqrt(x * x + 1.0).mean(axis=0),
            z * z + z, np.abs(z))


def _mixed_args():
    x = np.random.default_rng(0).standard_normal((64, 32))
    return x, x[:3] + 1j * x[3:6]


def test_no_fast_math_flags_by_default():
    x, z = _mixed_args()
    flags = _program_flags(numfn.jit(_mixed, backend="llvm").specialize(x, z).source)
    assert flags <= {"reassoc"}, flags   # only reductions' accumulation steps (see below)
    source = numfn.jit(_mixed, backend="c").specialize(x, z).source
    assert "contract" not in source
    assert all('"clang fp reassociate(on)"' in line for line in source.splitlines() if "clang fp" in line)
    assert "-ffp-contract=off" in clang.CFLAGS
    assert not [f for f in clang.CFLAGS if "fast-math" in f or "finite-math" in f or "associative" in f]


def test_default_reassociates_only_accumulations():
    x, z = _mixed_args()
    source = numfn.jit(lambda x: (x * x + x, (x * x).sum(axis=1)), backend="llvm").specialize(x).source
    flagged = [line for line in source.splitlines() if "reassoc" in line]
    assert flagged and all("fadd" in line for line in flagged)   # the sum's accumulation, never the products
    assert not [line for line in source.splitlines() if "fmul" in line and "reassoc" in line]


def _affine_recurrence(x):   # fuzz seed 73001117: an elementwise loop, run per element (numfn.schedule.interchange)
    c = np.zeros((), np.int64)
    while c < 6:
        x = x * 3
        x = x + 2
        c = c + 1
    return x


def test_a_loops_carried_state_is_not_reassociated():
    # the loop's state lives in accumulators, so `x * 3` read one: taken for a reduction's step, it was marked
    # reassociable, and clang rewrote the unrolled (x * 3 + 2) * 3 ... (the C backend was 2e-13 off NumPy)
    x = np.array([-2.4466102824021654, 0.34613044186610153, 1.6591091157934974, -2.200005552276195])
    expected = _affine_recurrence(x)
    for backend in ("llvm", "c"):
        jf = numfn.jit(_affine_recurrence, backend=backend)
        assert_same(jf(x), expected, rtol=0.0, atol=0.0)
        source = jf.specialize(x).source
        assert "reassoc" not in source and "reassociate" not in source, backend


@pytest.mark.parametrize("dtype", FLOATS)
def test_fastmath_is_close_to_numpy(backend, dtype):
    rng = np.random.default_rng(2)
    x, y, z = (rng.standard_normal((40, 30)).astype(dtype) for _ in range(3))

    def f(x, y, z):
        return (x * y + z, ((0.3 * x - 1.7) * x + 2.1) * x - 0.9, (x * y).sum(axis=1), np.exp(x) * y - z,
                np.sin(x) * np.cos(y) + z, np.tanh(x * y + z), np.log(np.abs(x) + 1.0) * 3.0 + y)
    jf = numfn.jit(f, backend=backend, fastmath=True)
    check(f, x, y, z, backend=backend, jitted=jf, scale=40.0)
    source = jf.specialize(x, y, z).source
    assert ("contract" in source) if backend == "llvm" else ("contract(fast)" in source)


def test_fastmath_keeps_nan_inf_and_signed_zeros(backend):
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -2.0, 3e300])
    y = np.array([1.0, 0.0, 2.0, 1.0, -0.0, np.nan, np.inf, 1e10])

    def f(x, y):
        s = x * y + x
        return (s, np.isnan(s), np.isinf(x * y), np.where(np.isnan(x * 2.0 + y), -1.0, x * 2.0 + y),
                np.abs(x * y) - x, -0.0 * x + (-0.0), x * y - x * y, np.nansum(x * 2.0 + 1.0))
    check(f, x, y, backend=backend, jitted=numfn.jit(f, backend=backend, fastmath=True), signed_zeros=True)
    flags = _program_flags(numfn.jit(f, backend="llvm", fastmath=True).specialize(x, y).source)
    assert flags <= {"reassoc", "contract"}, flags


def test_fastmath_contracts_and_exact_does_not():
    # where the hardware has FMA, the contracted a*b + c gives its rounding error instead of 0
    with open("/proc/cpuinfo") as f:
        if " fma" not in f.read(): pytest.skip("no FMA instructions")
    a, b, c, _ = _near_fma_inputs(np.float64, 64)
    for backend in ("llvm", "c"):
        exact_result = numfn.jit(lambda a, b, c: a * b + c, backend=backend)(a, b, c)
        fast = numfn.jit(lambda a, b, c: a * b + c, backend=backend, fastmath=True)(a, b, c)
        assert not exact_result.any()
        assert fast[0] == -2.0 ** -54 and fast.any()   # one program each: the disk cache tells them apart


def _affine(x):
    return x * 2.0 + 1.0


def test_fastmath_is_part_of_the_keys():
    f = _affine
    x = np.arange(5.0)
    plain, fast = numfn.jit(f), numfn.jit(f, fastmath=True)
    assert not plain.fastmath and fast.fastmath
    nf_plain, nf_fast = plain.specialize(x), fast.specialize(x)
    assert not nf_plain.fastmath and nf_fast.fastmath
    assert nf_plain.cache_key != nf_fast.cache_key
    np.testing.assert_array_equal(fast(x), f(x))
    assert fast.specializations[0].fastmath
    again = pickle.loads(pickle.dumps(fast))   # options travel with a pickled function
    assert again.fastmath and again.specialize(x).cache_key == nf_fast.cache_key
    assert numfn.vmap(fast).specialize(np.ones((3, 5))).fastmath
    assert numfn.jit(fastmath=True)(f).fastmath
    with pytest.raises(TypeError, match="fastmath must be True or False"):
        numfn.jit(f, fastmath="yes")


# ---------------------------------------------------------------------------------------------------------------
# np.gcd and np.lcm: one GCD op per element (a helper function's loop), not 2 * bits unrolled steps

INT_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


def _int_operands(dtype, n: int = 200):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    edges = [info.min, info.max, 0, 1, info.max // 3, 12, 18, 1 << (info.bits - 2), info.min]
    a = np.concatenate([np.array(edges, dtype), rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True),
                        (rng.integers(1, 50, n) * 6).astype(dtype)])
    b = np.concatenate([np.array([0, 0, 0, info.min, 6, 0, -18 if info.min else 27, 1 << (info.bits - 3), info.min],
                                 dtype), rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True),
                        (rng.integers(1, 50, n) * 4).astype(dtype)])
    return a, b


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_gcd_lcm_equal_numpy(backend, dtype):
    a, b = _int_operands(dtype)
    check(lambda a, b: (np.gcd(a, b), np.lcm(a, b), np.gcd(a, a), np.lcm(b, 0), np.gcd(a, 0), np.lcm(a[::-1], b)),
          a, b, backend=backend)


def test_gcd_lcm_shapes_and_promotion(backend):
    a, b = _int_operands(np.int64, 20)
    check(lambda a, b: (np.gcd(a[:, None], b[None, :7]), np.lcm(a[:1], b[:1]), np.gcd(a[:0], b[:0]),
                        np.gcd(a[0], b[3]), np.lcm(a[4:9], 4), np.gcd(24, a[::3])), a, b, backend=backend)
    i8, u8 = _int_operands(np.int8, 30)[0], _int_operands(np.uint8, 30)[1]
    check(lambda x, y: (np.gcd(x, y), np.lcm(x, y), np.gcd(x, np.int64(-2) ** 62)), i8, u8, backend=backend)
    check(lambda x: (np.gcd(x, True), np.lcm(x, np.bool_(True))), i8, backend=backend)
    m = np.array([[12, 18, -30, 0, 42], [7, 0, 0, 5, 3], [-8, 24, 16, 64, 2]], np.int64)
    check(lambda x: (np.gcd.reduce(x, axis=1), np.gcd.accumulate(x, axis=1), np.lcm.reduce(x, axis=0),
                     np.gcd.outer(x[0], x[1]), np.gcd(x, 6).sum(axis=1) + np.lcm(x, 4).max()), m, backend=backend)


def test_gcd_of_bools_and_floats_raises_like_numpy(backend):
    x = np.array([True, False, True])
    check_raises_like(lambda x: np.gcd(x, x), x, backend=backend)
    check_raises_like(lambda x: np.lcm(x, x), x, backend=backend)
    check_raises_like(lambda x: np.gcd(x, 2.0), np.arange(3), backend=backend)


@pytest.mark.parametrize("dtype", (np.int8, np.int16, np.int64, np.uint64))
def test_gcd_compiles_to_one_op_per_element(dtype):
    # the kernels' size does not grow with the width: one GCD op each, a few dozen instructions in all, and the
    # helper function that computes it defined once per program however many kernels call it
    a, b = _int_operands(dtype, 10)

    def f(a, b):
        g = np.gcd(a, b)
        return g, np.lcm(a, b), np.gcd(b, g.max())   # the last in a kernel of its own, after the reduction
    nf = numfn.jit(f, backend="llvm").specialize(a, b)
    uops = [u for k in nf.rendered_kernels for u in k.program.uops]
    assert len(nf.rendered_kernels) >= 2 and sum(u.op is Ops.GCD for u in uops) == 2, len(uops)  # lcm shares g
    assert len(uops) < 120, len(uops)
    assert len([line for line in nf.source.splitlines() if line.startswith("define private")]) == 1
    assert len(nf.source) < 20000, len(nf.source)   # 8 and 16 bits: 2 * bits steps in straight-line code
    c_source = numfn.jit(f, backend="c").specialize(a, b).source
    assert len(re.findall(r"static inline \w+ numfn_gcd\w*\(", c_source)) == 1 and len(c_source) < 12000


def test_gcd_folds_constants():
    nf = numfn.jit(lambda x: x + np.gcd(np.int64(-2) ** 63, 0) + np.lcm(np.uint8(200), np.uint8(3))) \
        .specialize(np.arange(3))
    assert not [u for k in nf.rendered_kernels for u in k.program.uops if u.op is Ops.GCD]
    np.testing.assert_array_equal(nf(np.arange(3)), np.arange(3) + np.gcd(np.int64(-2) ** 63, 0) + 88)


# ---------------------------------------------------------------------------------------------------------------
# integer // and % of a value that wrapped around (found by the fuzz run, seed 20000218): the index simplifier
# rewrote (x * 2) // 2 into x for a uint8 x, true of mathematical integers but not of NumPy's wrapping ones
# (247 * 2 is 238 in uint8, and 238 // 2 is 119). Such rules now apply only where no operation can wrap

_WRAPPING = {
    "double_halved": lambda x: (x * 2) // 2,
    "sum_halved": lambda x: (x + x) // 2,
    "times4_mod3": lambda x: (x * 4) % 3,
    "affine_div": lambda x: (x * 3 + 1) // 4,
    "shifted_mod": lambda x: (x + 100) % 7,
    "nested": lambda x: ((x * 6) // 2) // 3,
}


@pytest.mark.parametrize("expr", list(_WRAPPING))
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64])
def test_integer_division_of_wrapped_values(expr, dtype, backend):
    info = np.iinfo(dtype)
    lo = max(int(info.min), 0) if dtype != np.int64 else 0   # nonnegative values: where the simplifier applies
    x = np.array([lo, lo + 1, info.max // 2, info.max // 2 + 1, info.max - 1, info.max], dtype=dtype)
    check(_WRAPPING[expr], x, backend=backend)
