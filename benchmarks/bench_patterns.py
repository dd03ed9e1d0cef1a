"""Patterns a user brings unchanged (issue 27): NumPy-style code where a compiler can lose to NumPy or to a scalar
loop compiler, each timed under numfn against the same Python code run by NumPy (and by Numba and JAX's jit when
they are importable: a side environment, never a dependency of numfn).

The patterns: the rows of the issue's table (a CSR product as a loop over rows, covariance by columns with windows,
matrix-vector products, a Cholesky with windowed products, dynamic time warping, an IIR filter, an escape-time
fractal, a Cholesky with loops and slices) and patterns found slow while working on them (an edit-distance table,
prefix means over growing windows, a moving average over a sliding window, a histogram by a loop over the data,
a Jacobi iteration with a while on the residual, a search loop that returns from inside).

    python -m pytest benchmarks/bench_patterns.py --benchmark-group-by=group
    python benchmarks/bench_patterns.py [--rounds N] [names...]   # a table: one thread and all threads

Every numfn result is checked against NumPy's before it is timed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest


# ---------------------------------------------------------------------------------------------------------------
# the patterns, written the natural NumPy way

def csr_matvec(vals, cols, rows, x):
    n = rows.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        y[i] = vals[rows[i]:rows[i + 1]] @ x[cols[rows[i]:rows[i + 1]]]
    return y


def covariance(d):
    n, m = d.shape
    c = np.zeros((m, m))
    for i in range(m):
        c[i:, i] = c[i, i:] = d[:, i] @ d[:, i:] / (n - 1)
    return c


def matvec(A, B, x, y):
    return (A @ x) @ A, A.T @ y, A @ x + B @ y


def cholesky_rows(a):
    """Row-oriented Cholesky: each row's entries from windowed products with the rows above."""
    L = np.zeros_like(a)
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            L[i, j] = (a[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
        L[i, i] = np.sqrt(a[i, i] - L[i, :i] @ L[i, :i])
    return L


def cholesky_columns(a):
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        L[j, j] = np.sqrt(a[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def dtw(s, t):
    n, m = s.shape[0], t.shape[0]
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = abs(s[i - 1] - t[j - 1])
            D[i, j] = cost + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m]


def iir(x, a, b):
    y = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        y[i] = b * x[i] + a * y[i - 1]
    return y


def escape_time(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    n = np.zeros(cr.shape, np.int32)
    for _ in range(maxiter):
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        n += zr * zr + zi * zi <= 4
    return n


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return D[n, m]


def prefix_means(x):
    out = np.zeros(x.shape[0])
    for i in range(1, x.shape[0] + 1):
        out[i - 1] = x[:i].sum() / i
    return out


def moving_average(x, w):
    out = np.zeros(x.shape[0] - w + 1)
    for i in range(out.shape[0]):
        out[i] = x[i:i + w].mean()
    return out


def histogram_loop(data, bins):
    counts = np.zeros(bins, np.int64)
    for v in data:
        counts[int(v)] += 1
    return counts


def first_crossing(x, level):
    """The first index where the running sum passes `level`: a scalar loop that returns from inside."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        if s > level:
            return i
    return -1


def jacobi(A, b):
    d = np.diag(A)
    R = A - np.diag(d)
    x = np.zeros_like(b)
    residual = np.abs(A @ x - b).max()
    while residual > 1e-10:
        x = (b - R @ x) / d
        residual = np.abs(A @ x - b).max()
    return x


def _csr(n, nnz, rng):
    rows = np.sort(rng.integers(0, nnz + 1, n + 1))
    rows[0], rows[-1] = 0, nnz
    return rng.standard_normal(nnz), rng.integers(0, n, nnz), rows, rng.standard_normal(n)


def _spd(n, rng):
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _diagonally_dominant(n, rng):
    a = rng.standard_normal((n, n))
    return a + np.diag(np.abs(a).sum(axis=1) + 1)


def inputs(name: str, rng) -> tuple:
    if name == "csr_matvec": return _csr(32768, 65536, rng)
    if name == "covariance": return (rng.standard_normal((1000, 200)),)
    if name == "matvec": return (rng.standard_normal((2000, 2000)), rng.standard_normal((2000, 2000)),
                                 rng.standard_normal(2000), rng.standard_normal(2000))
    if name == "cholesky_rows": return (_spd(120, rng),)
    if name == "cholesky_columns": return (_spd(500, rng),)
    if name == "dtw": return (rng.standard_normal(250), rng.standard_normal(250))
    if name == "iir": return (rng.standard_normal(100_000), 0.9, 0.1)
    if name == "escape_time":
        re_, im = np.meshgrid(np.linspace(-2, 1, 512, dtype=np.float32), np.linspace(-1.5, 1.5, 512, dtype=np.float32))
        return (re_, im, 50)
    if name == "edit_distance": return (rng.integers(0, 4, 200), rng.integers(0, 4, 220))
    if name == "prefix_means": return (rng.standard_normal(5000),)
    if name == "moving_average": return (rng.standard_normal(100_000), 64)
    if name == "histogram_loop": return (rng.integers(0, 64, 20_000).astype(np.float64), 64)
    if name == "jacobi": return (_diagonally_dominant(500, rng), rng.standard_normal(500))
    if name == "first_crossing": return (rng.random(1_000_000), 400_000.0)   # passed near i = 800,000
    raise KeyError(name)


# name -> (function, static argument positions)
PATTERNS = {
    "csr_matvec": (csr_matvec, ()), "covariance": (covariance, ()), "matvec": (matvec, ()),
    "cholesky_rows": (cholesky_rows, ()), "cholesky_columns": (cholesky_columns, ()), "dtw": (dtw, ()),
    "iir": (iir, ()), "escape_time": (escape_time, (2,)), "edit_distance": (edit_distance, ()),
    "prefix_means": (prefix_means, ()), "moving_average": (moving_average, (1,)),
    "histogram_loop": (histogram_loop, (1,)), "jacobi": (jacobi, ()), "first_crossing": (first_crossing, ()),
}


def check(name: str, got, want) -> None:
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        w = np.asarray(w)
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9 * max(1.0, float(np.abs(w).max(initial=0))),
                                   err_msg=name)


def jitted(name: str):
    import numfn
    fn, static = PATTERNS[name]
    return numfn.jit(fn, static_argnums=static)


@pytest.mark.parametrize("library", ["numpy", "numfn"])
@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern(benchmark, name, library):
    args = inputs(name, np.random.default_rng(0))
    benchmark.group = name
    fn = PATTERNS[name][0]
    if library == "numfn":
        fn = jitted(name)
        check(name, fn(*args), PATTERNS[name][0](*args))
    benchmark.pedantic(fn, args, rounds=3, iterations=1)


# ---------------------------------------------------------------------------------------------------------------
# the table (python benchmarks/bench_patterns.py): each thread count in a process of its own

def _peers(name: str) -> dict:
    """Numba's and JAX's jit of the same function where installed and able to compile it unchanged."""
    out = {}
    fn, static = PATTERNS[name]
    try:
        import numba
        out["numba"] = numba.njit(fn)
    except Exception: pass   # noqa: E701 - not installed (numfn never depends on it)
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        jitted = jax.jit(fn, static_argnums=static)
        out["jax"] = lambda *a: jax.block_until_ready(jitted(*a))   # JAX runs asynchronously: time the result
    except Exception: pass   # noqa: E701
    return out


def measure(names: list[str], rounds: int) -> dict:
    from timing import median_times
    rng = np.random.default_rng(0)
    results = {}
    for name in names:
        args = inputs(name, rng)
        want = PATTERNS[name][0](*args)
        fns = {"numpy": PATTERNS[name][0], "numfn": jitted(name)}
        check(name, fns["numfn"](*args), want)
        for peer, f in _peers(name).items():
            try:
                check(name, f(*args), want)
                fns[peer] = f
            except Exception as e:   # a peer that cannot run the code unchanged gets no column
                print(f"# {peer} cannot run {name}: {type(e).__name__}", file=sys.stderr)
        calls = 1 if name in ("dtw", "edit_distance", "cholesky_rows", "histogram_loop", "csr_matvec") else 3
        times = median_times(list(fns.values()), args, rounds, calls)
        results[name] = dict(zip(fns, times))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="patterns to run (default all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.names or list(PATTERNS)
    if args.worker:
        print(json.dumps(measure(names, args.rounds)))
        return
    columns = {}
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for threads in ("1", str(cpus)):
        env = dict(os.environ, NUMFN_THREADS=threads, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
                   NUMBA_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, __file__, "--worker", "--rounds", str(args.rounds), *names],
                             env=env, capture_output=True, text=True, check=True)
        columns[threads] = json.loads(out.stdout.strip().splitlines()[-1])
    peers = sorted({p for col in columns.values() for r in col.values() for p in r} - {"numpy", "numfn"})
    head = "| pattern | NumPy (1 thread) | numfn (1 thread) | numfn / NumPy, 1 thread | numfn / NumPy, " \
        f"{cpus} threads |" + "".join(f" {p} / NumPy, 1 thread |" for p in peers)
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in names:
        one, all_ = columns["1"][name], columns[str(cpus)][name]
        row = f"| {name} | {one['numpy'] * 1e3:.2f} ms | {one['numfn'] * 1e3:.3f} ms | " \
              f"{one['numpy'] / one['numfn']:.1f}x | {all_['numpy'] / all_['numfn']:.1f}x |"
        row += "".join(f" {one['numpy'] / one[p]:.1f}x |" if p in one else " - |" for p in peers)
        print(row)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
