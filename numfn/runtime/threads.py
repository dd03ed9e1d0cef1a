"""How many threads numfn uses, and the thread pool's address for compiled programs.

Kernels with a large parallel outer loop split it across a persistent pool (runtime/_dispatch.c); svmap splits
large batches across Python threads that each run native code. NUMFN_THREADS sets the count (1 disables threads;
default: the CPUs this process may run on); `numfn.set_num_threads(n)` changes it at run time.
"""
from __future__ import annotations

import os

_count: int | None = None


def thread_count() -> int:
    """The number of threads numfn uses."""
    global _count
    if _count is None:
        env = os.environ.get("NUMFN_THREADS", "").strip()
        if env:
            _count = max(1, int(env))
        else:
            _count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return _count


def set_num_threads(n: int) -> int:
    """Use `n` threads from now on (1: no threads). Returns the number in use (without the C extension that
    hosts the pool, kernels run on the calling thread)."""
    global _count
    _count = max(1, int(n))
    from numfn.runtime import dispatch
    module = dispatch.loaded_extension()
    if module is not None: _count = module.set_threads(_count) if _count > 1 else module.set_threads(1)
    from numfn.runtime import blas
    blas.set_threads(_count)   # BLAS's own pool follows numfn's (it runs while numfn's is idle)
    return _count


def parallel_for_address() -> int:
    """What compiled programs get in their buffer table's last slot: the pool's parallel_for, or 0 (NULL) when
    there is no pool (threads off, or no C extension) and kernels run serially."""
    from numfn.runtime import dispatch
    module = dispatch.loaded_extension()
    return module.parallel_for_address() if module is not None else 0
