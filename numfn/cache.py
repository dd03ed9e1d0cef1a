"""numfn's disk compile cache, seen from the user's side.

Compiled code is kept in ``$NUMFN_CACHE_DIR`` (else ``$XDG_CACHE_HOME/numfn``, else ``~/.cache/numfn``) so that a
later process skips compilation. ``NUMFN_DISABLE_CACHE=1`` turns it off and ``NUMFN_CACHE_MAX_BYTES`` caps its size
(default 1 GiB). From the shell: ``python -m numfn cache info`` and ``python -m numfn cache clear``.
"""
from __future__ import annotations

from numfn.runtime import diskcache as _cache

__all__ = ["clear", "info", "directory"]


def clear() -> int:
    """Delete every entry of the disk cache; returns how many were deleted.

    Raises numfn.runtime.diskcache.CacheDirectoryError when the directory is unsafe (owned by another user or
    writable by group/others)."""
    return _cache.clear_cache()


def info() -> dict[str, object]:
    """The disk cache: {"directory", "entries", "total_bytes", "max_bytes", "enabled", "problem", "tuned_kernels"}
    (tuned_kernels: the kernels whose optimizations NUMFN_BEAM chose and stored, numfn.beam)."""
    return _cache.cache_info()


def directory() -> str:
    """The directory the disk cache lives in (whether or not it exists yet)."""
    return _cache.cache_directory()
