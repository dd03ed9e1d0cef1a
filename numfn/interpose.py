"""NumPy's array-creating functions, called by the user's code while numfn traces it, return traced arrays.

A traced function that builds an array with `np.zeros((n, 3))` and fills it (`out[i] = ...`) would otherwise
get a NumPy array made once while tracing (a constant of the program), into which a traced value cannot be
stored. While any thread traces, the names below in NumPy's namespace are wrappers: called by the user's code
(a call written `np.zeros(...)` or `zeros(...)`, outside NumPy and numfn) in a thread that is tracing, they run
numfn.numpy's function instead (a traced array numfn can write into); every other call, compiled code's among
them, runs NumPy's own, unchanged. Outside tracing, NumPy's functions are in place and nothing is wrapped.
(Converted code reaches numfn.numpy's for these functions by whatever name it calls them, and for np.ndarray(...):
numfn.trace.statements.traced_constructor.)

Likewise np.vectorize objects called on traced arrays run numfn.numpy's vectorize (np.vectorize.__call__ is wrapped
while any thread traces: it asks no frame, a traced argument is only a tracing thread's).
"""
from __future__ import annotations

import functools
import linecache
import os
import sys
import threading

import numpy as np
from numfn.locks import lock
from numfn.pytree import flatten
from numfn.trace.tensor import Tensor
# the names wrapped (converted code's calls of them, by any name, reach numfn's too: statements.traced_constructor)
from numfn.trace.statements import NUMPY_CREATION as CREATION

_lock = lock()
_active = 0                      # traces under way in the process
_originals: dict[str, object] = {}
_local = threading.local()       # .depth: traces under way in this thread
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_NUMFN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _called_by_user_code(frame, name: str) -> bool:
    """Whether `frame` (the Python frame below the wrapper) is the user's code calling `name` itself. Compiled
    code (NumPy's random generators, other extensions) calls NumPy without a frame of its own: the frame below is
    then the user's, but the call it is making is another one. The instruction the frame is executing tells."""
    path = frame.f_code.co_filename
    if path.startswith(_NUMPY_DIR) or path.startswith(_NUMFN_DIR) or path.startswith("<frozen"): return False
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None: return True   # Python 3.10: no positions, trust the frame
    try:
        line, end_line, col, end_col = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return False
    if line is None or col is None: return False
    text = "".join(linecache.getline(path, n) for n in range(line, (end_line or line) + 1))
    if not text: return True   # no source (an interactive session): trust the frame
    call = text[col:]
    callee = call[:call.find("(")].replace(" ", "").replace("\n", "")
    return callee == name or callee.endswith("." + name)


def _wrapper(name: str, original, ours):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if getattr(_local, "depth", 0) and _called_by_user_code(sys._getframe(1), name):
            return ours(*args, **kwargs)
        return original(*args, **kwargs)
    wrapper.__numfn_original__ = original  # type: ignore[attr-defined]  # a marker on the function object
    return wrapper


def _vectorize_call(original):
    """np.vectorize.__call__ while tracing: numfn.numpy's vectorize (the same function, otypes, excluded and
    signature) when an argument is traced (only a tracing thread has traced values), NumPy's otherwise."""
    @functools.wraps(original)
    def call(self, *args, **kwargs):
        if any(isinstance(v, Tensor) for v in flatten((args, kwargs))[0]):
            from numfn import numpy as fnp
            ours = fnp.vectorize(self.pyfunc, otypes=self.otypes, excluded=self.excluded, signature=self.signature)
            return ours(*args, **kwargs)
        return original(self, *args, **kwargs)
    call.__numfn_original__ = original   # a marker on the function object
    return call


class tracing_numpy:
    """Context manager around a trace: NumPy's creation functions called by the user's code in this thread return
    traced arrays (see the module docstring)."""

    def __enter__(self):
        global _active
        from numfn import numpy as fnp
        with _lock:
            if _active == 0:
                for name in CREATION:
                    ours = getattr(fnp, name, None)
                    if ours is None: continue
                    _originals[name] = getattr(np, name)
                    setattr(np, name, _wrapper(name, _originals[name], ours))
                _originals["vectorize.__call__"] = np.vectorize.__call__
                np.vectorize.__call__ = _vectorize_call(np.vectorize.__call__)
            _active += 1
        _local.depth = getattr(_local, "depth", 0) + 1
        return self

    def __exit__(self, exc_type, exc, tb):
        global _active
        _local.depth -= 1
        with _lock:
            _active -= 1
            if _active == 0:
                _restore()
        from numfn.errors import TracerConversionError
        # NumPy reports a traced value it failed to convert (a[i] = v, a.fill(v), a NumPy array `a`) as its own
        # ValueError ("setting an array element with a sequence."): numfn's explanation is its cause
        if isinstance(exc, ValueError) and isinstance(exc.__cause__, TracerConversionError):
            raise exc.__cause__.with_traceback(None) from None


def _after_fork_in_child() -> None:
    """A forked child has only the forking thread: the traces other threads had under way are not the child's, and
    NumPy gets its own functions back when the child's traces (if the forking thread was in one) end."""
    global _active
    _active = getattr(_local, "depth", 0)
    if _active == 0: _restore()


def _restore() -> None:
    """NumPy's own functions back in place (no trace is under way)."""
    for name, original in _originals.items():
        if name == "vectorize.__call__": setattr(np.vectorize, "__call__", original)
        else: setattr(np, name, original)
    _originals.clear()


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_after_fork_in_child)
