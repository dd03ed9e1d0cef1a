"""Debugging output, at the level NUMFN_DEBUG (or DEBUG) sets, read when used (see numfn.config).

1 compile events and timings, 2 per-kernel timings, 3 the schedule, 4 generated source, 5 UOp graphs.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from numfn import config


def level() -> int:
    """The debug level: NUMFN_DEBUG, else DEBUG (0 when unset)."""
    return config.debug_level()


def log(at: int, message: str | Callable[[], str]) -> None:
    """Print `message` (or its thunk's result, computed only when printed) to stderr when the level is >= at."""
    if config.debug_level() >= at:
        print(message() if callable(message) else message, file=sys.stderr, flush=True)


def default_backend() -> str:
    """NUMFN_BACKEND: llvm unless set."""
    return config.default_backend()


def noopt() -> bool:
    """NUMFN_NOOPT (or NOOPT): kernel optimizations off."""
    return config.noopt()
