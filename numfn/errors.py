"""Exceptions numfn raises, and how they point at the user's code."""
from __future__ import annotations

import dis
import linecache
import os
import sys
from types import FrameType

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR: str | None = None


class NumfnError(Exception):
    """An operation numfn cannot compile, with where it happened in the user's code.

    Example:
        try:
            numfn.jit(lambda x, y: np.polyfit(x, y, 2))(np.arange(4.0), np.arange(4.0))
        except numfn.NumfnError as e:
            assert "numpy.polyfit is not supported" in str(e)
    """


class CompileError(NumfnError):
    """A native compiler failed on a generated program (an LLVM fatal error, a C compiler's error or crash)."""


class TracerConversionError(NumfnError, TypeError):
    """A traced value was used where Python needs a concrete value (a Python list indexed by it, a size computed
    inside a native loop); also a TypeError.

    Example:
        try:
            table = [1.0, 2.0]
            numfn.jit(lambda x: x * table[int(x[0])])(np.ones(2))
        except numfn.TracerConversionError as e:
            assert "placeholder" in str(e)
    """


class StoreIntoConstantError(TracerConversionError):
    """A traced value was stored into a NumPy array (`a[i] = v`): a constant made while tracing. NumPy reports its
    own error for some dtypes ("setting an array element with a sequence.", this one its cause); the trace raises
    this one instead (numfn.interpose)."""


_STORES = {dis.opmap[name] for name in ("STORE_SUBSCR", "STORE_SLICE") if name in dis.opmap}


def storing_into_array(frame: FrameType | None) -> bool:
    """Whether `frame`, the frame that asked a traced value for a concrete one, is the user's code executing
    `a[i] = v` itself: NumPy's __setitem__ (C, no frame of its own) converting v, `a` a NumPy array."""
    if frame is None: return False
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_PACKAGE_DIR + os.sep) or path.startswith(_numpy_dir() + os.sep): return False
    code, i = frame.f_code.co_code, frame.f_lasti
    return 0 <= i < len(code) and code[i] in _STORES


def store_into_constant(where: str) -> StoreIntoConstantError:
    return StoreIntoConstantError(
        f"storing into a NumPy array with a traced value or index (at {where}): that array is a constant of the "
        "compiled program, made while numfn traced the function by NumPy code numfn does not trace (a NumPy "
        "array's own methods such as a.copy() or a.reshape(), functions of NumPy arrays such as np.concatenate, or "
        "an array from outside the function), and it cannot hold values known only when the compiled code runs. "
        "Make it a traced array first: a = np.array(a) inside the function gives a copy numfn can write into (so "
        "do np.zeros, np.empty, np.full, ... called inside the function)")


def _numpy_dir() -> str:
    global _NUMPY_DIR
    if _NUMPY_DIR is None:
        import numpy
        _NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
    return _NUMPY_DIR


def user_location() -> str:
    """'file:line in function: source' of the innermost stack frame outside numfn and NumPy."""
    numpy_dir = _numpy_dir()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE_DIR + os.sep) and not path.startswith(numpy_dir + os.sep) \
                and not frame.f_code.co_filename.startswith("<frozen"):
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            where = f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
            return f"{where}: {line}" if line else where
        frame = frame.f_back
    return "<unknown location>"


class TracedRecursionError(NumfnError):
    """A function that calls itself deeper than numfn traces: its recursion ends on a traced value (numfn.jit then
    tries the Python ints among the arguments as static ones, which may end it while tracing)."""


class OutArgumentError(NumfnError):
    """A NumPy function's out= that its numfn implementation does not take (numfn.args.refuse): the call is then
    computed without it and the result written into `out` (numfn.trace.numpy_protocol)."""


class RunTimeLengthError(NumfnError):
    """An operation numfn does not apply to an array whose length is a run-time value (np.flip(x[:k]) for a traced
    k). A static loop whose variable made that length unrolls instead (numfn.trace.statements.run_for_range)."""


