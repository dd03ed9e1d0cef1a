"""NumPy's scalar types, dtype helpers and constants, so code written against numfn.numpy runs unchanged.

`fnp.float32` is a subclass of `np.float32`: `np.dtype(fnp.float32)`, `x.astype(fnp.int8)`, `dtype=fnp.float64`
and `np.zeros(3, fnp.int32)` see NumPy's type, `isinstance(v, fnp.float32)` accepts NumPy's scalars, and calling
it converts: a Python or NumPy value gives NumPy's scalar (a strong 0-d value when traced), a traced array is cast
elementwise as `np.float32(array)` casts. `result_type`, `can_cast`, `finfo` and `iinfo` take traced arrays as
NumPy takes arrays (a Tensor made from a Python scalar counts as that Python scalar, weakly typed, as in NEP 50).
"""
from __future__ import annotations

import builtins   # this module's `bool` is NumPy's; annotations name Python's
import math
from typing import Literal

import numpy as np

from numfn.trace.tensor import Tensor

__all__ = ['bool_', 'bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'intp', 'uintp',
           'float16', 'half', 'float32', 'float64', 'double', 'single', 'byte', 'ubyte', 'short', 'ushort', 'intc',
           'uintc', 'int_', 'uint', 'generic', 'number', 'integer', 'signedinteger', 'unsignedinteger',
           'inexact', 'floating', 'dtype', 'finfo', 'iinfo', 'result_type', 'promote_types', 'can_cast',
           'issubdtype', 'pi', 'e', 'inf', 'nan', 'euler_gamma', 'newaxis', 'ndarray']


class _ScalarMeta(type):
    """isinstance/issubclass against fnp.float32 answer as against np.float32 (NumPy's scalars are not instances
    of the subclass)."""
    def __instancecheck__(cls, obj) -> builtins.bool:
        return isinstance(obj, cls.__mro__[1])

    def __subclasscheck__(cls, sub) -> builtins.bool:
        return issubclass(sub, cls.__mro__[1])


def _scalar_type(np_type: type) -> type:
    def __new__(cls, value=0, *args, **kwargs):
        if isinstance(value, Tensor): return value.astype(np_type)
        return np_type(value, *args, **kwargs)
    name = np_type.__name__
    return _ScalarMeta(name, (np_type,), {"__new__": __new__, "__module__": __name__,
                                          "__doc__": f"numpy.{name}; on a traced array, a cast to {name}."})


bool_ = _scalar_type(np.bool_)
bool = bool_  # noqa: A001 - NumPy 2's name
int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = _scalar_type(np.float16), _scalar_type(np.float32), _scalar_type(np.float64)
half = float16
_BY_NUMPY = {t.__mro__[1]: t for t in (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,
                                          float32, float64)}
intp, uintp = _BY_NUMPY[np.intp], _BY_NUMPY[np.uintp]
single, double = float32, float64
byte, ubyte, short, ushort = _BY_NUMPY[np.byte], _BY_NUMPY[np.ubyte], _BY_NUMPY[np.short], _BY_NUMPY[np.ushort]
intc, uintc, int_, uint = _BY_NUMPY[np.intc], _BY_NUMPY[np.uintc], _BY_NUMPY[np.int_], _BY_NUMPY[np.uint]
# the abstract types, for issubdtype and isinstance checks
generic, number, integer, inexact, floating = np.generic, np.number, np.integer, np.inexact, np.floating
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger

dtype = np.dtype
ndarray = np.ndarray
newaxis = None
pi, e, inf, nan, euler_gamma = math.pi, math.e, math.inf, math.nan, np.euler_gamma
promote_types = np.promote_types
issubdtype = np.issubdtype


def _numpy_view(x):
    """What NumPy's dtype helpers see for x: a traced array as its dtype (a weak one as its Python scalar)."""
    if isinstance(x, Tensor):
        if x.weak: return {"b": False, "i": 0, "u": 0, "f": 0.0}[x.uop.dtype.kind]
        return x.dtype
    return x


def result_type(*arrays_and_dtypes) -> np.dtype:
    """np.result_type, with traced arrays taking part by their dtype (NEP 50: Python scalars are weak)."""
    return np.result_type(*(_numpy_view(x) for x in arrays_and_dtypes))


def can_cast(from_, to, casting: Literal["no", "equiv", "safe", "same_kind", "unsafe"] = "safe") -> builtins.bool:
    """np.can_cast; a traced array stands for its dtype (a Python scalar is refused, as NumPy 2 refuses it)."""
    if isinstance(from_, Tensor) and from_.weak:
        raise TypeError("can_cast() does not support Python ints, floats, and complex because the result used to "
                        "depend on the value.\nThis change was part of adopting NEP 50, we may explicitly allow "
                        "them again in the future.")
    return np.can_cast(_numpy_view(from_), to, casting)


def finfo(dtype) -> np.finfo:
    """np.finfo of a float type, or of a traced array's dtype."""
    return np.finfo(dtype.dtype if isinstance(dtype, Tensor) else dtype)


def iinfo(int_type) -> np.iinfo:
    """np.iinfo of an integer type, or of a traced array's dtype."""
    return np.iinfo(int_type.dtype if isinstance(int_type, Tensor) else int_type)
