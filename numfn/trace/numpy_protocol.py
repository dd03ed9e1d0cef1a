"""How NumPy hands Tensors to numfn.numpy: np.sin(tensor), np.sum(tensor) and tensor + ndarray trace, through
Tensor.__array_ufunc__ and __array_function__ (registered here, tensor_method), which look NumPy's function up in
numfn.trace.tensor.NUMPY_IMPLEMENTATIONS (numfn.numpy fills it). And what the user's code sees as a traced value's
class (`numpy_class`): NumPy's, so that `isinstance(x, np.ndarray)` holds as it would under NumPy."""
from __future__ import annotations

import functools
import inspect
import sys
from typing import Any
from collections.abc import Callable, Collection

import numpy as np

from numfn.errors import OutArgumentError, unsupported
from numfn.pytree import flatten
from numfn.trace.tensor import NUMPY_IMPLEMENTATIONS, Tensor, tensor_method


_PYTHON_SCALARS = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


@tensor_method("numpy_class")
def numpy_class(self, frame: Any) -> type:
    """The class `t.__class__` gives code running in `frame`, and so isinstance(t, cls) there: numfn's and NumPy's
    own code see Tensor (they tell traced values from NumPy's arrays by it); the user's code sees the type NumPy
    would give the value: np.ndarray for an array (a 0-d one too), the NumPy scalar type (np.float64: a np.generic
    and, for float64, a float) for a scalar a reduction or an operator gives, the Python type for a Python scalar.
    type(t) stays Tensor: `type(t) is np.ndarray` is False."""
    module = frame.f_globals.get("__name__") or ""
    if module.partition(".")[0] in ("numfn", "numpy"): return type(self)
    if self.ndim == 0 and self.is_scalar():
        return _PYTHON_SCALARS[self.dtype.kind] if self.weak else self.dtype.type
    return np.ndarray


