"""numfn's diagnostics, through Python's `logging`: every message goes to the `numfn` logger.

Messages come in five verbosity levels, each logged at its own logging level (so `logging.DEBUG` shows level 1,
and lower logging levels show more):

| level | what | logging level |
|---|---|---|
| 1 | compile events and the time of each stage as it ends; cache hits; BLAS found | `logging.DEBUG` (10) |
| 2 | the time and calls of each kernel, after every call (programs are compiled with timers); slow kernels marked | 9 |
| 3 | the schedule (kernels) and memory plan of every compiled function | 8 |
| 4 | the generated source | 7 |
| 5 | the traced graphs | 6 |

Two ways to see them:

- the shortcut `NUMFN_DEBUG=n` (or `DEBUG=n`): messages up to level n are printed on stderr, one per line, by a
  handler numfn keeps on its logger (it prints only while the variable asks; the variable is read as messages are
  logged, so it may change at run time);
- logging configured in Python: `logging.getLogger("numfn").setLevel(numfn.debug.logging_level(n))` and a handler
  of your own (or `logging.basicConfig(level=...)`).

Each message is shown once whatever the setup: a message the logging configuration enables (the `numfn` logger's
effective level) goes to logging's handlers, and the shortcut prints it only when no handler of the user's would
see it; a message only the shortcut asks for goes to the shortcut alone (not to a root handler whose logger level
says no, as `logging.basicConfig()` at its default WARNING would otherwise print it a second time). A value of
`NUMFN_DEBUG` that is not a level raises ValueError (`numfn.config.debug_level`).

Messages are computed only when some handler will see them (a thunk is called then), so levels 3-5 cost nothing
when off.

Besides: `print(fmt, *args)` and `callback(fn, *args)`, run-time printing and callbacks from compiled code
(made by numfn/trace/callback.py, which registers them in RUN_TIME_HOOKS).
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from numfn import config

logger = logging.getLogger("numfn")

MAX_LEVEL = 5


def logging_level(level: int) -> int:
    """The logging level of numfn's verbosity level `level` (1..5): 1 is logging.DEBUG, each next level one lower."""
    return logging.DEBUG + 1 - level


def environment_level() -> int:
    """The level the shortcut variable asks for: NUMFN_DEBUG, else DEBUG; 0 when unset or not a whole number."""
    return max(0, config.debug_level())


def level() -> int:
    """The verbosity in effect: the shortcut variable's level, or the highest level the `numfn` logger is enabled
    for through logging's own configuration. Level 2 and up change compiled code (kernel timers)."""
    n = environment_level()
    if n >= MAX_LEVEL: return n
    for k in range(MAX_LEVEL, n, -1):
        if logger.isEnabledFor(logging_level(k)): return k
    return n


def log(at: int, message: str | Callable[[], str]) -> None:
    """Log `message` (or its thunk's result, computed only when someone will see it) at verbosity level `at`."""
    configured = logger.isEnabledFor(logging_level(at))
    if not configured and environment_level() < at: return
    text = message() if callable(message) else message
    frame = sys._getframe(1)
    record = logger.makeRecord(logger.name, logging_level(at), frame.f_code.co_filename, frame.f_lineno, text, (),
                               None, frame.f_code.co_name)
    if configured: logger.handle(record)   # the user's handlers, and the shortcut's when none of them sees it
    else: SHORTCUT_HANDLER.handle(record)  # only the variable asks: not to handlers whose loggers' levels say no


def user_handlers_see(record: logging.LogRecord) -> bool:
    """Whether a handler other than the shortcut's, on the `numfn` logger or (while propagating) an ancestor, would
    take `record` by its level (what logging's callHandlers does with it)."""
    node: logging.Logger | None = logger
    while node is not None:
        if any(h is not SHORTCUT_HANDLER and record.levelno >= h.level for h in node.handlers): return True
        node = node.parent if node.propagate else None
    return False


