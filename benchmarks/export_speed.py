"""Exported C (numfn.export, single-threaded) against numfn's jitted single-threaded call, on the demo's functions
and inputs (numfn/tools/demo.py): `python benchmarks/export_speed.py`.

The export is built with numfn's own C flags (-O3 -march=native ...) and timed by its generated driver (the median
of clock_gettime around each call, no Python); numfn is timed from Python (the median of perf_counter around each
call, so its call overhead, about a microsecond, is included) with set_num_threads(1), on the C backend (the same
kernels: traced without BLAS, as the export is, so products are the same generated loops) and, for reference, with
BLAS on the C and the default LLVM backend."""
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


def main() -> int:
    numfn.set_num_threads(1)
    rng = np.random.default_rng(0)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
