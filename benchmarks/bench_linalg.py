"""Linear algebra: numfn (BLAS/LAPACK extern calls and generated code) next to NumPy on the same inputs.

    python benchmarks/bench_linalg.py            # the table of docs/performance.md
    python benchmarks/bench_linalg.py --quick    # smaller repeat counts
    python benchmarks/bench_linalg.py 10^4       # only the rows whose name contains the words given
    OPENBLAS_NUM_THREADS=1 NUMFN_THREADS=1 python benchmarks/bench_linalg.py --cpu
                                                 # CPU time instead of wall time (single-threaded runs on a
                                                 # machine other jobs load: the time spent waiting for a core left out)

Each row times NumPy and numfn alternately (rounds of a few calls each, so both see the same machine load) and
reports the median time per call, GFLOP/s where the operation count is standard (2mnk for a product, n^3/3 for
Cholesky, 2n^3/3 for an LU solve) and speedup = NumPy's time / numfn's time (above 1: numfn is faster). Every numfn
result is checked against NumPy's first.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import numfn
from numfn.runtime import blas, threads
from timing import median_times


def mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    z = h @ w2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _rng_mats(rng, dtype, *shapes):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def workloads(rng):
    out = []
    for dt in (np.float32, np.float64):
        for n in (64, 256, 512, 2048):
            a, b = _rng_mats(rng, dt, (n, n), (n, n))
            out.append((f"matmul {np.dtype(dt).name} {n}x{n}", lambda a, b: a @ b, (a, b), 2.0 * n ** 3))
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    out.append(("x @ x.T float32 256x1024", lambda x: x @ x.T, (x,), 2.0 * 256 * 256 * 1024))
    x, w1, b1, w2, b2 = _rng_mats(rng, np.float32, (256, 784), (784, 256), (256,), (256, 10), (10,))
    w1 *= 0.05
    w2 *= 0.05
    out.append(("MLP 256x784 -> 256 -> 10 float32", mlp, (x, w1, b1, w2, b2),
                2.0 * 256 * (784 * 256 + 256 * 10)))
    a = rng.standard_normal((10_000, 8, 8)) + 8 * np.eye(8)
    b = rng.standard_normal((10_000, 8, 1))
    out.append(("solve 10^4 x (8x8) float64", lambda a, b: np.linalg.solve(a, b), (a, b), 10_000 * 2 / 3 * 8 ** 3))
    b4 = rng.standard_normal((10_000, 8, 4))
    out.append(("solve 10^4 x (8x8), 4 rhs float64", lambda a, b: np.linalg.solve(a, b), (a, b4),
                10_000 * (2 / 3 * 8 ** 3 + 2 * 4 * 8 ** 2)))
    out.append(("solve 10^4 x (8x8) float32", lambda a, b: np.linalg.solve(a, b),
                (a.astype(np.float32), b.astype(np.float32)), 10_000 * 2 / 3 * 8 ** 3))
    out.append(("inv 10^4 x (8x8) float64", np.linalg.inv, (a,), 10_000 * 2 * 8 ** 3))
    out.append(("det 10^4 x (8x8) float64", np.linalg.det, (a,), 10_000 * 2 / 3 * 8 ** 3))
    a3 = rng.standard_normal((10_000, 3, 3)) + 3 * np.eye(3)
    out.append(("solve 10^4 x (3x3) float64", lambda a, b: np.linalg.solve(a, b), (a3, b[:, :3]),
                10_000 * 2 / 3 * 3 ** 3))
    n = 512
    a = rng.standard_normal((n, n))
    spd = a @ a.T + n * np.eye(n)
    rhs = rng.standard_normal((n, 1))
    out.append(("solve 512x512 float64", lambda a, b: np.linalg.solve(a, b), (a, rhs), 2 / 3 * n ** 3))
    out.append(("cholesky 512x512 float64", np.linalg.cholesky, (spd,), n ** 3 / 3))
    out.append(("eigh 512x512 float64", np.linalg.eigh, (spd,), None))
    out.append(("svd 512x512 float64", np.linalg.svd, (a,), None))
    return out


def _check(name, got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    if name.startswith(("eigh", "svd")):   # signs of vectors may differ: compare the values only
        got, want = got[:2] if name.startswith("svd") else got[:1], want[:2] if name.startswith("svd") else want[:1]
        got, want = (got[-1],), (want[-1],)
    for g, w in zip(got, want):
        scale = float(np.abs(w).max()) if np.size(w) else 1.0
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3 * scale, err_msg=name)


def main(quick: bool = False, only: str = "", cpu: bool = False) -> None:
    rng = np.random.default_rng(0)
    print(f"numfn {numfn.__version__}, NumPy {np.__version__}, BLAS: "
          f"{getattr(blas.interface(), 'identity', 'none')}, numfn threads "
          f"{threads.thread_count()}")
    print(f"{'workload':36s} {'NumPy':>11s} {'numfn':>11s} {'GFLOP/s NumPy':>14s} {'GFLOP/s numfn':>14s} "
          f"{'speedup':>8s}")
    for name, fn, args, flops in workloads(rng):
        if only not in name: continue
        jitted = numfn.jit(fn)
        _check(name, jitted(*args), fn(*args))
        t0 = time.perf_counter()
        fn(*args)
        once = time.perf_counter() - t0
        calls = max(1, min(200, int(0.02 / max(once, 1e-7))))
        rounds = 3 if quick else (7 if once < 0.5 else 3)
        t_np, t_nf = median_times([fn, jitted], args, rounds, calls, time.process_time if cpu else time.perf_counter)
        gf = (lambda t, flops=flops: f"{flops / t / 1e9:14.1f}") if flops else (lambda t: f"{'':>14s}")
        print(f"{name:36s} {t_np * 1e3:9.3f}ms {t_nf * 1e3:9.3f}ms {gf(t_np)} {gf(t_nf)} {t_np / t_nf:7.2f}x",
              flush=True)


if __name__ == "__main__":
    words = [a for a in sys.argv[1:] if not a.startswith("--")]
    main("--quick" in sys.argv, " ".join(words), "--cpu" in sys.argv)
