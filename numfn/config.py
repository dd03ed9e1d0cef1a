"""numfn's environment variables, all read here, with one parser for switches.

Most are read when used, so tests and users may change them at run time; the ones that select which native
extensions to load are read once, when numfn is imported.
"""
from __future__ import annotations

import os

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def flag(name: str, default: bool = False) -> bool:
    """Whether switch `name` is on: 1, true, yes or on (any case) turn it on; 0, false, no, off or empty turn it
    off; unset gives `default`. Anything else is on (a value was given, and it is not one that says off)."""
    raw = os.environ.get(name)
    if raw is None: return default
    return raw.strip().lower() not in FALSE_WORDS


# ---- native extensions (read at import) ---------------------------------------------------------------------------

def no_native_extension() -> bool:
    """NUMFN_NO_NATIVE_EXT=1: do not load the thread pool extension (simulates an install without a C compiler)."""
    return flag("NUMFN_NO_NATIVE_EXT")


def no_dispatch_extension() -> bool:
    """NUMFN_NO_DISPATCH_EXT=1: do not load the fast call extension; every call takes the Python path."""
    return flag("NUMFN_NO_DISPATCH_EXT")


# ---- threads ------------------------------------------------------------------------------------------------------

def threads() -> int | None:
    """NUMFN_THREADS: the number of threads for parallel kernels and svmap (1: none); None when unset or invalid."""
    raw = os.environ.get("NUMFN_THREADS", "").strip()
    if not raw: return None
    try:
        return max(1, int(raw))
    except ValueError:
        import warnings
        warnings.warn(f"ignoring NUMFN_THREADS={raw!r}: not a whole number", RuntimeWarning, stacklevel=2)
        return None
