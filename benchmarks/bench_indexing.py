"""Indexing and mutation next to NumPy on the same inputs: a gather of 10^6 random indices, the mean of the
selected part of 10^7 elements, np.add.at of 10^6 values into 10^4 bins, a histogram of 10^7 values into 100
bins, and a 2-D stencil written into its argument (1024^2). Every numfn result is checked against NumPy's.

    python -m pytest benchmarks/bench_indexing.py --benchmark-group-by=group
    python benchmarks/bench_indexing.py          # a table of medians and speedups (NumPy time / numfn time)

The functions that write into their argument (add_at, stencil) are timed on the same array call after call, as a
time-stepping loop would run them (in the table: ten calls a turn, NumPy's and numfn's turns alternating).
"""

import numpy as np
import pytest

import numfn
from timing import median_times


def gather(x, idx):
    return x[idx]


def masked_mean(x):
    return x[x > 0].mean()


def add_at(bins, idx, v):
    np.add.at(bins, idx, v)


def histogram(x):
    return np.histogram(x, bins=100, range=(-4.0, 4.0))[0]


def stencil(u):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def _inputs(name, rng):
    if name == "gather": return (rng.random(10**6), rng.integers(0, 10**6, 10**6))
    if name == "masked_mean": return (rng.standard_normal(10**7),)
    if name == "add_at": return (np.zeros(10**4), rng.integers(0, 10**4, 10**6), rng.random(10**6))
    if name == "histogram": return (rng.standard_normal(10**7),)
    if name == "stencil": return (rng.random((1024, 1024)),)
    raise KeyError(name)


CASES = {"gather": gather, "masked_mean": masked_mean, "add_at": add_at, "histogram": histogram,
         "stencil": stencil}
MUTATES = {"add_at": 0, "stencil": 0}   # the argument the function writes into


def _check(name, fn, jitted, args):
    ours, theirs = [a.copy() for a in args], [a.copy() for a in args]
    got, want = jitted(*ours), fn(*theirs)
    if name in MUTATES: got, want = ours[MUTATES[name]], theirs[MUTATES[name]]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("library", ["numpy", "numfn"])
@pytest.mark.parametrize("name", list(CASES))
def test_indexing(benchmark, name, library):
    fn = CASES[name]
    args = _inputs(name, np.random.default_rng(0))
    benchmark.group = name
    if library == "numfn":
        jitted = numfn.jit(fn)
        _check(name, fn, jitted, args)
        fn = jitted
    benchmark(fn, *args)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    print(f"{'case':<12} {'NumPy ms':>9} {'numfn ms':>9} {'speedup':>8}")
    for name, fn in CASES.items():
        args = _inputs(name, rng)
        jitted = numfn.jit(fn)
        _check(name, fn, jitted, args)
        repeat = 7 if name in ("masked_mean", "histogram") else 21
        # taking turns, so both see the same load; a function that writes its argument runs 10 calls a turn, as in
        # a time-stepping loop (one call after the other library's would time the data coming back into cache)
        calls = 10 if name in MUTATES else 1
        t_np, t_fn = median_times([fn, jitted], args, repeat, calls)
        print(f"{name:<12} {t_np * 1e3:9.2f} {t_fn * 1e3:9.2f} {t_np / t_fn:7.2f}x")