def unsupported(what: str, hint: str = "", error: type[NumfnError] = NumfnError) -> NumfnError:
    """The error for an operation numfn cannot trace; `what` names it, `hint` suggests an alternative. A NumPy
    name (numpy.NAME, numpy.linalg.NAME, ndarray.NAME, ...) without a hint gets its entry of SUGGESTIONS, and
    every NumPy name gets a pointer to the page listing what numfn supports."""
    msg = f"{what} is not supported inside a numfn-compiled function (at {user_location()})"
    hint = hint or suggestion(what)
    if hint: msg += f". {hint}"
    if _is_numpy_name(what): msg += f"{'' if msg.endswith('.') else '.'} {COVERAGE_HINT}"
    return error(msg)



# ---- suggestions for what numfn does not implement -------------------------------------------------------------------

COVERAGE_PAGE = "docs/numpy-coverage.md"
COVERAGE_HINT = f"What numfn supports of NumPy is listed in {COVERAGE_PAGE} (python -m numfn.tools.coverage --stdout)"

_OUTSIDE = "do this outside the compiled function: pass the values in as arguments, or convert its results after"

# A NumPy name (as numfn's errors spell it: numpy.NAME, numpy.linalg.NAME, ndarray.NAME; a key ending in ".*" covers
# a whole namespace) -> what to write instead, with what numfn supports. A name numfn comes to support never shows its
# suggestion again (unsupported() is not called for it); `python -m numfn.tools.coverage` lists such stale entries.
SUGGESTIONS: dict[str, str] = {
    "numpy.lib.stride_tricks.as_strided":
        "Arbitrary strides have no meaning for traced arrays: build the view with slicing, reshape, transpose and "
        "np.broadcast_to",
    "numpy.fft.*": "numfn implements fft, ifft, rfft, irfft, hfft, ihfft, their 2-D and n-D forms, fftfreq, "
                   "rfftfreq, fftshift and ifftshift of numpy.fft; compute this one outside the compiled function",
    "numpy.random.*": "Random numbers inside compiled functions come from numfn.random (a key passed as an argument: "
                      "numfn.random.uniform(key, shape), normal, integers) or a numpy.random.Generator passed as an "
                      "argument (its methods random, standard_normal, normal, uniform, integers)",
    "numpy.trim_zeros": "Select with a mask: x[np.cumsum(x != 0) > 0] is trim_zeros(x, 'f') (its length is known "
                        "when the program runs)",
    "numpy.frompyfunc": "Its ufuncs give arrays of Python objects, which compiled code has no type for: "
                        "np.vectorize(f, otypes=[...]) makes the same calls and gives arrays of numbers",
    "numpy.apply_over_axes": "Reductions take a tuple of axes: x.sum(axis=(0, 2), keepdims=True)",
    "numpy.putmask": "np.where(mask, values, x), or x[...] = np.where(mask, values, x) to write into x",
    "numpy.place": "x[mask] = values (as many values as true positions)",
    "numpy.copyto": "dst[...] = src (with np.where(where, src, dst) for where=)",
    "numpy.histogramdd": _OUTSIDE, "numpy.histogram_bin_edges": _OUTSIDE,
    "numpy.save": _OUTSIDE, "numpy.savez": _OUTSIDE, "numpy.savetxt": _OUTSIDE, "numpy.load": _OUTSIDE,
    "numpy.loadtxt": _OUTSIDE, "numpy.genfromtxt": _OUTSIDE, "numpy.fromfile": _OUTSIDE,
    "numpy.array2string": _OUTSIDE, "numpy.array_repr": _OUTSIDE, "numpy.array_str": _OUTSIDE,
    "ndarray.tofile": _OUTSIDE, "ndarray.tobytes": _OUTSIDE, "ndarray.dump": _OUTSIDE, "ndarray.dumps": _OUTSIDE,
}


def _is_numpy_name(what: str) -> bool:
    return what.startswith(("numpy.", "ndarray.")) and " " not in what


def suggestion(what: str) -> str:
    """What to write instead of the NumPy name `what` (numpy.NAME, numpy.linalg.NAME, ndarray.NAME, ...), or ""."""
    if what in SUGGESTIONS: return SUGGESTIONS[what]
    namespace = what.rpartition(".")[0]
    while namespace:
        if namespace + ".*" in SUGGESTIONS: return SUGGESTIONS[namespace + ".*"]
        namespace = namespace.rpartition(".")[0]
    return ""
