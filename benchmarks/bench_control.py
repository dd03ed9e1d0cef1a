"""Loops and branches written in plain Python, compiled by numfn, next to NumPy running the same Python code: a 2-D
heat equation (explicit, 256^2, 10,000 steps), a Newton iteration with a while on the residual, an LU factorization
without pivoting and a Cholesky factorization written with loops and slices (n = 500), and numfn.scan integrating an
ODE over 10^5 steps (NumPy: the same Python loop). Every numfn result is checked against NumPy's.

    python -m pytest benchmarks/bench_control.py --benchmark-group-by=group
    python benchmarks/bench_control.py        # a table of medians, speedups and compile times (100 vs 10,000 steps)
"""
import time

import numpy as np
import pytest

import numfn
from timing import median_seconds


def heat(u, steps):
    for _ in range(steps):
        u = u + 0.1 * (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
                       + np.roll(u, -1, axis=1) - 4 * u)
    return u


def newton(a):
    """The square roots of the elements of a (all positive) by Newton's iteration, until the relative residual is a
    few ulp (an absolute tolerance would never be met for large elements)."""
    x = a * 0.5 + 0.5
    residual = (np.abs(x * x - a) / a).max()
    while residual > 1e-14:
        x = 0.5 * (x + a / x)
        residual = (np.abs(x * x - a) / a).max()
    return x


def lu(a):
    a = a.copy()
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def cholesky(a):
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        L[j, j] = np.sqrt(a[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def ode_step(y, t):
    """One explicit midpoint step of a damped oscillator with a forcing term."""
    h = 1e-3
    def f(y, t): return np.stack([y[1], -0.1 * y[1] - y[0] + np.sin(t)])
    mid = y + 0.5 * h * f(y, t)
    return y + h * f(mid, t + 0.5 * h), y[0]


def ode_scan(y0, ts):
    return numfn.scan(ode_step, y0, ts)


def ode_numpy(y0, ts):
    y, out = y0, np.empty(len(ts))
    for i, t in enumerate(ts):
        y, out[i] = ode_step(y, t)
    return y, out


def _spd(n, rng):
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _inputs(name, rng):
    if name == "heat": return (rng.random((256, 256)), 10_000)
    if name == "newton": return (rng.uniform(0.5, 1e6, 10**6),)
    if name in ("lu", "cholesky"): return (_spd(500, rng),)
    if name == "ode": return (np.array([1.0, 0.0]), np.arange(10**5) * 1e-3)
    raise KeyError(name)


# (numfn function, the same computation by NumPy, static arguments, tolerance scale)
CASES = {"heat": (heat, heat, (1,)), "newton": (newton, newton, ()), "lu": (lu, lu, ()),
         "cholesky": (cholesky, cholesky, ()), "ode": (ode_scan, ode_numpy, ())}


def _jitted(name):
    fn, _, static = CASES[name]
    return numfn.jit(fn, static_argnums=static)


def _check(name, jitted, args):
    got, want = jitted(*args), CASES[name][1](*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9 * max(1.0, float(np.abs(w).max())))


@pytest.mark.parametrize("library", ["numpy", "numfn"])
@pytest.mark.parametrize("name", list(CASES))
def test_control(benchmark, name, library):
    args = _inputs(name, np.random.default_rng(0))
    benchmark.group = name
    fn = CASES[name][1]
    if library == "numfn":
        fn = _jitted(name)
        _check(name, fn, args)
    benchmark.pedantic(fn, args, rounds=3, iterations=1)


def compile_seconds(fn, args, static=()) -> float:
    """Trace, compile and run once, with no disk cache to help."""
    numfn.cache.clear()
    t0 = time.perf_counter()
    numfn.jit(fn, static_argnums=static)(*args)
    return time.perf_counter() - t0


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    print(f"{'case':<10} {'NumPy ms':>10} {'numfn ms':>10} {'speedup':>8}")
    for name in CASES:
        args = _inputs(name, rng)
        jitted = _jitted(name)
        _check(name, jitted, args)
        repeat = 3
        t_np, t_fn = median_seconds(CASES[name][1], args, repeat), median_seconds(jitted, args, repeat)
        print(f"{name:<10} {t_np * 1e3:10.1f} {t_fn * 1e3:10.1f} {t_np / t_fn:7.1f}x")
    u = rng.random((256, 256))
    short, long_ = compile_seconds(heat, (u, 100), (1,)), compile_seconds(heat, (u, 10_000), (1,))
    print(f"heat compile + first run: 100 steps {short:.2f} s, 10,000 steps {long_:.2f} s")
