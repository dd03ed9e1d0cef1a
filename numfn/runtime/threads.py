"""How many threads numfn uses, and the thread pool's address for compiled programs.

Kernels with a large parallel outer loop split it across the persistent pool of the native extension
(runtime/csrc/pool.c); svmap splits large batches across Python threads that each run native code. NUMFN_THREADS
sets the count (1 disables threads; default: the CPUs this process may run on); `numfn.set_num_threads(n)`
changes it at any time (a running parallel region finishes with the threads it started with). Without the native
extension there is one thread, and the count says so. The pool's workers are created on first use, not at import.
"""
from __future__ import annotations

import os

from numfn import config
from numfn.runtime import extensions
from numfn.locks import lock

# ALU operations below which work stays on the calling thread: waking other threads costs about as much as this
# much work. One threshold for a kernel's parallel loop (decided when it is compiled) and svmap's batch split.
PARALLEL_MIN_OPS = 1 << 18

_lock = lock()
_count: int | None = None   # the count in use, once the pool is configured


def _configure(n: int) -> int:
    global _count
    n = max(1, int(n))
    native = extensions.native
    _count = native.set_threads(n) if native is not None else 1
    for listener in _listeners: listener(_count)
    return _count


_listeners: list = []


def on_change(listener) -> None:
    """Call `listener(count)` whenever the thread count is set (another pool that follows numfn's: BLAS's)."""
    _listeners.append(listener)


def thread_count() -> int:
    """The number of threads numfn uses (1 without the native extension)."""
    if _count is None:
        with _lock:
            if _count is None: _configure(config.threads() or available_cpus())
    assert _count is not None   # _configure set it
    return _count


def available_cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def set_num_threads(n: int) -> int:
    """Use `n` threads from now on (1: no threads); safe to call at any time, from any thread.

    Args:
        n: the number of threads for parallel kernels and svmap (at least 1).

    Returns:
        The number of threads in use: 1 without numfn's native extension (kernels run on the calling thread).

    Example:
        in_use = numfn.set_num_threads(1)
        assert in_use == 1
    """
    with _lock:
        return _configure(n)


def parallel_for_address() -> int:
    """What compiled programs get in their buffer table's last slot: the pool's parallel_for, or 0 (NULL) when
    kernels run serially (one thread, or no native extension)."""
    native = extensions.native
    if native is None: return 0
    if _count is None: thread_count()
    return native.parallel_for_address()