@tensor_method("__array_ufunc__")
def _array_ufunc(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    impl = NUMPY_IMPLEMENTATIONS.get(ufunc)
    if method != "__call__":
        impl = getattr(impl, method, None)
        if impl is None: raise unsupported(f"{ufunc_name(ufunc)}.{method}")
        return impl(*inputs, **kwargs)
    out = kwargs.get("out")
    if isinstance(out, tuple) and any(isinstance(v, np.ndarray) for v in out):
        # `a += traced` with a NumPy array `a` (captured, or made by np.zeros inside the function)
        raise unsupported(f"updating a NumPy array in place with a traced value (numpy.{ufunc.__name__} "
                          "with out=)", "That array is a constant of the program: write a = a + y, or create "
                          "arrays you update with numfn.numpy (fnp.zeros, ...)")
    if impl is not None and getattr(impl, "takes_ufunc_keywords", False): return impl(*inputs, **kwargs)
    for name, value in kwargs.items():   # any keyword changes what the ufunc computes: none is implemented
        if name == "out" and isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
            # `a += traced` with a NumPy array `a` (captured, or made by np.zeros inside the function)
            raise unsupported(f"updating a NumPy array in place with a traced value (numpy.{ufunc.__name__} "
                              "with out=)", "That array is a constant of the program: write a = a + y, or create "
                              "arrays you update with numfn.numpy (fnp.zeros, ...)")
        if not (name == "out" and (value is None or (isinstance(value, tuple) and all(v is None for v in value)))):
            raise unsupported(f"the {name}= argument of {ufunc_name(ufunc)}")
    if impl is None: raise unsupported(ufunc_name(ufunc), _foreign_hint(ufunc))
    return impl(*inputs)


def ufunc_name(ufunc: np.ufunc) -> str:
    """How errors name a ufunc: numpy.NAME for NumPy's, numpy.frompyfunc for one it made (named "<function>
    (vectorized)"), else by the module of another library that exports it (scipy.special.erf), found by
    identity."""
    name = ufunc.__name__
    if name.endswith(" (vectorized)"): return "numpy.frompyfunc"
    if getattr(np, name, None) is ufunc: return f"numpy.{name}"
    found = []
    for module_name, module in list(sys.modules.items()):
        try:
            attrs = vars(module)
        except TypeError:
            continue
        found += [(module_name == "__main__", module_name.split(".")[0] == "numpy",
                   any(p.startswith("_") for p in module_name.split(".")), len(module_name), module_name, attr)
                  for attr, v in list(attrs.items()) if v is ufunc]
    if not found: return f"the ufunc {name} (not NumPy's)"
    *_, module_name, attr = min(found)   # another library's public module first, the script's own last
    return f"{module_name}.{attr}"


def _foreign_hint(ufunc: np.ufunc) -> str:
    if ufunc_name(ufunc).startswith("numpy."): return ""
    return ("numfn compiles NumPy's functions: another library's function cannot compute on a traced array; write "
            "it with NumPy's functions, or call it outside the compiled function")

@tensor_method("__array_function__")
def _array_function(self, func: Callable[..., Any], types: Collection[type], args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any:
    impl = NUMPY_IMPLEMENTATIONS.get(func)
    if impl is None: raise unsupported(f"{func.__module__}.{func.__name__}")
    try:
        bound = _signature_of(impl).bind(*args, **kwargs)
    except TypeError as e:   # an argument NumPy takes and numfn does not
        raise unsupported(f"numpy.{func.__name__} with these arguments ({e})") from None
    try:
        return _numpy_values(impl(*args, **kwargs))
    except OutArgumentError:   # computed without out=, then written into it (as NumPy's out= does)
        out = bound.arguments.pop("out")
        result = _numpy_values(impl(*bound.args, **bound.kwargs))
        return _store_out(result, out, f"numpy.{func.__name__}")


def _store_out(result: Any, out: Any, what: str) -> Any:
    """`result` written into the traced array `out` (NumPy's out= of a function: the result's shape exactly, cast
    under the rule 'same_kind'), which is returned."""
    if isinstance(out, tuple) and len(out) == 1: out = out[0]
    if isinstance(out, np.ndarray):
        raise unsupported(f"writing a traced value into a NumPy array ({what} with out=)", "That array is a "
                          "constant of the program: use the returned value, or create the array with numfn.numpy")
    if not isinstance(out, Tensor) or out.weak or not isinstance(result, Tensor):
        raise TypeError(f"{what}: out= must be an array")
    if result.shape != out.shape:
        raise ValueError(f"{what}: out= has shape {out.shape}, the result has shape {result.shape}")
    if result.dtype != out.dtype and not np.can_cast(result.dtype, out.dtype, "same_kind"):
        raise TypeError(f"Cannot cast {what} output from {result.dtype!r} to {out.dtype!r} with casting rule "
                        "'same_kind'")
    out[...] = Tensor(result.uop.cast(out.uop.dtype))   # (numfn.trace.subscript's setitem: views of out follow)
    return out


def _numpy_values(result: Any) -> Any:
    """A NumPy function's result: NumPy values, never Python scalars (np.squeeze(5) is a 0-d int64 array, which
    promotes as one: NEP 50)."""
    if isinstance(result, Tensor): return Tensor(result.uop) if result.weak else result
    if type(result) in (tuple, list): return type(result)(_numpy_values(r) for r in result)
    return result


@functools.cache
def _signature_of(fn) -> inspect.Signature:
    return inspect.signature(fn)


_routed: dict[Any, Callable[..., Any]] = {}   # NumPy's function -> its `numpy_call`


def numpy_call(f: Any) -> Callable[..., Any] | None:
    """What a call of NumPy's function `f` in converted code runs (numfn.trace.convert's Runtime.callee), None for
    anything else. NumPy hands a call to __array_function__ only for the arguments its dispatcher names: np.take's
    are `a` and `out`, np.repeat's and np.roll's `a` alone. With a NumPy array or a Python number there and a traced
    array elsewhere (np.take(table, i), np.repeat(values, counts), np.take(5, i)), NumPy's own function would run and
    fail to convert the traced one; such calls run numfn.numpy's function, as dispatch does for the others."""
    if isinstance(f, np.ufunc) or not callable(f): return None   # (a ufunc's dispatch sees every input)
    try:
        impl = NUMPY_IMPLEMENTATIONS.get(f)
    except TypeError:   # unhashable
        return None
    if impl is None: return None
    found = _routed.get(f)
    if found is None:
        def call(*args: Any, **kwargs: Any) -> Any:
            if any(isinstance(leaf, Tensor) for leaf in flatten((args, kwargs))[0]):
                return _array_function(None, f, (), args, kwargs)
            return f(*args, **kwargs)
        found = _routed[f] = functools.wraps(f)(call)
    return found