class _ShortcutHandler(logging.Handler):
    """Prints what NUMFN_DEBUG/DEBUG asks for on the stderr of the moment (sys.stderr is looked up for every
    message, so redirections and pytest's capture see it), one message a line, unformatted as numfn always did;
    silent for a message a handler of the user's takes (one copy of each line)."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)

    def filter(self, record: logging.LogRecord) -> bool:
        n = environment_level()
        if n <= 0 or record.levelno < logging_level(n): return False
        return not (logger.isEnabledFor(record.levelno) and user_handlers_see(record))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(record.getMessage() + "\n")
            stream.flush()
        except Exception:   # noqa: BLE001 - logging's rule: a failing handler never breaks the program
            self.handleError(record)


SHORTCUT_HANDLER = _ShortcutHandler()
logger.addHandler(SHORTCUT_HANDLER)


# numfn.debug.print and numfn.debug.callback stage calls in the program being traced, which is the trace layer's
# work: numfn.trace.callback (imported by the package) fills this table, so this module imports nothing upward
RUN_TIME_HOOKS: dict[str, Callable[..., None]] = {}


def print(fmt: str, *args, **kwargs) -> None:  # noqa: A001 - numfn.debug.print, as jax.debug.print
    """Print `fmt.format(*args, **kwargs)` when the compiled code runs, with the run-time values of the arrays
    among the arguments (`jax.debug.print`'s counterpart); outside `jit` it prints at once.

    Inside a loop compiled to a native loop it prints at every iteration, in order; prints run in program order
    among themselves and with other callbacks. Each print is a call from native code into Python: tens of
    microseconds plus a copy of its arrays (see `callback`). The arguments may be containers of arrays (printed as
    such); non-array arguments (strings, objects) are taken as they were while tracing.

    Args:
        fmt: a `str.format` format string.
        *args: the values for its positional fields: traced arrays, NumPy arrays, Python numbers, containers.
        **kwargs: the values for its named fields.

    Example:
        >>> @numfn.jit
        ... def f(x):
        ...     for i in range(3):
        ...         x = x * 2
        ...         numfn.debug.print("step {} x {}", i, x)
        ...     return x
        >>> f(np.ones(2))   # prints "step 0 x [2. 2.]", "step 1 x [4. 4.]", "step 2 x [8. 8.]"
        array([8., 8.])
    """
    RUN_TIME_HOOKS["print"](fmt, *args, **kwargs)


def callback(fn: Callable[..., object], *args, **kwargs) -> None:
    """Call `fn(*args, **kwargs)` when the compiled code runs, its array arguments as NumPy arrays holding their
    run-time values (`jax.debug.callback`'s counterpart); outside `jit` it calls `fn` at once. What `fn` returns
    is ignored; an exception in it is printed on stderr and the program goes on.

    Cost: every call goes from native code into Python (taking the GIL) and copies each array it receives: tens of
    microseconds plus the copies (57 us per iteration of a fori_loop passing one 4-element array to a callback doing
    nothing, on a busy 2-core machine), so a callback inside a hot loop slows it down more than a Python loop would.
    A program calling `callback` is cached on disk like any other: it names the function by module and qualified
    name, and another process loads it from the cache and calls its own function of that name.

    Args:
        fn: the Python function to call.
        *args: its positional arguments: traced arrays (passed as NumPy arrays), other values as they are.
        **kwargs: its keyword arguments.

    Example:
        >>> seen = []
        >>> numfn.jit(lambda x: (numfn.debug.callback(seen.append, x * 2), x + 1)[1])(np.arange(3.0))
        array([1., 2., 3.])
        >>> seen
        [array([0., 2., 4.])]
    """
    RUN_TIME_HOOKS["callback"](fn, *args, **kwargs)


def default_backend() -> str:
    """NUMFN_BACKEND: llvm unless set."""
    return config.default_backend()


def noopt() -> bool:
    """NUMFN_NOOPT (or NOOPT): kernel optimizations off."""
    return config.noopt()


def report_kernel_times(name: str, kernels: list[str], timings, work: list | None = None) -> None:
    """DEBUG=2: the time each kernel took in this call and how often it ran (the program adds to its counters:
    nanoseconds, then calls; they are reset here), and from the kernel's work per call (`work[i]`: operations and
    bytes moved, the scheduler's estimate) its rates, GFLOP/s and GB/s. A kernel that took a good part of the call
    and ran far slower than its work needs (`slow_kernel`) is marked, with the ratio."""
    n = len(kernels)
    total = sum(int(timings[i]) for i in range(n)) or 1
    lines = [f"{name}: kernel times (total, calls, per call, GFLOP/s, GB/s)"]
    for i, k in enumerate(kernels):
        ns, calls = int(timings[i]), int(timings[n + i])
        timings[i] = timings[n + i] = 0
        if " (in the line above)" in k:
            lines.append(f"  {k}")
            continue
        kernel_work = work[i] if work is not None and i < len(work) else None
        line = f"  {k:<24} {ns / 1e3:10.2f} us {calls:8d} x {ns / max(calls, 1) / 1e3:10.2f} us"
        line += kernel_rates(ns, calls, kernel_work)
        slow = slow_kernel(ns, calls, total, kernel_work)
        lines.append(line + (f"   <- {slow:.0f}x slower than its memory traffic and operations need" if slow else ""))
    log(2, "\n".join(lines))


def kernel_rates(ns: int, calls: int, work) -> str:
    """A kernel's GFLOP/s and GB/s columns: its operations and bytes per call over its time per call (operations
    per nanosecond are GFLOP/s, bytes per nanosecond GB/s); none without a work estimate or a measured time."""
    if work is None or calls == 0 or ns <= 0: return ""
    ops, nbytes = work
    per_call = ns / calls
    return f" {ops / per_call:9.3f} GFLOP/s {nbytes / per_call:9.3f} GB/s"


# A kernel's expected time per call at least: its bytes at SLOW_BYTES_PER_NS (a modest single core's streaming
# rate) or its operations at SLOW_OPS_PER_NS (scalar code), whichever is longer. Far above it (SLOW_FACTOR), for
# a kernel taking SLOW_SHARE of the call and SLOW_MIN_NS per call, something runs that should not: work over a
# static bound instead of a window's length, a strided walk over a large array, a kernel repeated per iteration.
SLOW_BYTES_PER_NS, SLOW_OPS_PER_NS, SLOW_FACTOR, SLOW_SHARE, SLOW_MIN_NS = 4.0, 1.0, 8.0, 0.05, 20_000


def slow_kernel(ns: int, calls: int, total_ns: int, work) -> float | None:
    """How many times slower than its work needs a kernel ran (None: not notably, or too little time to say)."""
    if work is None or calls == 0 or ns < SLOW_SHARE * total_ns: return None
    per_call = ns / calls
    ops, nbytes = work
    bound = max(nbytes / SLOW_BYTES_PER_NS, ops / SLOW_OPS_PER_NS, 1.0)
    if per_call < SLOW_MIN_NS or per_call < SLOW_FACTOR * bound: return None
    return per_call / bound
