"""Call overhead of compiled functions on tiny inputs (float64[3]), next to NumPy evaluating the same expression:

    1 argument    x * 2.0 + 1.0
    4 arguments   a + b + c + d
    16 arguments  the sum of 16 arrays

Columns (one pytest-benchmark group per argument count, so the table shows them side by side):
    numpy        the expression evaluated by NumPy (a ufunc call per operation)
    numfn.jit    calling numfn.jit(f): what users get (the fast path once JitFunction is a Dispatcher subclass)
    dispatcher   the C Dispatcher with the compiled entry registered: the fast path on its own
    numba        numba.njit(f), when numba is importable

Run:
    python -m pytest benchmarks/bench_call_overhead.py --benchmark-columns=min,median,mean,stddev,rounds
`test_call_overhead_target` (run with the benchmarks, or alone with -k target) checks the issue's target: a call of
x*2.0+1.0 on float64[3], output included, costs at most 0.45 us and at most 0.6 x NumPy's time.
"""
from __future__ import annotations

import timeit

import numpy as np
import pytest

import numfn
from numfn.runtime import dispatch


def f1(x):
    return x * 2.0 + 1.0


def f4(a, b, c, d):
    return a + b + c + d


def f16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p):
    return a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p


FUNCTIONS = {1: f1, 4: f4, 16: f16}
IMPLEMENTATIONS = ("numpy", "numfn.jit", "dispatcher", "numba")


def arguments(nargs: int) -> tuple:
    rng = np.random.default_rng(nargs)
    return tuple(rng.standard_normal(3) for _ in range(nargs))


def fast_dispatcher(fn, args):
    """A Dispatcher subclass instance with fn's entry for `args` registered; None without the C extension."""
    base = dispatch.dispatcher_base()
    if base is dispatch.PyDispatcher: return None

    class Bench(base):
        def _dispatch_miss(self, *a, **k):
            raise AssertionError("the benchmark left the fast path")

    nf = numfn.jit(fn).specialize(*args)
    d = Bench()
    if not dispatch.register_specialization(d, nf): return None
    return d


def implementation(name: str, fn, args):
    """The callable to time for `name`, warmed up; pytest.skip when it is not available."""
    if name == "numpy":
        call = fn
    elif name == "numfn.jit":
        call = numfn.jit(fn)
    elif name == "dispatcher":
        call = fast_dispatcher(fn, args)
        if call is None: pytest.skip("the fast call extension is unavailable (no C compiler?)")
    elif name == "numba":
        numba = pytest.importorskip("numba")
        call = numba.njit(fn)
    else:
        raise ValueError(name)
    np.testing.assert_allclose(call(*args), fn(*args), rtol=1e-12)
    return call


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("nargs", sorted(FUNCTIONS))
def test_call_overhead(benchmark, nargs, impl):
    fn, args = FUNCTIONS[nargs], arguments(nargs)
    call = implementation(impl, fn, args)
    benchmark.group = f"call overhead: {nargs:2d} x float64[3]"   # padded: the groups sort as 1, 4, 16
    benchmark.name = impl
    benchmark.extra_info["nargs"] = nargs
    result = benchmark(call, *args)
    np.testing.assert_allclose(result, fn(*args), rtol=1e-12)


def per_call_seconds(call, args, number: int = 200_000, repeat: int = 7) -> float:
    """The best of `repeat` timings of `number` calls, per call."""
    return min(timeit.repeat(lambda: call(*args), number=number, repeat=repeat)) / number


def test_call_overhead_target():
    """The issue's target for x*2.0+1.0 on float64[3]: <= 0.45 us per call and <= 0.6 x NumPy. Measured on
    numfn.jit when it already takes the fast path (JitFunction subclasses the Dispatcher), else on the Dispatcher
    with the entry registered."""
    args = arguments(1)
    jitted = numfn.jit(f1)
    jitted(*args)
    if isinstance(jitted, dispatch.dispatcher_base()) and dispatch.dispatcher_base() is not dispatch.PyDispatcher:
        call, what = jitted, "numfn.jit"
    else:
        call, what = implementation("dispatcher", f1, args), "dispatcher"
    ours = per_call_seconds(call, args)
    numpy_time = per_call_seconds(f1, args)
    print(f"\n{what}: {ours * 1e9:.0f} ns per call; numpy: {numpy_time * 1e9:.0f} ns; "
          f"ratio {ours / numpy_time:.2f}")
    assert ours <= 0.45e-6, f"{what} call takes {ours * 1e9:.0f} ns (target 450 ns)"
    assert ours <= 0.6 * numpy_time, f"{what} call takes {ours / numpy_time:.2f} x NumPy's time (target 0.6)"
