"""Exported C (numfn.export, single-threaded) against numfn's jitted single-threaded call, on the demo's functions
and inputs (numfn/tools/demo.py): `python benchmarks/export_speed.py`.

The export is built with numfn's own C flags (-O3 -march=native ...) and timed by its generated driver (the median
of clock_gettime around each call, no Python); numfn is timed from Python (the median of perf_counter around each
call, so its call overhead, about a microsecond, is included) with set_num_threads(1), on the C backend (the same
kernels: traced without BLAS, as the export is, so products are the same generated loops) and, for reference, with
BLAS on the C and the default LLVM backend.

A second table times linear algebra (numfn.export.linalg): the portable C routines and the system's LAPACKE/OpenBLAS
(blas="system", where installed) against numfn's call of LAPACK; a third, an export with threads=2 against the
single-threaded export. `--linalg-only` skips the demo's table."""
from __future__ import annotations

import sys
import tempfile
import time

import numpy as np

import numfn
from numfn import config
from numfn.export import ExportError, driver
from numfn.tools import demo


def median_call(fn, args, budget: float = 0.3) -> float:
    fn(*args)
    times = []
    start = time.perf_counter()
    while len(times) < 20 or (time.perf_counter() - start < budget and len(times) < 20000):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:10.2f} us"


def solve(a, b):
    return np.linalg.solve(a, b)


def eigh(s):
    return np.linalg.eigh(s)


def cholesky_solve(s, b):
    c = np.linalg.cholesky(s)
    return c @ (c.T @ b)


def qr(a):
    return np.linalg.qr(a)


def svd(a):
    return np.linalg.svd(a, full_matrices=False)


def heavy_rows(x, y):
    z = np.tanh(x) * y + np.exp(-x * x)
    return z, z.sum(axis=1)


def export_time(fn, args, tmp: str, **options) -> float | None:
    """Seconds per call of the export (its driver's median), None where it cannot be built (no system LAPACKE)."""
    import subprocess
    exported = numfn.export(fn, *args, dir=tmp, **options)
    flags = driver.NUMFN_FLAGS + (("-pthread",) if options.get("threads", 1) > 1 else ())
    try:
        exe = driver.build(exported, flags=flags)
    except subprocess.CalledProcessError:
        return None
    _, _, ns = driver.run(exported, exe, list(args), repeats=1)
    repeats = int(max(10, min(20000, 0.3e9 / max(ns, 1.0))))
    return driver.run(exported, exe, list(args), repeats=repeats)[2] * 1e-9


def linalg_table(rng) -> None:
    n = 128
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    s = a @ a.T
    cases = [("solve 128", solve, [a, rng.standard_normal((n, 4))]), ("eigh 128", eigh, [s]),
             ("cholesky+gemm 128", cholesky_solve, [s, rng.standard_normal((n, 8))]), ("qr 128x96", qr, [a[:, :96]]),
             ("svd 128x96", svd, [a[:, :96]])]
    print(f"\n{'linear algebra':<18} {'portable C':>13} {'system LAPACK':>13} {'numfn (LAPACK)':>15}")
    for name, fn, args in cases:
        with tempfile.TemporaryDirectory() as t1, tempfile.TemporaryDirectory() as t2:
            portable = export_time(fn, args, t1)
            system = export_time(fn, args, t2, blas="system")
        t_numfn = median_call(numfn.jit(fn, backend="c"), args)
        print(f"{name:<18} {fmt(portable or 0)} {fmt(system) if system else '   (none)    ':>13} {fmt(t_numfn)}")
        sys.stdout.flush()
    x, y = rng.standard_normal((1024, 1024)), rng.standard_normal((1024, 1024))
    with tempfile.TemporaryDirectory() as t1, tempfile.TemporaryDirectory() as t2:
        one, two = export_time(heavy_rows, [x, y], t1), export_time(heavy_rows, [x, y], t2, threads=2)
    print(f"\nthreads: heavy_rows (1024x1024): 1 thread {fmt(one or 0)}, 2 threads {fmt(two or 0)}")


def main() -> int:
    numfn.set_num_threads(1)
    rng = np.random.default_rng(0)
    if "--linalg-only" in sys.argv[1:]:
        linalg_table(rng)
        return 0
    print(f"{'function':<18} {'export C':>13} {'numfn C':>13} {'export/numfn':>13}   with BLAS: {'numfn C':>13} "
          f"{'numfn LLVM':>13}")
    for name, fn, args in demo._inputs(rng):   # noqa: SLF001 - the demo's own inputs
        with tempfile.TemporaryDirectory() as tmp:
            try:
                exported = numfn.export(fn, *args, name=name, dir=tmp)
            except ExportError as e:
                print(f"{name:<18} refused: {str(e).split(':', 1)[1].strip()[:90]}")
                continue
            exe = driver.build(exported, flags=driver.NUMFN_FLAGS)
            _, _, ns = driver.run(exported, exe, list(args), repeats=1)
            repeats = int(max(20, min(20000, 0.3e9 / max(ns, 1.0))))
            _, _, ns = driver.run(exported, exe, list(args), repeats=repeats)
        same = numfn.jit(fn, backend="c")
        with config.overriding("NUMFN_BLAS", "none"):   # traced (on the first call) as the export is
            same(*args)
        t_same = median_call(same, args)
        t_c = median_call(numfn.jit(fn, backend="c"), args)
        t_llvm = median_call(numfn.jit(fn, backend="llvm"), args)
        print(f"{name:<18} {fmt(ns * 1e-9)} {fmt(t_same)} {ns * 1e-9 / t_same:12.2f}x   {' ' * 10} {fmt(t_c)} "
              f"{fmt(t_llvm)}")
        sys.stdout.flush()
    linalg_table(rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
