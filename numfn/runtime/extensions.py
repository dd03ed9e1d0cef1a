"""numfn's C extensions, built with the package (see setup.py), and the one warning when they are missing.

    _numfn_native    the thread pool of parallel kernels (and the native routines generated code calls)
    _numfn_dispatch  the fast call path of jit functions (the Dispatcher base type)

They are independent: without the dispatcher, kernels still get the pool; without the pool, calls are still fast
but kernels run on one thread. Where one is missing (an install without a C compiler, an unusual platform, or
NUMFN_NO_NATIVE_EXT=1 / NUMFN_NO_DISPATCH_EXT=1), numfn works and `warn_missing()` says once, pointing at the
user's call, what was lost. Importing this module compiles nothing: it imports the built modules or notes why not.
"""
from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import FrameType

from numfn import config

__all__ = ["native", "dispatch", "problems", "warn_missing", "ExtensionWarning"]


class ExtensionWarning(UserWarning):
    """Issued once per process when a native extension of numfn is unavailable."""


def _import(name: str, disabled: bool, variable: str):
    if disabled: return None, f"{variable} is set"
    try:
        return importlib.import_module(name), None
    except ModuleNotFoundError as e:
        if e.name == name:   # not built: numfn was installed without a working C compiler or Python's headers
            return None, ("not built: reinstall numfn where a C compiler and Python's headers are available to get it")
        return None, f"does not load: {e}"
    except ImportError as e:   # built for another interpreter, or damaged
        return None, f"does not load: {e}"


native, _native_problem = _import("numfn.runtime._numfn_native", config.no_native_extension(), "NUMFN_NO_NATIVE_EXT")
dispatch, _dispatch_problem = _import("numfn.runtime._numfn_dispatch", config.no_dispatch_extension(),
                                      "NUMFN_NO_DISPATCH_EXT")
if dispatch is not None:
    dispatch._use_pool(native.pool_slot if native is not None else None)
    dispatch._keep_memory(config.keep_memory())


def problems() -> list[str]:
    """What is missing and what that costs, one sentence each (empty when both extensions are loaded)."""
    out = []
    if dispatch is None:
        out.append("the fast call extension is unavailable, so every call takes the Python path (about 10 us "
                   f"instead of 0.2 us of overhead): {_dispatch_problem}")
    if native is None:
        out.append(f"the thread pool extension is unavailable, so kernels run on one thread: {_native_problem}")
    return out


_warned = False
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn_missing() -> None:
    """Warn once per process, attributed to the innermost caller outside numfn, about missing extensions."""
    global _warned
    if _warned: return
    _warned = True
    lost = problems()
    if not lost: return
    frame: FrameType | None
    level, frame = 2, sys._getframe(1)   # stacklevel 2: our caller
    while frame is not None and (os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)
                                 or frame.f_code.co_filename.startswith("<frozen")):
        level, frame = level + 1, frame.f_back
    warnings.warn("numfn: " + "; ".join(lost), ExtensionWarning, stacklevel=level)
