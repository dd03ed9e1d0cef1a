"""numfn's diagnostics, through Python's `logging`: every message goes to the `numfn` logger.

Messages come in five verbosity levels, each logged at its own logging level (so `logging.DEBUG` shows level 1,
and lower logging levels show more):

| level | what | logging level |
|---|---|---|
| 1 | compile events and the time of each stage as it ends; cache hits; BLAS found | `logging.DEBUG` (10) |
| 2 | the time each kernel took, after every call (programs are compiled with timers) | 9 |
| 3 | the schedule (kernels) and memory plan of every compiled function | 8 |
| 4 | the generated source | 7 |
| 5 | the traced graphs | 6 |

Two ways to see them:

- the shortcut `NUMFN_DEBUG=n` (or `DEBUG=n`): messages up to level n are printed on stderr, one per line, by a
  handler numfn keeps on its logger (it prints only while the variable asks; the variable is read as messages are
  logged, so it may change at run time);
- logging configured in Python: `logging.getLogger("numfn").setLevel(numfn.debug.logging_level(n))` and a handler
  of your own (or `logging.basicConfig`). Configure one or the other: with both, a message prints twice.

Messages are computed only when some handler will see them (a thunk is called then), so levels 3-5 cost nothing
when off.
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
    shortcut = environment_level() >= at
    if not shortcut and not logger.isEnabledFor(logging_level(at)): return
    text = message() if callable(message) else message
    frame = sys._getframe(1)
    record = logger.makeRecord(logger.name, logging_level(at), frame.f_code.co_filename, frame.f_lineno, text, (),
                               None, frame.f_code.co_name)
    # handle() passes the record to the handlers whatever the logger's level (numfn never sets it: it is the user's)
    logger.handle(record)


class _ShortcutHandler(logging.Handler):
    """Prints what NUMFN_DEBUG/DEBUG asks for on the stderr of the moment (sys.stderr is looked up for every
    message, so redirections and pytest's capture see it), one message a line, unformatted as numfn always did."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)

    def filter(self, record: logging.LogRecord) -> bool:
        n = environment_level()
        return n > 0 and record.levelno >= logging_level(n)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(record.getMessage() + "\n")
            stream.flush()
        except Exception:   # noqa: BLE001 - logging's rule: a failing handler never breaks the program
            self.handleError(record)


SHORTCUT_HANDLER = _ShortcutHandler()
logger.addHandler(SHORTCUT_HANDLER)


def default_backend() -> str:
    """NUMFN_BACKEND: llvm unless set."""
    return config.default_backend()


def noopt() -> bool:
    """NUMFN_NOOPT (or NOOPT): kernel optimizations off."""
    return config.noopt()
