"""Measure the LocalCluster workload of docs/scipy-stack.md: map_blocks of a compute-bound function on 1 and 2
worker processes (one thread per worker for Dask and for numfn), numfn blocks against NumPy blocks.

    python tools/cluster_scaling.py [--runs 3] [--rows 8000] [--iterations 16]

Prints, per worker count, the best of `runs` timed runs after a warm-up run (which compiles, or loads from the disk
cache), the 2-vs-1 speedups, each worker's compilations, and the time of the same blocks run serially in this
process (the pure compute: what the cluster adds on top of it is scheduling, transfer and per-task overhead).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ITERATIONS = 16


def work(b):
    for _ in range(ITERATIONS):
        b = np.sin(b) * np.cos(b) + 0.5 * b
    return b


def main(argv: list[str]) -> int:
    global ITERATIONS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--iterations", type=int, default=16)
    parser.add_argument("--skip-numpy", action="store_true")
    args = parser.parse_args(argv)
    ITERATIONS = args.iterations
    os.environ["NUMFN_THREADS"] = "1"
    import dask.array as da
    from distributed import Client, LocalCluster

    import numfn
    fast_work = numfn.jit(work)
    chunk = args.rows // 16
    results: dict[tuple[str, int], float] = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          env={"NUMFN_THREADS": "1", "OMP_NUM_THREADS": "1"}) as cluster, Client(cluster) as client:
            x = client.persist(da.random.default_rng(0).standard_normal((args.rows, 1000), chunks=(chunk, 1000)))
            for name, fn in (("numfn", fast_work), ("numpy", work)):
                if name == "numpy" and args.skip_numpy: continue
                graph = da.map_blocks(fn, x, dtype=float).sum()
                graph.compute()   # warm-up: the workers compile (or load) and import
                times = []
                cpu_before = sum(client.run(time.process_time).values())
                sched_before = client.run_on_scheduler(time.process_time)
                for _ in range(args.runs):
                    t = time.perf_counter()
                    graph.compute()
                    times.append(time.perf_counter() - t)
                cpu = (sum(client.run(time.process_time).values()) - cpu_before) / args.runs
                sched = (client.run_on_scheduler(time.process_time) - sched_before) / args.runs
                results[name, workers] = min(times)
                print(f"{name} {workers} worker(s): " + ", ".join(f"{s:.2f}" for s in times) + " s; CPU per run: "
                      f"workers {cpu:.2f} s, scheduler {sched:.2f} s", flush=True)
            compiles = client.run(lambda: __import__("numfn").runtime.compile_count)
            print(f"  compilations per worker: {sorted(compiles.values())}", flush=True)
    block = np.random.default_rng(0).standard_normal((chunk, 1000))
    fast_work(block)
    numfn.set_num_threads(1)
    t, c = time.perf_counter(), time.process_time()
    for _ in range(16): fast_work(block)
    serial, serial_cpu = time.perf_counter() - t, time.process_time() - c
    print(f"numfn serial, 16 blocks in this process: {serial:.2f} s ({serial_cpu:.2f} s of CPU)")
    for name in ("numfn", "numpy"):
        if (name, 2) in results:
            print(f"{name}: 1 worker {results[name, 1]:.2f} s, 2 workers {results[name, 2]:.2f} s, "
                  f"2 vs 1 {results[name, 1] / results[name, 2]:.2f}x")
    if ("numpy", 2) in results:
        print(f"numfn vs numpy: {results['numpy', 1] / results['numfn', 1]:.2f}x (1 worker), "
              f"{results['numpy', 2] / results['numfn', 2]:.2f}x (2 workers)")
    print(f"load average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
