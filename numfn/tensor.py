"""The tracer: a NumPy-like array type whose operations build a UOp graph instead of computing.

Inside a function compiled by numfn.jit the array arguments are Tensors (placeholders made by `Tensor.empty`);
every operation returns a new Tensor whose `uop` describes how to compute it. Shapes and dtypes are concrete
Python values, so Python code may branch on them; values are not known, so Python code may not branch on them.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import math
import operator
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from numfn.dtype import DType, PyScalar, check_scalar_fits, dtypes, reduce_dtype, resolve_ufunc, scalar_dtype
from numfn.args import as_dtype, normalize_axes, normalize_axis, refuse
from numfn.errors import NumfnError, TracerConversionError, unsupported, user_location
from numfn.uop import Buffer, Ops, UOp

# A Python scalar that meets a Tensor is "weak" (NEP 50): it takes the Tensor's dtype where the kinds allow.
_WEAK_TYPE = {"i": int, "u": int, "f": float}


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting of shapes; ValueError worded like NumPy's when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(dims) > 1:
            raise ValueError("operands could not be broadcast together with shapes " +
                             " ".join("(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")" for s in shapes))
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def constant_buffer(data: np.ndarray) -> UOp:
    """A captured array as a constant BUFFER node; a private read-only copy, hashed by content."""
    data = np.array(data, copy=True, order="C")
    data.flags.writeable = False
    digest = hashlib.sha256(data.tobytes() + str((data.dtype.str, data.shape)).encode()).hexdigest()[:32]
    return UOp(Ops.BUFFER, dtypes.from_numpy(data.dtype), (), Buffer("constant", -1, data.shape, data, digest))


class Tensor:
    """A traced array. `uop` is its graph; `weak` marks values that came from Python scalars (NEP 50).

    Two attributes serve in-place operators (see `_inplace`): `pinned` marks memory NumPy would share with the
    caller (function inputs, captured arrays, and views of them); `_family` holds weak references to the arrays
    sharing one memory in NumPy (a base and its views), so that an update is refused while another of them is
    still in use, and allowed once the others are gone (such as the temporary views numfn's own functions make)."""
    __slots__ = ("uop", "weak", "pinned", "_family", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, uop: UOp, weak: bool = False, pinned: bool = False):
        self.uop, self.weak, self.pinned, self._family = uop, weak, pinned, None

    # ---------------------------------------------------------------------------------------------------------
    # creation
    @staticmethod
    def empty(shape: Sequence[int], dtype: Any, slot: int = 0, weak: bool = False) -> Tensor:
        """A placeholder for function input number `slot`: its values are unknown while tracing."""
        # pinned: an in-place update of an input would change the caller's array in NumPy
        return Tensor(UOp(Ops.PARAM, as_dtype(dtype), (), (slot, tuple(int(s) for s in shape))), weak, pinned=True)

    @staticmethod
    def full(shape: Sequence[int], value, dtype: Any = None) -> Tensor:
        dt = scalar_dtype(value) if dtype is None else as_dtype(dtype)
        return Tensor(UOp.const_like(dt, value, tuple(shape)))

    @staticmethod
    def lift(x: Any) -> Tensor:
        """Anything array-like as a Tensor: Python scalars become weak constants, NumPy scalars strong ones,
        arrays and lists become constant buffers (captured data)."""
        if isinstance(x, Tensor): return x
        if isinstance(x, PyScalar) and not isinstance(x, np.generic):
            if isinstance(x, int) and not isinstance(x, bool) and not -2**63 <= x < 2**64: return _BigInt(x)
            return Tensor(UOp.const(scalar_dtype(x), x), weak=True)
        if isinstance(x, np.generic): return Tensor(UOp.const(dtypes.from_numpy(x.dtype.newbyteorder("=")), x.item()))
        if isinstance(x, (np.ndarray, list, tuple)):
            arr = np.asarray(x)
            if not arr.dtype.isnative: arr = arr.astype(arr.dtype.newbyteorder("="))   # constants are stored native
            if arr.dtype == object:
                raise TypeError(f"cannot use a {type(x).__name__} of mixed or non-numeric values as an array")
            dt = dtypes.from_numpy(arr.dtype)
            pinned = isinstance(x, np.ndarray)   # an in-place update would change the captured array in NumPy
            if arr.size == 1: return Tensor(UOp.const_like(dt, arr.reshape(()).item(), arr.shape), pinned=pinned)
            return Tensor(constant_buffer(arr), pinned=pinned)
        raise TypeError(f"cannot use a value of type {type(x).__name__} as an array in a numfn-compiled function")

    # ---------------------------------------------------------------------------------------------------------
    # properties
    @property
    def shape(self) -> tuple[int, ...]: return self.uop.shape

    @property
    def dtype(self) -> np.dtype: return self.uop.dtype.np

    @property
    def ndim(self) -> int: return len(self.uop.shape)

    @property
    def size(self) -> int: return math.prod(self.uop.shape)

    @property
    def itemsize(self) -> int: return self.uop.dtype.itemsize

    @property
    def nbytes(self) -> int: return self.size * self.uop.dtype.itemsize

    @property
    def T(self) -> Tensor: return self.transpose()

    def __len__(self) -> int:
        if not self.shape: raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape: raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.uop.dtype.name}{', weak' if self.weak else ''})"

    @property
    def pyvalue(self):
        """The Python value of a constant."""
        return self.uop.arg

    # ---------------------------------------------------------------------------------------------------------
    # things a tracer cannot do
    def _concrete(self, what: str):
        raise TracerConversionError(
            f"{what} needs the value of a traced array, but numfn traces the function with placeholder arrays "
            f"whose values are only known when the compiled code runs (at {user_location()}). "
            "Express data-dependent choices with numfn.numpy.where(condition, a, b) instead of Python if/while, "
            "and return arrays instead of converting them to Python numbers.")

    def __bool__(self): self._concrete("using an array as a Python bool (if, while, and, or, not)")
    def __float__(self): self._concrete("float()")
    def __int__(self): self._concrete("int()")
    def __complex__(self): self._concrete("complex()")
    def __index__(self): self._concrete("using an array as an index or size")
    def __array__(self, *a, **k): self._concrete("converting to a NumPy array (np.asarray, np.array)")
    def item(self, *a): self._concrete(".item()")
    def tolist(self): self._concrete(".tolist()")

    def __setitem__(self, key, value):
        raise unsupported("assignment into an array (x[...] = value)",
                          "Build a new array instead, for example with numfn.numpy.where")

    # ---------------------------------------------------------------------------------------------------------
    # in-place operators
    def _inplace(self, ufunc: str, symbol: str, compute, x) -> Tensor:
        """`self symbol= x` as NumPy does it where numfn can do so exactly: the result, cast back to self's dtype
        under 'same_kind' casting, replaces this Tensor's value, so every name bound to this array sees it.
        Python and NumPy scalars (weak or 0-d values) are immutable: Python rebinds the name instead. Refused,
        because NumPy would change memory that numfn cannot update: an input, a captured array or a view of
        one (the caller's or the global's memory), and an array sharing memory with another array still in use
        (a view and its base)."""
        if self.weak or (self.ndim == 0 and self.uop.op is not Ops.PARAM): return NotImplemented
        if self.pinned:
            raise unsupported(f"in-place update ({symbol}=) of a function input or a captured array (or a view of "
                              "one)", f"NumPy would change the caller's array; write x = x {symbol} y instead")
        if self._family is not None:
            self._family[:] = [r for r in self._family if r() is not None]
            if any(r() is not self for r in self._family):
                raise unsupported(f"in-place update ({symbol}=) of an array that shares memory with another array "
                                  "still in use (a view and its base)", "NumPy would change both, numfn only this "
                                  f"one; write x = x {symbol} y instead")
        result = compute(self, x)
        if result.shape != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't match the broadcast "
                             f"shape {result.shape}")
        if result.dtype != self.dtype:
            if not np.can_cast(result.dtype, self.dtype, "same_kind"):
                raise TypeError(f"Cannot cast ufunc '{ufunc}' output from {result.dtype!r} to {self.dtype!r} with "
                                "casting rule 'same_kind'")
            result = result.astype(self.dtype)
        self.uop = result.uop
        return self

    def __iadd__(self, x): return self._inplace("add", "+", operator.add, x)
    def __isub__(self, x): return self._inplace("subtract", "-", operator.sub, x)
    def __imul__(self, x): return self._inplace("multiply", "*", operator.mul, x)
    def __itruediv__(self, x): return self._inplace("divide", "/", operator.truediv, x)
    def __ifloordiv__(self, x): return self._inplace("floor_divide", "//", operator.floordiv, x)
    def __imod__(self, x): return self._inplace("remainder", "%", operator.mod, x)
    def __ipow__(self, x): return self._inplace("power", "**", operator.pow, x)
    def __imatmul__(self, x): return self._inplace("matmul", "@", operator.matmul, x)
    def __iand__(self, x): return self._inplace("bitwise_and", "&", operator.and_, x)
    def __ior__(self, x): return self._inplace("bitwise_or", "|", operator.or_, x)
    def __ixor__(self, x): return self._inplace("bitwise_xor", "^", operator.xor, x)
    def __ilshift__(self, x): return self._inplace("left_shift", "<<", operator.lshift, x)
    def __irshift__(self, x): return self._inplace("right_shift", ">>", operator.rshift, x)

    def __getattr__(self, name: str):
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise unsupported(f"ndarray.{name}")
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")

    # ---------------------------------------------------------------------------------------------------------
    # elementwise machinery
    def _wtype(self):
        # NEP 50 makes Python int and float weak; a Python bool behaves like np.bool_
        return _WEAK_TYPE[self.uop.dtype.kind] if self.weak and not self.uop.dtype.is_bool else self.uop.dtype

    def _broadcast(self, shape: tuple[int, ...]) -> UOp:
        u = self.uop
        if u.shape == shape: return u
        u = u.reshape((1,) * (len(shape) - len(u.shape)) + u.shape)
        return u.expand(shape)

    @staticmethod
    def _elementwise(ufunc: str, op: Ops, *operands, swap: bool = False) -> Tensor:
        ts = [Tensor.lift(x) for x in operands]
        if ufunc in _COMPARISONS and len(ts) == 2:
            decided = _compare_out_of_range(ufunc, ts)
            if decided is not None: return decided
        try:
            cast, out = resolve_ufunc(ufunc, tuple(t._wtype() for t in ts)) if not all(t.weak for t in ts) \
                else _weak_resolve(ufunc, ts)
            if ufunc in _COMPARISONS and len(ts) == 2: cast = _compare_by_value(ts, cast)
        except TypeError as e:
            raise TypeError(f"{e} (numpy.{ufunc} of {', '.join(t.uop.dtype.name for t in ts)}, "
                            f"at {user_location()})") from None
        for t, d in zip(ts, cast):
            if t.weak and t.uop.op is Ops.CONST: check_scalar_fits(t.pyvalue, d)
            if t.weak and t.uop.op is Ops.PARAM and d.is_int and d.itemsize < 8: _record_int_limit(t.uop.arg[0], d)
        shape = broadcast_shapes(*(t.shape for t in ts))
        srcs = [Tensor(t.uop.cast(d), t.weak)._broadcast(shape) for t, d in zip(ts, cast)]
        if swap: srcs.reverse()
        u = srcs[0].alu(op, *srcs[1:])
        if u.dtype is not out: u = u.cast(out)
        return Tensor(u, weak=all(t.weak for t in ts))

    def _unary(self, ufunc: str, op: Ops | None) -> Tensor:
        try:
            (cast,), out = resolve_ufunc(ufunc, (self.uop.dtype,))
        except TypeError as e:
            raise TypeError(f"{e} (numpy.{ufunc} of {self.uop.dtype.name}, at {user_location()})") from None
        u = self.uop.cast(cast)
        if op is not None: u = u.alu(op)
        return Tensor(u.cast(out), self.weak)

    # arithmetic operators
    def __add__(self, x): return Tensor._elementwise("add", Ops.ADD, self, x)
    def __radd__(self, x): return Tensor._elementwise("add", Ops.ADD, x, self)
    def __sub__(self, x): return Tensor._elementwise("subtract", Ops.SUB, self, x)
    def __rsub__(self, x): return Tensor._elementwise("subtract", Ops.SUB, x, self)
    def __mul__(self, x): return Tensor._elementwise("multiply", Ops.MUL, self, x)
    def __rmul__(self, x): return Tensor._elementwise("multiply", Ops.MUL, x, self)
    def __truediv__(self, x): return Tensor._elementwise("true_divide", Ops.FDIV, self, x)
    def __rtruediv__(self, x): return Tensor._elementwise("true_divide", Ops.FDIV, x, self)
    def __floordiv__(self, x): return Tensor._elementwise("floor_divide", Ops.FLOORDIV, self, x)
    def __rfloordiv__(self, x): return Tensor._elementwise("floor_divide", Ops.FLOORDIV, x, self)
    def __mod__(self, x): return Tensor._elementwise("remainder", Ops.MOD, self, x)
    def __rmod__(self, x): return Tensor._elementwise("remainder", Ops.MOD, x, self)
    def __lshift__(self, x): return Tensor._elementwise("left_shift", Ops.SHL, self, x)
    def __rlshift__(self, x): return Tensor._elementwise("left_shift", Ops.SHL, x, self)
    def __rshift__(self, x): return Tensor._elementwise("right_shift", Ops.SHR, self, x)
    def __rrshift__(self, x): return Tensor._elementwise("right_shift", Ops.SHR, x, self)
    def __divmod__(self, x): return (self // x, self % x)
    def __rdivmod__(self, x): return (Tensor.lift(x) // self, Tensor.lift(x) % self)
    def __pow__(self, x): return _power(self, x)
    def __rpow__(self, x): return _power(x, self)
    def __matmul__(self, x): return matmul(self, x)
    def __rmatmul__(self, x): return matmul(x, self)
    def __neg__(self): return self._unary("negative", Ops.NEG)
    def __pos__(self): return self._unary("positive", None)
    def __abs__(self): return self if self.uop.dtype.kind in "ub" else self._unary("absolute", Ops.ABS)
    def __invert__(self): return self._unary("invert", Ops.NOT)
    def __and__(self, x): return Tensor._elementwise("bitwise_and", Ops.AND, self, x)
    def __rand__(self, x): return Tensor._elementwise("bitwise_and", Ops.AND, x, self)
    def __or__(self, x): return Tensor._elementwise("bitwise_or", Ops.OR, self, x)
    def __ror__(self, x): return Tensor._elementwise("bitwise_or", Ops.OR, x, self)
    def __xor__(self, x): return Tensor._elementwise("bitwise_xor", Ops.XOR, self, x)
    def __rxor__(self, x): return Tensor._elementwise("bitwise_xor", Ops.XOR, x, self)
    def __lt__(self, x): return Tensor._elementwise("less", Ops.CMPLT, self, x)
    def __le__(self, x): return Tensor._elementwise("less_equal", Ops.CMPLE, self, x)
    def __gt__(self, x): return Tensor._elementwise("greater", Ops.CMPLT, self, x, swap=True)
    def __ge__(self, x): return Tensor._elementwise("greater_equal", Ops.CMPLE, self, x, swap=True)
    def __eq__(self, x): return Tensor._elementwise("equal", Ops.CMPEQ, self, x)  # type: ignore[override]
    def __ne__(self, x): return Tensor._elementwise("not_equal", Ops.CMPNE, self, x)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise, so not hashable

    def abs(self) -> Tensor: return abs(self)

    # ---------------------------------------------------------------------------------------------------------
    # conversions and views
    def astype(self, dtype: Any, copy: bool = True) -> Tensor:
        """The array converted to `dtype` the way NumPy's astype converts (unsafe casting)."""
        dt = as_dtype(dtype)
        if not copy and dt == self.uop.dtype: return self   # NumPy returns the array itself
        return Tensor(self.uop.cast(dt))

    def _view(self, uop: UOp) -> Tensor:
        """A view of this array with graph `uop`: NumPy would share memory between the two, so neither may be
        updated in place while the other is in use (numfn could not make the update show through the other)."""
        view = Tensor(uop, self.weak, self.pinned)
        if self._family is None: self._family = [weakref.ref(self)]
        view._family = self._family
        self._family.append(weakref.ref(view))
        return view

    def contiguous(self) -> Tensor:
        """Materialize the array in its own buffer (a scheduling hint; the values do not change)."""
        return Tensor(UOp(Ops.CONTIGUOUS, self.uop.dtype, (self.uop,)), self.weak)

    def reshape(self, *shape, order: str = "C") -> Tensor:
        return self._view(self._reshaped(shape, order))

    def _reshaped(self, shape: tuple, order: str = "C") -> UOp:
        if order != "C": raise unsupported(f"reshape with order={order!r}")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)): shape = tuple(shape[0])
        shape = tuple(operator.index(s) for s in shape)
        # NumPy 2 takes any negative number as the one unknown dimension
        if sum(s < 0 for s in shape) > 1: raise ValueError("can only specify one unknown dimension")
        if any(s < 0 for s in shape):
            known = math.prod(s for s in shape if s >= 0)
            if known == 0 or self.size % known:
                raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
            shape = tuple(self.size // known if s < 0 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
        return self.uop.reshape(shape)

    def flatten(self) -> Tensor: return Tensor(self._reshaped((-1,)), self.weak)   # a copy in NumPy
    def ravel(self) -> Tensor: return self.reshape(-1)                             # a view in NumPy

    def transpose(self, *axes) -> Tensor:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)): axes = tuple(axes[0])
        if not axes: axes = tuple(range(self.ndim))[::-1]
        if len(axes) != self.ndim: raise ValueError("axes don't match array")
        order = tuple(normalize_axis(a, self.ndim) for a in axes)
        if len(set(order)) != len(order): raise ValueError("repeated axis in transpose")
        return self._view(self.uop.permute(order))

    permute = transpose

    def swapaxes(self, a: int, b: int) -> Tensor:
        order = list(range(self.ndim))
        a, b = normalize_axis(a, self.ndim), normalize_axis(b, self.ndim)
        order[a], order[b] = order[b], order[a]
        return self.transpose(order)

    def broadcast_to(self, shape) -> Tensor:
        shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(map(operator.index, shape))
        if len(shape) < self.ndim or any(s != n and s != 1 for s, n in zip(self.shape[::-1], shape[::-1])):
            raise ValueError(f"cannot broadcast an array of shape {self.shape} to shape {shape}")
        return self._view(self._broadcast(shape))

    def squeeze(self, axis=None) -> Tensor:
        axes = tuple(i for i, s in enumerate(self.shape) if s == 1) if axis is None else normalize_axes(axis, self.ndim)
        if any(self.shape[a] != 1 for a in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))

    def expand_dims(self, axis) -> Tensor:
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        ndim = self.ndim + len(axes)
        axes = normalize_axes(axes, ndim)
        it = iter(self.shape)
        return self.reshape(tuple(1 if i in axes else next(it) for i in range(ndim)))

    def __getitem__(self, index) -> Tensor:
        return self._view(_basic_index(self, index).uop)

    # ---------------------------------------------------------------------------------------------------------
    # reductions
    def _reduce(self, name: str, op: Ops, axis, keepdims: bool, dtype=None, initial=None) -> Tensor:
        axes = normalize_axes(axis, self.ndim)
        if name in ("max", "min") and initial is None and any(self.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {'maximum' if name == 'max' else 'minimum'} "
                             "which has no identity")
        dt = reduce_dtype(name, self.uop.dtype) if dtype is None else as_dtype(dtype)
        u = self.uop.cast(dt).reduce(op, axes) if axes else self.uop.cast(dt)
        if not keepdims: u = u.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))
        out = Tensor(u)
        if initial is not None:   # NumPy folds `initial` in like one more element
            out = Tensor._elementwise({"max": "maximum", "min": "minimum", "sum": "add", "prod": "multiply"}[name],
                                      op, out, initial)
            out = out.astype(dt)
        return out

    def sum(self, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Tensor:
        refuse("sum", out=out, where=where)
        return self._reduce("sum", Ops.ADD, axis, keepdims, dtype, initial)

    def prod(self, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Tensor:
        refuse("prod", out=out, where=where)
        return self._reduce("prod", Ops.MUL, axis, keepdims, dtype, initial)

    def max(self, axis=None, out=None, keepdims: bool = False, initial=None, where=None) -> Tensor:
        refuse("max", out=out, where=where)
        return self._reduce("max", Ops.MAX, axis, keepdims, None, initial)

    def min(self, axis=None, out=None, keepdims: bool = False, initial=None, where=None) -> Tensor:
        refuse("min", out=out, where=where)
        return self._reduce("min", Ops.MIN, axis, keepdims, None, initial)

    def mean(self, axis=None, dtype=None, out=None, keepdims: bool = False, where=None) -> Tensor:
        refuse("mean", out=out, where=where)
        if self.ndim == 0 and axis is not None:   # unlike sum, NumPy's mean checks the axis of a 0-d array
            for a in (axis if isinstance(axis, (tuple, list)) else (axis,)): normalize_axis(a, 0)
        axes = normalize_axes(axis, self.ndim)
        count = math.prod(self.shape[a] for a in axes)
        acc = as_dtype(dtype) if dtype is not None else None
        x = self.astype(acc) if acc is not None else self if self.uop.dtype.is_float else self.astype(np.float64)
        total = x.sum(axis=axes, keepdims=keepdims)
        out_ = Tensor._elementwise("true_divide", Ops.FDIV, total, Tensor(UOp.const(total.uop.dtype, count)))
        return out_ if acc is None else out_.astype(acc)

    def cumsum(self, axis=None, dtype=None, out=None) -> Tensor:
        refuse("cumsum", out=out)
        # NumPy flattens for axis=None, and for a 0-d array with axis 0 or -1
        flat = axis is None or (self.ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1))
        x = self.reshape(-1) if flat else self
        ax = 0 if flat else normalize_axis(axis, x.ndim)
        dt = reduce_dtype("cumsum", x.uop.dtype) if dtype is None else as_dtype(dtype)
        src = x.uop.cast(dt)
        if x.shape[ax] <= 1: return Tensor(src)
        return Tensor(UOp(Ops.SCAN, dt, (src,), (Ops.ADD, ax)))

    # ---------------------------------------------------------------------------------------------------------
    # NumPy interop: np.sin(tensor), np.sum(tensor), tensor + ndarray all trace
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        impl = NUMPY_IMPLEMENTATIONS.get(ufunc)
        if method != "__call__":
            impl = getattr(impl, method, None)
            if impl is None: raise unsupported(f"numpy.{ufunc.__name__}.{method}")
            return impl(*inputs, **kwargs)
        for name, value in kwargs.items():   # any keyword changes what the ufunc computes: none is implemented
            if name == "out" and isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
                # `a += traced` with a NumPy array `a` (captured, or made by np.zeros inside the function)
                raise unsupported(f"updating a NumPy array in place with a traced value (numpy.{ufunc.__name__} "
                                  "with out=)", "That array is a constant of the program: write a = a + y, or create "
                                  "arrays you update with numfn.numpy (fnp.zeros, ...)")
            if not (name == "out" and (value is None or (isinstance(value, tuple) and all(v is None for v in value)))):
                raise unsupported(f"the {name}= argument of numpy.{ufunc.__name__}")
        if impl is None: raise unsupported(f"numpy.{ufunc.__name__}")
        return impl(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        impl = NUMPY_IMPLEMENTATIONS.get(func)
        if impl is None: raise unsupported(f"{func.__module__}.{func.__name__}")
        try:
            _signature_of(impl).bind(*args, **kwargs)
        except TypeError as e:   # an argument NumPy takes and numfn does not
            raise unsupported(f"numpy.{func.__name__} with these arguments ({e})") from None
        return impl(*args, **kwargs)


# NumPy's functions and ufuncs (the objects themselves) -> numfn's implementations. numfn.numpy fills it: every
# name it defines that NumPy's namespace (or np.linalg, np.fft, ...) also defines is registered, so np.sin(x) and
# np.linalg.solve(a, b) on traced arrays run numfn.numpy's versions.
NUMPY_IMPLEMENTATIONS: dict[Any, Any] = {}


def tensor_method(name: str):
    """Register `fn(self, ...)` as the Tensor method `name` (numfn.numpy adds ndarray's methods this way)."""
    def register(fn):
        setattr(Tensor, name, fn)
        return fn
    return register


@functools.cache
def _signature_of(fn) -> inspect.Signature:
    return inspect.signature(fn)


class _BigInt(Tensor):
    """A Python int beyond 64 bits. NumPy takes one where it can: with float arrays (as a float) and in
    comparisons (by value); with integer arrays it raises OverflowError, as check_scalar_fits does here."""
    __slots__ = ("value",)

    def __init__(self, value: int):
        super().__init__(UOp.const(dtypes.float64, float(value)), weak=True)
        self.value = value

    @property
    def pyvalue(self):
        return self.value

    def _wtype(self):
        return int


_COMPARISONS = frozenset({"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"})


def _compare_by_value(ts: list[Tensor], cast: tuple) -> tuple:
    """A Python-int argument compared with an integer array: NumPy 2 compares the values, even when the int does
    not fit the array's dtype, so both are widened to 64 bits instead (uint64 against int64 compares exactly)."""
    params = [t.weak and t.uop.op is Ops.PARAM and t.uop.dtype.is_int for t in ts]
    if not any(params) or not all(d.is_int for d in cast): return cast
    return tuple(dtypes.int64 if p or not ts[i].uop.dtype.is_unsigned or ts[i].uop.dtype.itemsize < 8
                 else dtypes.uint64 for i, p in enumerate(params))


def _compare_out_of_range(ufunc: str, ts: list[Tensor]) -> Tensor | None:
    """NumPy 2 compares an integer array with a Python int outside its dtype's range by value: the answer is the
    same for every element. None when that is not the case here."""
    for i, (t, other) in enumerate(((ts[0], ts[1]), (ts[1], ts[0]))):
        if not (t.weak and t.uop.op is Ops.CONST and isinstance(t.pyvalue, int) and not other.weak
                and other.uop.dtype.is_int and not isinstance(t.pyvalue, bool)):
            continue
        v, dt = t.pyvalue, other.uop.dtype
        if dt.min <= v <= dt.max: return None
        # operands are in the ufunc's order (greater(a, b) is a > b), whatever order the ALU op gets them in
        above = v > dt.max
        less = above if i == 1 else not above       # is operand 0 < operand 1?
        result = {"less": less, "less_equal": less, "greater": not less, "greater_equal": not less,
                  "equal": False, "not_equal": True}[ufunc]
        return Tensor(UOp.const_like(dtypes.bool, result, broadcast_shapes(ts[0].shape, ts[1].shape)))
    return None


# What a trace records besides its graph, for the dispatcher (per thread: threads may trace at once).
_trace_state = threading.local()


@dataclass
class Check:
    """A condition checked after every call: where `failed` (a bool array computed by the program) holds, the call
    raises `error(payload)` with the payload (an int64 array of failed's shape) at the first failed position. This
    is how errors NumPy raises for values (an index out of bounds, a singular matrix) reach the caller."""
    failed: UOp
    payload: UOp
    error: Callable[[int], BaseException]


@dataclass
class TraceRecord:
    """`int_limits`: {argument slot: (min, max)} for Python-int arguments converted to narrower integers (NumPy
    raises OverflowError for values outside, and so does the dispatcher); `checks`: the Checks in trace order."""
    int_limits: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def _record_int_limit(slot: int, dt: DType) -> None:
    record = getattr(_trace_state, "record", None)
    if record is None: return
    lo, hi = record.int_limits.get(slot, (dtypes.int64.min, dtypes.int64.max))
    record.int_limits[slot] = (max(lo, dt.min), min(hi, dt.max))


def add_check(failed, payload, error: Callable[[int], BaseException]) -> None:
    """Raise `error(payload at the first failed position)` after a call where `failed` holds anywhere (see Check).
    Outside a trace (no record), nothing is checked: callers only trace."""
    record = getattr(_trace_state, "record", None)
    if record is None: raise RuntimeError("add_check outside a trace")
    f, p = Tensor.lift(failed), Tensor.lift(payload)
    shape = broadcast_shapes(f.shape, p.shape)
    f = Tensor(Tensor(f.uop.cast(dtypes.bool))._broadcast(shape)).reshape(-1)
    p = Tensor(Tensor(p.uop.cast(dtypes.int64))._broadcast(shape)).reshape(-1)
    n = f.size
    if n == 0: f, p = Tensor(UOp.const(dtypes.bool, False)), Tensor(UOp.const(dtypes.int64, 0))
    elif n > 1:   # reduced in the program: whether any failed, and the payload at the first that did
        first = Tensor(f.uop.alu(Ops.WHERE, UOp.iota(n), UOp.const_like(dtypes.int64, n, (n,)))).min()
        f, p = f.max(), gather(p, [first])
    record.checks.append(Check(f.uop.reshape(()), p.uop.reshape(()), error))


class recording_trace:
    """Context manager active while a function is traced: yields its TraceRecord."""

    def __enter__(self) -> TraceRecord:
        self.previous = getattr(_trace_state, "record", None)
        _trace_state.record = TraceRecord()
        return _trace_state.record

    def __exit__(self, *exc) -> None:
        _trace_state.record = self.previous


def _weak_resolve(ufunc: str, ts):
    # both operands are Python scalars: NumPy would compute with the default int64/float64
    dts = tuple(t.uop.dtype for t in ts)
    return resolve_ufunc(ufunc, dts)


def _power(base, exponent) -> Tensor:
    b, e = Tensor.lift(base), Tensor.lift(exponent)
    if b.uop.dtype.is_bool and not b.weak and type(exponent) is int and exponent == 2:
        return NUMPY_IMPLEMENTATIONS[np.square](b)   # ndarray ** 2 takes NumPy's square fast path: int8 for bools
    t = Tensor._elementwise("power", Ops.POW, b, e)
    ev = e.uop.arg if e.uop.op is Ops.CONST else None
    if t.uop.dtype.is_int and isinstance(ev, int) and not isinstance(ev, bool) and ev < 0:
        raise ValueError(f"Integers to negative integer powers are not allowed (at {user_location()})")
    return t


def matmul(a, b) -> Tensor:
    """NumPy's matmul: 1-D operands are promoted to matrices and the added axis removed again; leading axes
    broadcast. The product is a multiply and a sum over the shared axis, which the scheduler fuses."""
    a, b = Tensor.lift(a), Tensor.lift(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (a 0-d array; use * instead)")
    try:
        _, out = resolve_ufunc("matmul", (a.uop.dtype, b.uop.dtype))
    except TypeError as e:
        raise TypeError(f"{e} (at {user_location()})") from None
    a2 = a.reshape((1,) + a.shape) if a.ndim == 1 else a
    b2 = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
    n, k = a2.shape[-2:]
    k2, m = b2.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {k2} is different from {k})")
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    au = Tensor(a2.uop.cast(out)).broadcast_to(batch + (n, k)).reshape(batch + (n, 1, k))
    bu = Tensor(b2.uop.cast(out)).broadcast_to(batch + (k, m)).swapaxes(-1, -2).reshape(batch + (1, m, k))
    prod = Tensor(au.uop.expand(batch + (n, m, k)).alu(Ops.MUL, bu.uop.expand(batch + (n, m, k))))
    res = Tensor(prod.uop.reduce(Ops.ADD, (len(batch) + 2,)).reshape(batch + (n, m)))
    if a.ndim == 1: res = res.reshape(res.shape[:-2] + res.shape[-1:])
    if b.ndim == 1: res = res.reshape(res.shape[:-1])
    return res


def gather(x: Tensor, indices: Sequence) -> Tensor:
    """x[i_0, ..., i_{n-1}] at every position of the indices' broadcast shape (the GATHER primitive): one integer
    index (array or int) per axis of x. Indices outside [0, n) are clamped into it, so native code never reads
    outside x: callers wrap negative indices and check bounds first where NumPy raises. Clamping costs nothing
    where the indices' bounds prove them in range (ranges, and index arithmetic on them)."""
    x = Tensor.lift(x)
    if len(indices) != x.ndim: raise ValueError(f"gather needs {x.ndim} indices for a {x.ndim}-d array")
    ts = [Tensor.lift(i) for i in indices]
    shape = broadcast_shapes(*(t.shape for t in ts))
    srcs = []
    for t, n in zip(ts, x.shape):
        if not (t.uop.dtype.is_int or t.uop.dtype.is_bool):
            raise IndexError("arrays used as indices must be of integer type")
        u = t.uop.cast(dtypes.int64)
        lo, hi = u.bounds
        if lo < 0: u = u.alu(Ops.MAX, UOp.const(dtypes.int64, 0))
        if hi > n - 1: u = u.alu(Ops.MIN, UOp.const(dtypes.int64, max(n - 1, 0)))
        srcs.append(Tensor(u)._broadcast(shape))
    if math.prod(shape) == 0 or x.size == 0: return Tensor(UOp.const_like(x.uop.dtype, 0, shape))
    return Tensor(UOp(Ops.GATHER, x.uop.dtype, (x.uop, *srcs)))


def _basic_index(x: Tensor, index) -> Tensor:
    """NumPy basic indexing: integers, slices (any step), None and Ellipsis, as views of x."""
    if not isinstance(index, tuple): index = (index,)
    for i in index:
        if isinstance(i, (Tensor, np.ndarray, list)) or isinstance(i, (bool, np.bool_)):
            raise unsupported("indexing with arrays, lists or booleans (advanced indexing)",
                              "Use basic indexing (integers, slices, None, ...) or numfn.numpy.where")
        if not (i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`) and numpy.newaxis (`None`) are valid "
                             f"indices, got {i!r}")
    if sum(i is Ellipsis for i in index) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed")
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (x.ndim - used) + index[at + 1:]
    else:
        index = index + (slice(None),) * (x.ndim - used)
    u = x.uop
    final_shape: list[int] = []
    axis = 0
    for i in index:
        if i is None:
            final_shape.append(1)
            continue
        n = u.shape[axis]
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            count = len(range(start, stop, step))
            if step < 0:
                u = u.flip((axis,))
                start, step = n - 1 - start, -step
            u = _strided_slice(u, axis, start, step, count)
            final_shape.append(count)
        else:
            k = int(i)
            if not -n <= k < n: raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            k %= n
            u = u.shrink(tuple((k, k + 1) if a == axis else (0, s) for a, s in enumerate(u.shape)))
        axis += 1
    return Tensor(u.reshape(tuple(final_shape)), x.weak)


def _strided_slice(u: UOp, axis: int, start: int, step: int, count: int) -> UOp:
    """Elements start, start+step, ... (count of them) along `axis`, built from shrink, pad and reshape."""
    shape = u.shape
    def along(v, lo, hi): return v.shrink(tuple((lo, hi) if a == axis else (0, s) for a, s in enumerate(v.shape)))
    if count == 0: return along(u, 0, 0)
    if step == 1: return along(u, start, start + count)
    end = start + (count - 1) * step + 1
    u = along(u, start, end)
    u = u.pad(tuple((0, count * step - (end - start)) if a == axis else (0, 0) for a in range(len(shape))))
    u = u.reshape(shape[:axis] + (count, step) + shape[axis + 1:])
    u = u.shrink(tuple((0, 1) if a == axis + 1 else (0, s) for a, s in enumerate(u.shape)))
    return u.reshape(shape[:axis] + (count,) + shape[axis + 1:])


__all__ = ["Tensor", "matmul", "gather", "broadcast_shapes", "constant_buffer", "NumfnError"]
