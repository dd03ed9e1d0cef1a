"""Sorting and order statistics next to NumPy on the same inputs: np.sort and np.argsort of 10^6 float64, a batch of
10^5 rows of 16 sorted along the rows, np.median and np.percentile (5, 50, 95) of 10^6 float64, and np.searchsorted
of 10^6 values in 10^6 sorted ones. Every numfn result is checked against NumPy's first (sorts bit for bit against
NumPy's stable sort, which is the order numfn gives for every kind=).

NumPy sorts on one thread; numfn's sorts run a long row on one thread and a batch of rows on its threads. The table
shows numfn on one thread (numfn.set_num_threads(1)) and on the default count.

    python -m pytest benchmarks/bench_sorting.py --benchmark-group-by=group
    python benchmarks/bench_sorting.py        # medians and ratios (numfn time / NumPy time: below 1 is faster)
"""

import numpy as np
import pytest

import numfn
from numfn.runtime.threads import thread_count
from timing import median_seconds


def sort(x):
    return np.sort(x)


def argsort(x):
    return np.argsort(x)


def sort_rows(x):
    return np.sort(x, axis=-1)


def median(x):
    return np.median(x)


def percentile(x):
    return np.percentile(x, [5.0, 50.0, 95.0])


def searchsorted(a, v):
    return np.searchsorted(a, v)


CASES = {"sort": sort, "argsort": argsort, "sort_rows": sort_rows, "median": median, "percentile": percentile,
         "searchsorted": searchsorted}


def _inputs(name, rng):
    if name == "sort_rows": return (rng.standard_normal((10**5, 16)),)
    if name == "searchsorted": return (np.sort(rng.standard_normal(10**6)), rng.standard_normal(10**6))
    return (rng.standard_normal(10**6),)


def _check(name, fn, jitted, args):
    got = jitted(*args)
    if name in ("sort", "sort_rows"): want = np.sort(*args, axis=-1, kind="stable")
    elif name == "argsort": want = np.argsort(*args, kind="stable")
    else: want = fn(*args)
    if name in ("median", "percentile"): np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    else: np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("library", ["numpy", "numfn"])
@pytest.mark.parametrize("name", list(CASES))
def test_sorting(benchmark, name, library):
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
    threads = thread_count()
    print(f"{'case':<13} {'NumPy ms':>9} {'numfn 1 thr':>12} {'ratio':>6} {f'numfn {threads} thr':>12} {'ratio':>6}")
    for name, fn in CASES.items():
        args = _inputs(name, rng)
        jitted = numfn.jit(fn)
        _check(name, fn, jitted, args)
        repeat = 15
        t_np = median_seconds(fn, args, repeat)
        numfn.set_num_threads(1)
        t_one = median_seconds(jitted, args, repeat)
        numfn.set_num_threads(threads)
        t_all = median_seconds(jitted, args, repeat)
        print(f"{name:<13} {t_np * 1e3:9.2f} {t_one * 1e3:12.2f} {t_one / t_np:6.2f} {t_all * 1e3:12.2f} "
              f"{t_all / t_np:6.2f}")
