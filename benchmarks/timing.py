"""Timing helpers the benchmark scripts share (their pytest-benchmark tests time through pytest-benchmark)."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds(fn: Callable, args: Sequence, repeat: int) -> float:
    """The median time of `repeat` calls fn(*args)."""
    return median_times([fn], args, repeat, 1)[0]


def median_times(fns: Sequence[Callable], args: Sequence, rounds: int, calls: int,
                 clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Per function, the median over `rounds` of the time per call of `calls` calls. The functions take turns in
    every round, so each sees the same machine load (the way to compare numfn with NumPy on a shared machine).
    `clock=time.process_time` counts the process's CPU time instead (all its threads'): on a machine loaded by
    other processes, single-threaded code is then timed without the time it waited for a core."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, f in enumerate(fns):
            t0 = clock()
            for _ in range(calls): f(*args)
            times[i].append((clock() - t0) / calls)
    return [statistics.median(t) for t in times]
