"""Exceptions numfn raises, and how they point at the user's code."""
from __future__ import annotations

import linecache
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = None


class NumfnError(Exception):
    """An operation numfn cannot compile, with where it happened in the user's code."""


class CompileError(NumfnError):
    """A native compiler failed on a generated program (an LLVM fatal error, a C compiler's error or crash)."""


class TracerConversionError(NumfnError, TypeError):
    """A traced value was used where Python needs a concrete value (if/while, float(), int(), np.asarray)."""


def user_location() -> str:
    """'file:line in function: source' of the innermost stack frame outside numfn and NumPy."""
    global _NUMPY_DIR
    if _NUMPY_DIR is None:
        import numpy
        _NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE_DIR + os.sep) and not path.startswith(_NUMPY_DIR + os.sep) \
                and not frame.f_code.co_filename.startswith("<frozen"):
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            where = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
            return f"{where}: {line}" if line else where
        frame = frame.f_back
    return "<unknown location>"


def unsupported(what: str, hint: str = "") -> NumfnError:
    """The error for an operation numfn cannot trace; `what` names it, `hint` suggests an alternative."""
    msg = f"{what} is not supported inside a numfn-compiled function (at {user_location()})"
    return NumfnError(msg + (f". {hint}" if hint else ""))
