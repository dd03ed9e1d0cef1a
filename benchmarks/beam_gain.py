"""BEAM's gain: each program compiled with the fixed heuristics and with `beam=2`, in one process.

    NUMFN_BLAS=none python benchmarks/beam_gain.py [name ...]     (NUMFN_THREADS=1 for one thread)

For each program it prints a row of docs/performance.md's BEAM table: the fastest of 30 alternating calls of the
two versions (ms), their ratio, the ratio of the medians, and the first call's time of each (s: compilation, and
for beam=2 the search). Use a fresh NUMFN_CACHE_DIR, or the search's choices (and programs) come from the cache.
NUMFN_BLAS=none keeps the matrix products generated code, whose register tiles the search sizes.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import numfn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import WORKLOADS  # noqa: E402 - next to this file


def colsum(a):
    return a.sum(axis=0)


def matvec(a, x):
    return a @ x


def matmul(a, b):
    return a @ b


def programs():
    r = np.random.default_rng(0)
    out = [(w.name, w.fn, w.make_inputs(np.random.default_rng(0))) for w in WORKLOADS
           if w.name in ("fused_elementwise", "sum_squares", "softmax_rows", "mlp", "laplacian", "det3_batched")]
    out += [("colsum", colsum, (r.standard_normal((2048, 2048)).astype(np.float32),)),
            ("matvec", matvec, (r.standard_normal((2048, 1024)), r.standard_normal(1024))),
            ("matmul_generated", matmul, (r.standard_normal((512, 512)).astype(np.float32),
                                          r.standard_normal((512, 512)).astype(np.float32)))]
    return out


def main(only: list[str]) -> None:
    ratios = []
    for name, fn, args in programs():
        if only and name not in only: continue
        plain, tuned = numfn.jit(fn), numfn.jit(fn, beam=2)
        t0 = time.perf_counter()
        want = plain(*args)
        compile_plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = tuned(*args)
        compile_tuned = time.perf_counter() - t0
        same = np.allclose(got, want, rtol=1e-3, atol=1e-3)
        a, b = [], []
        for _ in range(30):
            t = time.perf_counter()
            plain(*args)
            a.append(time.perf_counter() - t)
            t = time.perf_counter()
            tuned(*args)
            b.append(time.perf_counter() - t)
        ratios.append(min(a) / min(b))
        print(f"| {name} | {min(a) * 1e3:.3f} | {min(b) * 1e3:.3f} | {min(a) / min(b):.2f}x / "
              f"{np.median(a) / np.median(b):.2f}x | {compile_plain:.2f} / {compile_tuned:.2f} |"
              f"{'' if same else ' RESULTS DIFFER'}", flush=True)
    if ratios: print(f"geometric mean of the speedups (fastest calls): {np.exp(np.mean(np.log(ratios))):.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
