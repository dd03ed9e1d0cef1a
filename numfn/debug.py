"""Debugging switches, read from the environment when used (so tests and users may change them at run time).

DEBUG=1 compile events and timings, 2 per-kernel timings, 3 the schedule, 4 generated source, 5 UOp graphs.
NUMFN_BACKEND=llvm|c chooses the default backend; NOOPT=1 turns kernel optimizations off.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable


def level() -> int:
    try:
        return int(os.environ.get("DEBUG", "0") or 0)
    except ValueError:
        return 0


def log(at: int, message: str | Callable[[], str]) -> None:
    """Print `message` (or its thunk's result, computed only when printed) to stderr when DEBUG >= at."""
    if level() >= at:
        print(message() if callable(message) else message, file=sys.stderr, flush=True)


def default_backend() -> str:
    return os.environ.get("NUMFN_BACKEND", "llvm") or "llvm"


def noopt() -> bool:
    return os.environ.get("NOOPT", "0") not in ("", "0")
