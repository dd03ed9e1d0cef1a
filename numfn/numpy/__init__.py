"""numfn.numpy: NumPy's namespace over traced arrays.

Inside a compiled function, `numfn.numpy.sin(x)` and `np.sin(x)` both trace: every name defined here that NumPy
also defines (in its main namespace, or in np.linalg, np.fft, ... for the subpackages) is registered in
`numfn.trace.tensor.NUMPY_IMPLEMENTATIONS`, through which NumPy hands Tensors to these functions (__array_ufunc__,
__array_function__). Every function follows NumPy's semantics: broadcasting, dtype promotion (NumPy 2 rules,
Python scalars are weak), result shapes and the errors NumPy raises.

The modules, one family each: ufuncs (elementwise), dtypes (scalar types, dtype helpers, constants), creation,
manipulation (shapes, views, joining), indexing (results of run-time length, gathers, scatters, histograms),
reductions, statistics, products, signal (differences, convolution, interpolation, polynomials), sorting
(sort, searchsorted, unique); subpackages mirror NumPy's: linalg (numfn.numpy.linalg for np.linalg), fft
(numfn.numpy.fft for np.fft). A module lists its names in __all__; ndarray methods are added to Tensor with
numfn.trace.tensor.tensor_method. The families are ordered (tests/test_imports.py, LAYERS): a family imports those
before it only, and calls one after it through numfn.numpy._core.implementation, which this module fills.
"""
from __future__ import annotations

import types

import numpy as _np

from numfn.trace import dynamic
from numfn.numpy import (creation, dtypes, extras, functional, indexing, manipulation,  # noqa: F401 - fnp.random
                         products, random, reductions, signal, sorting, statistics, ufunc_functions, ufuncs)
from numfn.numpy.creation import *  # noqa: F401,F403
from numfn.numpy.dtypes import *  # noqa: F401,F403
from numfn.numpy.extras import *  # noqa: F401,F403
from numfn.numpy.functional import *  # noqa: F401,F403
from numfn.numpy.indexing import *  # noqa: F401,F403
from numfn.numpy.products import *  # noqa: F401,F403
from numfn.numpy.reductions import *  # noqa: F401,F403
from numfn.numpy.signal import *  # noqa: F401,F403
from numfn.numpy.sorting import *  # noqa: F401,F403
from numfn.numpy.statistics import *  # noqa: F401,F403
from numfn.numpy.manipulation import *  # noqa: F401,F403
from numfn.numpy.ufuncs import *  # noqa: F401,F403
from numfn.numpy.ufunc_functions import *  # noqa: F401,F403
from numfn.trace.tensor import NUMFN_NUMPY, NUMPY_IMPLEMENTATIONS
from numfn.numpy._core import IMPLEMENTATIONS

_MODULES = (creation, dtypes, extras, functional, indexing, manipulation, products, reductions, signal, sorting,
            statistics, ufuncs, ufunc_functions)

__all__ = sorted({name for m in _MODULES for name in m.__all__})

# the families' functions by name, for a family that calls one above it (numfn.numpy._core)
IMPLEMENTATIONS.update((_name, globals()[_name]) for _name in __all__)
IMPLEMENTATIONS["ufunc_at"] = indexing.ufunc_at   # ufunc.at (numfn.numpy.ufuncs)


def _guarded(namespace: dict, names, prefix: str = "") -> None:
    """Arrays of run-time length (x[mask], nonzero, windows) reach only the functions that know them
    (numfn.trace.dynamic.guard, by "<prefix><name>"): the others would compute over the arrays' static bounds
    (np.linalg.norm(A[k:, k])). The elementwise ones (numfn.numpy.ufuncs) all know them, through the tracer's
    elementwise machinery."""
    for name in names:
        fn = namespace[name]
        if isinstance(fn, types.FunctionType) and fn.__module__ != ufuncs.__name__:
            namespace[name] = dynamic.guard(prefix + name, fn)


_guarded(globals(), __all__)


def register(namespace: types.ModuleType, numpy_namespace: types.ModuleType, names) -> None:
    """Dispatch NumPy's `numpy_namespace.NAME` to `namespace.NAME` for each of `names` both define (functions and
    ufuncs only: types, constants and NumPy's own objects re-exported as they are need no dispatch)."""
    for name in names:
        ours, theirs = getattr(namespace, name), getattr(numpy_namespace, name, None)
        if theirs is not None and callable(theirs) and not isinstance(theirs, type) and ours is not theirs:
            NUMPY_IMPLEMENTATIONS[theirs] = ours


register(__import__(__name__, fromlist=["*"]), _np, __all__)
NUMFN_NUMPY.update((_name, globals()[_name]) for _name in __all__)   # how numfn.trace calls this namespace

from numfn.numpy import linalg  # noqa: E402 - np.linalg.NAME(tensor) runs numfn.numpy.linalg.NAME

_guarded(vars(linalg), linalg.__all__, "linalg.")
register(linalg, _np.linalg, linalg.__all__)
NUMPY_IMPLEMENTATIONS[_np.polyfit] = dynamic.guard("polyfit", linalg.polyfit)   # (linalg's family)

from numfn.numpy import fft  # noqa: E402 - np.fft.NAME(tensor) runs numfn.numpy.fft.NAME

_guarded(vars(fft), fft.__all__, "fft.")
register(fft, _np.fft, fft.__all__)

from numfn.numpy import stride_tricks  # noqa: E402 - np.lib.stride_tricks.NAME(tensor) runs numfn.numpy.stride_tricks's

_guarded(vars(stride_tricks), stride_tricks.__all__, "lib.stride_tricks.")
register(stride_tricks, _np.lib.stride_tricks, stride_tricks.__all__)
