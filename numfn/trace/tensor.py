"""The tracer: a NumPy-like array type whose operations build a UOp graph instead of computing.

Inside a function compiled by numfn.jit the array arguments are Tensors (placeholders made by `Tensor.empty`);
every operation returns a new Tensor whose `uop` describes how to compute it. Shapes and dtypes are concrete
Python values, so Python code may branch on them; values are not known, so Python code may not branch on them.
"""
from __future__ import annotations

import hashlib
import math
import operator
import sys
import weakref
from typing import TYPE_CHECKING, Any, NoReturn, SupportsIndex, TypeAlias, TypeVar
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from numfn.trace import pyscalar
from numfn.dtype import DType, PyScalar, check_scalar_fits, dtypes, resolve_ufunc, result_type, scalar_dtype
from numfn.args import as_dtype
from numfn.errors import (NumfnError, TracerConversionError, store_into_constant, storing_into_array,
                          unsupported, user_location)
from numfn.trace.unbound import is_unbound
from numfn.trace.known import known_value
from numfn.trace.value_sizes import python_item, requested_value
from numfn.trace.branch_layout import branch_layouts, same_in_every_branch
from numfn.trace.record import Check, TraceRecord, current_record, python_statement_note, record_int_limit, tracing
from numfn.ir.uop import MOVEMENT, Buffer, Ops, UOp

# What the tracer's operations take: an array operand is a traced array or anything NumPy converts to an array
# (Python and NumPy scalars, arrays, nested sequences); a shape is an int or several (a tuple or list); axes are
# an int, several, or None (all); a dtype is anything np.dtype accepts, a numfn DType, or None (the default).
TensorLike: TypeAlias = "Tensor | ArrayLike"
ShapeArg: TypeAlias = "SupportsIndex | Sequence[SupportsIndex]"
Axes: TypeAlias = "SupportsIndex | Sequence[SupportsIndex] | None"
DTypeArg: TypeAlias = "DTypeLike | DType | None"
_F = TypeVar("_F")   # what tensor_method registers (a function, or a property) keeps its type

# A Python scalar that meets a Tensor is "weak" (NEP 50): it takes the Tensor's dtype where the kinds allow.
_WEAK_TYPE = {"i": int, "u": int, "f": float, "c": complex}


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting of shapes; ValueError worded like NumPy's when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(dims) > 1:
            raise ValueError("operands could not be broadcast together with shapes " +   # (NumPy's trailing space)
                             "".join("(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ") " for s in shapes))
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def constant_buffer(data: np.ndarray) -> UOp:
    """A captured array as a constant BUFFER node; a private read-only copy, hashed by content."""
    data = np.array(data, copy=True, order="C")
    data.flags.writeable = False
    digest = hashlib.sha256(data.tobytes() + str((data.dtype.str, data.shape)).encode()).hexdigest()[:32]
    return UOp(Ops.BUFFER, dtypes.from_numpy(data.dtype), (), Buffer("constant", -1, data.shape, data, digest))


class Tensor:
    """A traced array. `uop` is its graph (its current value); `weak` marks values from Python scalars (NEP 50).

    Memory, as NumPy shares it: a view (basic indexing, reshape, transpose, ...) has a `base`, the array owning
    the memory, and a `chain` of movement ops (op, arg) from the base's value to its own. Writing into any of them
    (x[i] = v, x += v) gives the base a new value and every live view of it follows (numfn.trace.subscript).
    `memory` says what a base is: "computed" by the function, an "input" (writes change the caller's array), a
    "constant" captured from outside (writes refused), or "readonly".

    Example:
        numfn.jit(lambda x: print(type(x).__name__, x.shape) or x)(np.ones(2))   # a Tensor while tracing
    """
    __slots__ = ("uop", "weak", "memory", "base", "chain", "_views", "_links", "array0d", "__weakref__")
    __array_priority__ = 1000
    # what isinstance in the user's code sees: NumPy's type for the value (numpy_protocol.numpy_class), not Tensor
    __class__ = property(lambda self: self.numpy_class(sys._getframe(1)))
    runtime_length = False   # numfn.trace.dynamic.DynTensor: the first axis has a length known only at run time

    # what DynTensor (numfn.trace.dynamic, above this module) overrides: operations with an operand of run-time length
    @staticmethod
    def runtime_length_elementwise(fn: Callable[..., Tensor], operands: Sequence) -> Tensor:
        raise NotImplementedError

    @staticmethod
    def runtime_length_matmul(a: Any, b: Any) -> Tensor:
        raise NotImplementedError

    def __init__(self, uop: UOp, weak: bool = False, memory: str = "computed") -> None:
        self.uop, self.weak, self.memory = uop, weak, memory
        self.base: Tensor | None = None
        self.chain: tuple = ()
        self._views: list | None = None
        self._links: list | None = None   # memory a branch may have made this array share (numfn.trace.branch_views)
        self.array0d = False   # a 0-d value NumPy would give as an ndarray, not a NumPy scalar (see is_scalar)
        record = current_record()
        if record is not None and record.born is not None: record.born.add(id(self))

    # ---------------------------------------------------------------------------------------------------------
    # creation
    @staticmethod
    def empty(shape: Sequence[int], dtype: DTypeArg, slot: int = 0, weak: bool = False) -> Tensor:
        """A placeholder for function input number `slot`: its values are unknown while tracing."""
        return Tensor(UOp(Ops.PARAM, as_dtype(dtype), (), (slot, tuple(int(s) for s in shape))), weak, "input")

    @staticmethod
    def full(shape: Sequence[int], value: Any, dtype: DTypeArg = None) -> Tensor:
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
        if isinstance(x, (list, tuple)) and _holds_tensors(x):   # np.array([t, 1.0]): the elements stacked
            items = [Tensor.lift(e) for e in x]
            # array construction knows no weak scalars: a Python float element is a float64
            items = [Tensor(t.uop.cast(scalar_dtype(t.pyvalue))) if t.weak and t.uop.op is Ops.CONST else t
                     for t in items]
            dt = result_type(*(t.uop.dtype for t in items))
            if any(t.shape != items[0].shape for t in items):
                raise ValueError("setting an array element with a sequence. The requested array has an "
                                 "inhomogeneous shape after 1 dimensions.")
            return NUMPY_IMPLEMENTATIONS[np.stack]([t.astype(dt) for t in items])
        if isinstance(x, (np.ndarray, list, tuple)):
            arr = np.asarray(x)
            if not arr.dtype.isnative: arr = arr.astype(arr.dtype.newbyteorder("="))   # constants are stored native
            if arr.dtype == object:
                raise TypeError(f"cannot use a {type(x).__name__} of mixed or non-numeric values as an array")
            dt = dtypes.from_numpy(arr.dtype)
            # writing into a captured array would change it for every later call in NumPy: refused
            memory = "constant" if isinstance(x, np.ndarray) else "computed"
            if arr.size == 1: return Tensor(UOp.const_like(dt, arr.reshape(()).item(), arr.shape), memory=memory)
            return Tensor(constant_buffer(arr), memory=memory)
        # converted control flow left it without a value (says why), or bound it where a traced condition holds
        # (MaybeUnbound: its value, checked)
        if is_unbound(x): return Tensor.lift(x._fail())
        raise TypeError(f"cannot use a value of type {type(x).__name__} as an array in a numfn-compiled function")

    # ---------------------------------------------------------------------------------------------------------
    # properties
    @property
    def shape(self) -> tuple[int, ...]:
        shape = self.uop.shape
        assert shape is not None   # a traced array's value is a tensor-level node
        return shape

    @property
    def dtype(self) -> np.dtype: return self.uop.dtype.np

    @property
    def ndim(self) -> int: return len(self.shape)

    @property
    def size(self) -> int: return math.prod(self.shape)

    @property
    def itemsize(self) -> int: return self.uop.dtype.itemsize

    @property
    def nbytes(self) -> int: return self.size * self.uop.dtype.itemsize

    @property
    def T(self) -> Tensor: return self.transpose()

    def __len__(self) -> int:
        if not self.shape: raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape: raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.uop.dtype.name}{', weak' if self.weak else ''})"
    def __str__(self) -> str: return f"{self!r} (traced: numfn.debug.print shows its value at run time)"  # noqa: E301

    @property
    def pyvalue(self) -> Any:
        """The Python value of a constant."""
        return self.uop.arg

    def known(self) -> np.ndarray | None:
        """The values of this array when they are known while tracing (built from constants, captured arrays and
        ranges: np.array([1, 2]), np.arange(3) * 2), as a NumPy array; else None (they depend on the inputs)."""
        return known_value(self.uop)

    # ---------------------------------------------------------------------------------------------------------
    # things a tracer cannot do
    def _concrete(self, what: str) -> NoReturn:
        # a[i] = self, `a` a NumPy array: its __setitem__ asked (the frame above the conversion is the store)
        if storing_into_array(sys._getframe(2)): raise store_into_constant(user_location())
        raise TracerConversionError(
            f"{what} needs the value of a traced array, but numfn traces the function with placeholder arrays "
            f"whose values are only known when the compiled code runs (at {user_location()}). "
            "if/while/for-range statements and conditional expressions (x if c else y, and, or, not) on traced "
            "values compile (docs/control-flow.md), but not in code whose source numfn cannot read (a lambda jitted "
            "as it is); choose elementwise with numfn.numpy.where(condition, a, b), and return arrays instead of "
            "converting them to Python numbers." +
            python_statement_note())

    def __bool__(self) -> bool: self._concrete("using an array as a Python bool (if, while, and, or, not)")
    def __float__(self) -> float: self._concrete("float()")
    def __int__(self) -> int:   # of a 0-d value outside loops and branches: computed in a second pass (value_sizes)
        if self.ndim != 0 or storing_into_array(sys._getframe(1)): self._concrete("int()")
        return requested_value(self, "int()", lambda a: int(python_item(a)))
    def __complex__(self) -> complex: self._concrete("complex()")
    def __index__(self) -> int: self._concrete("using an array as an index or size")
    def __array__(self, *a: Any, **k: Any) -> np.ndarray:
        self._concrete("converting to a NumPy array (np.asarray, np.array)")
    def tolist(self) -> NoReturn: self._concrete(".tolist()")

    # ---------------------------------------------------------------------------------------------------------
    # in-place operators
    def is_scalar(self) -> bool:
        """Whether NumPy would hold this value as a Python or NumPy scalar (immutable: `+=` rebinds the name, and a
        NumPy scalar's dtype promotes as an array's): a weak value, or a 0-d value computed by a ufunc, a reduction
        or an operator. 0-d arrays are arguments, views (x[...]) and what NumPy's functions that make arrays give
        (np.array, np.where, copy, astype of an array, np.zeros(()), ...: `as_array`)."""
        return self.weak or (self.ndim == 0 and self.memory == "computed" and self.base is None
                             and self.uop.op is not Ops.PARAM and not self.array0d)

    def as_array(self) -> Tensor:
        """This value as a 0-d ndarray where it is 0-d (what NumPy's array-making functions return); itself."""
        if self.ndim == 0 and not self.weak: self.array0d = True
        return self

    def _inplace(self, ufunc: str, symbol: str, compute: Callable[[Tensor, TensorLike], Tensor],
                 x: TensorLike) -> Tensor:
        """`self symbol= x` as NumPy does it: the result, cast back to self's dtype under 'same_kind' casting, is
        written into this array's memory (every name bound to it and every view of its base see it; for a
        function input, the caller's array changes). Python and NumPy scalars (`is_scalar`) are immutable: Python
        rebinds the name instead."""
        if self.is_scalar(): return NotImplemented
        result = compute(self, x)
        if not _same_shape(result, self):
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't match the broadcast "
                             f"shape {result.shape}")
        if result.dtype != self.dtype:
            if not np.can_cast(result.dtype, self.dtype, "same_kind"):
                raise TypeError(f"Cannot cast ufunc '{ufunc}' output from {result.dtype!r} to {self.dtype!r} with "
                                "casting rule 'same_kind'")
            result = result.astype(self.dtype)
        self[...] = result   # numfn.trace.subscript's __setitem__
        return self

    def __iadd__(self, x: TensorLike) -> Tensor: return self._inplace("add", "+", operator.add, x)
    def __isub__(self, x: TensorLike) -> Tensor: return self._inplace("subtract", "-", operator.sub, x)
    def __imul__(self, x: TensorLike) -> Tensor: return self._inplace("multiply", "*", operator.mul, x)
    def __itruediv__(self, x: TensorLike) -> Tensor: return self._inplace("divide", "/", operator.truediv, x)
    def __ifloordiv__(self, x: TensorLike) -> Tensor: return self._inplace("floor_divide", "//", operator.floordiv, x)
    def __imod__(self, x: TensorLike) -> Tensor: return self._inplace("remainder", "%", operator.mod, x)
    def __ipow__(self, x: TensorLike) -> Tensor: return self._inplace("power", "**", operator.pow, x)
    def __imatmul__(self, x: TensorLike) -> Tensor: return self._inplace("matmul", "@", operator.matmul, x)
    def __iand__(self, x: TensorLike) -> Tensor: return self._inplace("bitwise_and", "&", operator.and_, x)
    def __ior__(self, x: TensorLike) -> Tensor: return self._inplace("bitwise_or", "|", operator.or_, x)
    def __ixor__(self, x: TensorLike) -> Tensor: return self._inplace("bitwise_xor", "^", operator.xor, x)
    def __ilshift__(self, x: TensorLike) -> Tensor: return self._inplace("left_shift", "<<", operator.lshift, x)
    def __irshift__(self, x: TensorLike) -> Tensor: return self._inplace("right_shift", ">>", operator.rshift, x)

    def __getattr__(self, name: str):
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise unsupported(f"ndarray.{name}")
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")

    if TYPE_CHECKING:
        # what numfn.trace's shape_methods, reduction_methods, numpy_protocol and subscript and numfn.numpy add
        # (tensor_method), declared for type checkers
        def numpy_class(self, frame: Any) -> type: ...
        def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any: ...
        def __array_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...],
                               kwargs: dict[str, Any]) -> Any: ...
        def reshape(self, *shape: ShapeArg, order: str = "C", copy: bool | None = None) -> Tensor: ...
        def _reshaped(self, shape: tuple, order: str = "C") -> UOp: ...
        def is_contiguous(self, order: str = "C") -> bool: ...
        def flatten(self, order: str = "C") -> Tensor: ...
        def ravel(self, order: str = "C") -> Tensor: ...
        def transpose(self, *axes: ShapeArg) -> Tensor: ...
        def permute(self, *axes: ShapeArg) -> Tensor: ...
        def swapaxes(self, a: int, b: int) -> Tensor: ...
        def broadcast_to(self, shape: ShapeArg) -> Tensor: ...
        def squeeze(self, axis: Axes = None) -> Tensor: ...
        def expand_dims(self, axis: ShapeArg) -> Tensor: ...
        def _reduce(self, name: str, op: Ops, axis: Axes, keepdims: bool, dtype: DTypeArg = None,
                    initial: TensorLike | None = None, where: TensorLike | None = None) -> Tensor: ...
        def sum(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, keepdims: bool = False,
                initial: TensorLike | None = None, where: TensorLike | None = None) -> Tensor: ...
        def prod(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, keepdims: bool = False,
                 initial: TensorLike | None = None, where: TensorLike | None = None) -> Tensor: ...
        def max(self, axis: Axes = None, out: None = None, keepdims: bool = False, initial: TensorLike | None = None,
                where: TensorLike | None = None) -> Tensor: ...
        def min(self, axis: Axes = None, out: None = None, keepdims: bool = False, initial: TensorLike | None = None,
                where: TensorLike | None = None) -> Tensor: ...
        def mean(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, keepdims: bool = False,
                 where: TensorLike | None = None) -> Tensor: ...
        def cumsum(self, axis: SupportsIndex | None = None, dtype: DTypeArg = None, out: None = None) -> Tensor: ...
        def _scan(self, name: str, op: Ops, axis: SupportsIndex | None, dtype: DTypeArg) -> Tensor: ...
        def __getitem__(self, index: Any) -> Tensor: ...
        def __setitem__(self, index: Any, value: TensorLike) -> None: ...
        def all(self, axis: Axes = None, out: None = None, keepdims: bool = False, *,
                where: TensorLike | None = None) -> Tensor: ...
        def any(self, axis: Axes = None, out: None = None, keepdims: bool = False, *,
                where: TensorLike | None = None) -> Tensor: ...
        def argmax(self, axis: SupportsIndex | None = None, out: None = None, *, keepdims: bool = False) -> Tensor: ...
        def argmin(self, axis: SupportsIndex | None = None, out: None = None, *, keepdims: bool = False) -> Tensor: ...
        def argpartition(self, kth: TensorLike, axis: SupportsIndex | None = -1, kind: str = "introselect",
                         order: None = None) -> Tensor: ...
        def argsort(self, axis: SupportsIndex | None = -1, kind: str | None = None, order: None = None, *,
                    stable: bool | None = None) -> Tensor: ...
        def choose(self, choices: TensorLike | Sequence[TensorLike], out: None = None,
                   mode: str = "raise") -> Tensor: ...
        def clip(self, min: TensorLike | None = None, max: TensorLike | None = None, out: None = None,  # noqa: A002
                 **kwargs: Any) -> Tensor: ...
        def compress(self, condition: TensorLike, axis: SupportsIndex | None = None, out: None = None) -> Tensor: ...
        def copy(self, order: str = "C") -> Tensor: ...
        def cumprod(self, axis: SupportsIndex | None = None, dtype: DTypeArg = None, out: None = None) -> Tensor: ...
        def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor: ...
        def dot(self, b: TensorLike, out: None = None) -> Tensor: ...
        def fill(self, value: TensorLike) -> None: ...
        def item(self, *args: Any) -> Tensor: ...
        @property
        def mT(self) -> Tensor: ...
        def nonzero(self) -> tuple[Tensor, ...]: ...
        def partition(self, kth: TensorLike, axis: SupportsIndex | None = -1, kind: str = "introselect",
                      order: None = None) -> None: ...
        def put(self, indices: TensorLike, values: TensorLike, mode: str = "raise") -> None: ...
        def repeat(self, repeats: TensorLike, axis: SupportsIndex | None = None) -> Tensor: ...
        def round(self, decimals: int = 0, out: None = None) -> Tensor: ...
        def searchsorted(self, v: TensorLike, side: str = "left", sorter: TensorLike | None = None) -> Tensor: ...
        def sort(self, axis: SupportsIndex | None = -1, kind: str | None = None, order: None = None, *,
                 stable: bool | None = None) -> None: ...
        def std(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, ddof: float = 0,
                keepdims: bool = False, *, where: TensorLike | None = None,
                mean: TensorLike | None = None) -> Tensor: ...
        def take(self, indices: TensorLike, axis: SupportsIndex | None = None, out: None = None,
                 mode: str = "raise") -> Tensor: ...
        def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DTypeArg = None,
                  out: None = None) -> Tensor: ...
        def var(self, axis: Axes = None, dtype: DTypeArg = None, out: None = None, ddof: float = 0,
                keepdims: bool = False, *, where: TensorLike | None = None,
                mean: TensorLike | None = None) -> Tensor: ...

    # ---------------------------------------------------------------------------------------------------------
    # elementwise machinery
    def _wtype(self):
        # NEP 50 makes Python int and float weak; a Python bool behaves like np.bool_
        return _WEAK_TYPE[self.uop.dtype.kind] if self.weak and not self.uop.dtype.is_bool else self.uop.dtype

    def _broadcast(self, shape: tuple[int, ...]) -> UOp:
        u = self.uop
        if u.shape == shape: return u
        u = u.reshape((1,) * (len(shape) - self.ndim) + self.shape)
        return u.expand(shape)

    @staticmethod
    def _elementwise(ufunc: str, op: Ops, *operands, swap: bool = False, dtype: DType | None = None,
                     python: bool = False) -> Tensor:
        """NumPy's `ufunc` (the ALU op `op`) on the operands; `python`: a Python operator, which computes as Python
        does between two Python scalars (numfn.trace.pyscalar). Anything else is NumPy's: a ufunc of Python scalars
        alone computes in their default types and gives a NumPy value, not a Python scalar."""
        dyn = next((x for x in operands if isinstance(x, Tensor) and x.runtime_length), None)
        if dyn is not None:
            return dyn.runtime_length_elementwise(
                lambda *ts: Tensor._elementwise(ufunc, op, *ts, swap=swap, dtype=dtype, python=python), operands)
        ts = [Tensor.lift(x) for x in operands]
        if python and len(ts) == 2 and ts[0].weak and ts[1].weak: return _python_binary(_SYMBOLS[ufunc], *ts)
        if ufunc in _COMPARISONS and len(ts) == 2 and dtype is None:
            decided = _compare_out_of_range(ufunc, ts)
            if decided is not None: return decided
        try:
            cast, out = resolve_ufunc(ufunc, tuple(t._wtype() for t in ts), dtype) if not all(t.weak for t in ts) \
                else _weak_resolve(ufunc, ts, dtype)
            if ufunc in _COMPARISONS and len(ts) == 2: cast = _compare_by_value(ts, cast)
        except TypeError as e:
            raise TypeError(f"{e} (numpy.{ufunc} of {', '.join(t.uop.dtype.name for t in ts)}, "
                            f"at {user_location()})") from None
        for t, d in zip(ts, cast): weak_fits(t, d)
        if any(d.is_complex for d in cast): _check_complex(ufunc, op)
        shape = broadcast_shapes(*(t.shape for t in ts))
        srcs = [Tensor(t.uop.cast(d), t.weak)._broadcast(shape) for t, d in zip(ts, cast)]
        if swap: srcs.reverse()
        u = srcs[0].alu(op, *srcs[1:])
        if u.dtype is not out: u = u.cast(out)
        return Tensor(u)

    def _unary(self, ufunc: str, op: Ops | None, dtype: DType | None = None, python: str | None = None) -> Tensor:
        """NumPy's unary `ufunc`; `python`: the Python operator's symbol ('-', '+', '~', 'abs'), which computes as
        Python does on a Python scalar (numfn.trace.pyscalar)."""
        if self.runtime_length:
            return self.runtime_length_elementwise(lambda t: t._unary(ufunc, op, dtype, python), [self])
        if python is not None and self.weak: return _python_unary(python, self)
        try:
            (cast,), out = resolve_ufunc(ufunc, (self.uop.dtype,), dtype)
        except TypeError as e:
            raise TypeError(f"{e} (numpy.{ufunc} of {self.uop.dtype.name}, at {user_location()})") from None
        if cast.is_complex and op is not None: _check_complex(ufunc, op)
        u = self.uop.cast(cast)
        if op is not None: u = u.alu(op)
        return Tensor(u.cast(out))

    # arithmetic operators
    def __add__(self, x: TensorLike) -> Tensor: return _operator("add", Ops.ADD, self, x)
    def __radd__(self, x: TensorLike) -> Tensor: return _operator("add", Ops.ADD, x, self)
    def __sub__(self, x: TensorLike) -> Tensor: return _operator("subtract", Ops.SUB, self, x)
    def __rsub__(self, x: TensorLike) -> Tensor: return _operator("subtract", Ops.SUB, x, self)
    def __mul__(self, x: TensorLike) -> Tensor: return _operator("multiply", Ops.MUL, self, x)
    def __rmul__(self, x: TensorLike) -> Tensor: return _operator("multiply", Ops.MUL, x, self)
    def __truediv__(self, x: TensorLike) -> Tensor: return _operator("true_divide", Ops.FDIV, self, x)
    def __rtruediv__(self, x: TensorLike) -> Tensor: return _operator("true_divide", Ops.FDIV, x, self)
    def __floordiv__(self, x: TensorLike) -> Tensor: return _operator("floor_divide", Ops.FLOORDIV, self, x)
    def __rfloordiv__(self, x: TensorLike) -> Tensor: return _operator("floor_divide", Ops.FLOORDIV, x, self)
    def __mod__(self, x: TensorLike) -> Tensor: return _operator("remainder", Ops.MOD, self, x)
    def __rmod__(self, x: TensorLike) -> Tensor: return _operator("remainder", Ops.MOD, x, self)
    def __lshift__(self, x: TensorLike) -> Tensor: return _operator("left_shift", Ops.SHL, self, x)
    def __rlshift__(self, x: TensorLike) -> Tensor: return _operator("left_shift", Ops.SHL, x, self)
    def __rshift__(self, x: TensorLike) -> Tensor: return _operator("right_shift", Ops.SHR, self, x)
    def __rrshift__(self, x: TensorLike) -> Tensor: return _operator("right_shift", Ops.SHR, x, self)
    def __divmod__(self, x: TensorLike) -> tuple[Tensor, Tensor]: return (self // x, self % x)
    def __rdivmod__(self, x: TensorLike) -> tuple[Tensor, Tensor]:
        return (Tensor.lift(x) // self, Tensor.lift(x) % self)
    def __pow__(self, x: TensorLike) -> Tensor: return _power(self, x, python=True)
    def __rpow__(self, x: TensorLike) -> Tensor: return _power(x, self, python=True)
    def __matmul__(self, x: TensorLike) -> Tensor: return matmul(self, x)
    def __rmatmul__(self, x: TensorLike) -> Tensor: return matmul(x, self)
    def __neg__(self) -> Tensor: return self._unary("negative", Ops.NEG, python="-")
    def __pos__(self) -> Tensor: return self._unary("positive", None, python="+")
    def __abs__(self) -> Tensor:   # a new array even for unsigned and bool values, which it leaves as they are
        return self._unary("absolute", None if self.uop.dtype.kind in "ub" else Ops.ABS, python="abs")
    def __invert__(self) -> Tensor: return self._unary("invert", Ops.NOT, python="~")
    def __and__(self, x: TensorLike) -> Tensor: return _operator("bitwise_and", Ops.AND, self, x)
    def __rand__(self, x: TensorLike) -> Tensor: return _operator("bitwise_and", Ops.AND, x, self)
    def __or__(self, x: TensorLike) -> Tensor: return _operator("bitwise_or", Ops.OR, self, x)
    def __ror__(self, x: TensorLike) -> Tensor: return _operator("bitwise_or", Ops.OR, x, self)
    def __xor__(self, x: TensorLike) -> Tensor: return _operator("bitwise_xor", Ops.XOR, self, x)
    def __rxor__(self, x: TensorLike) -> Tensor: return _operator("bitwise_xor", Ops.XOR, x, self)
    def __lt__(self, x: TensorLike) -> Tensor: return _operator("less", Ops.CMPLT, self, x)
    def __le__(self, x: TensorLike) -> Tensor: return _operator("less_equal", Ops.CMPLE, self, x)
    def __gt__(self, x: TensorLike) -> Tensor: return _operator("greater", Ops.CMPLT, self, x, swap=True)
    def __ge__(self, x: TensorLike) -> Tensor:
        return _operator("greater_equal", Ops.CMPLE, self, x, swap=True)
    def __eq__(self, x: object) -> Tensor:  # type: ignore[override]  # elementwise, as ndarray's
        return _operator("equal", Ops.CMPEQ, self, x)
    def __ne__(self, x: object) -> Tensor:  # type: ignore[override]  # elementwise, as ndarray's
        return _operator("not_equal", Ops.CMPNE, self, x)
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise, so not hashable

    def abs(self) -> Tensor: return abs(self)

    # ---------------------------------------------------------------------------------------------------------
    # conversions and views
    def astype(self, dtype: DTypeArg, copy: bool = True) -> Tensor:
        """The array converted to `dtype` the way NumPy's astype converts (unsafe casting; complex to real keeps
        the real part, with NumPy's ComplexWarning)."""
        dt = as_dtype(dtype)
        if not copy and dt == self.uop.dtype: return self   # NumPy returns the array itself
        if self.uop.dtype.is_complex and not (dt.is_complex or dt.is_bool): warn_complex_discarded()
        out = Tensor(self.uop.cast(dt))
        return out if self.is_scalar() else out.as_array()   # a NumPy scalar's astype is a scalar

    # complex numbers: .real and .imag are views (writable: x.real[...] = v and x.imag = v write into x's memory)
    @property
    def real(self) -> Tensor:
        """The real part: for a complex array a view of its real lanes (writes into it change the array), for a real
        array the array itself."""
        return self if not self.uop.dtype.is_complex else self._component(0)

    @real.setter
    def real(self, value: TensorLike) -> None:
        Tensor.__setitem__(self.real, Ellipsis, value)   # numfn.trace.subscript's setitem

    @property
    def imag(self) -> Tensor:
        """The imaginary part: for a complex array a view of its imaginary lanes, for a real array read-only
        zeros."""
        if self.uop.dtype.is_complex: return self._component(1)
        zeros = Tensor(UOp.const_like(self.uop.dtype, 0, self.shape), self.weak, "readonly")
        return zeros

    @imag.setter
    def imag(self, value: TensorLike) -> None:
        if not self.uop.dtype.is_complex: raise TypeError("array does not have imaginary part to set")
        Tensor.__setitem__(self.imag, Ellipsis, value)

    def _component(self, lane: int) -> Tensor:
        """The view of one part of a complex array: a chain step (CAST for the real part, IMAG for the imaginary
        one) that keeps every index where it is; writes through it replace that part only (numfn.trace.subscript)."""
        step = (Ops.CAST, None) if lane == 0 else (Ops.IMAG, None)
        uop = replay(self.uop, (step,))
        if self.weak or (self.base is None and self.memory == "computed" and self.uop.op is Ops.CONST):
            return Tensor(uop, self.weak)
        base = self if self.base is None else self.base
        view = Tensor(uop, self.weak, base.memory)
        view.base, view.chain = base, self.chain + (step,)
        if base._views is None: base._views = []
        base._views.append(weakref.ref(view))
        return view

    def conj(self) -> Tensor:
        """The complex conjugate (the array itself for real arrays, as NumPy's conjugate computes it)."""
        return NUMPY_IMPLEMENTATIONS[np.conjugate](self)

    conjugate = conj

    def _view(self, uop: UOp, make: Callable[[UOp], Tensor] | None = None) -> Tensor:
        """The view of this array whose value is `uop`, built from self.uop by movement ops and gathers: it shares
        memory with this array's base, so writes into either show through the other (see numfn.trace.subscript). Where
        NumPy would copy instead (a reshape that no strides can describe), the result is a copy: it shares nothing.
        `make` builds the view object from its value (a window of run-time length: numfn.trace.dynamic)."""
        make = make or (lambda v: Tensor(v, self.weak))
        ops: list[tuple[Ops, Any]] = []
        u = uop
        while u is not self.uop:
            # a gather: a window of run-time length (writable) or a diagonal (read-only), by its arg
            if u.op is Ops.GATHER: ops.append((u.op, (u.arg, u.src[1:])))
            elif u.op in MOVEMENT: ops.append((u.op, u.arg))
            elif u.op in (Ops.CAST, Ops.IMAG) and u.src[0].dtype.is_complex and u.dtype is u.src[0].dtype.component:
                ops.append((u.op, None))   # the real or imaginary part (see _component)
            else: return make(uop)
            u = u.src[0]
        base = self if self.base is None else self.base
        view = make(uop)
        view.memory = base.memory
        view.base, view.chain = base, self.chain + tuple(reversed(ops))
        if any(op is Ops.RESHAPE for op, _ in ops) and not _strided(view): return make(uop)
        if base._views is None: base._views = []
        base._views.append(weakref.ref(view))
        return view

    def rebind(self, uop: UOp, record: bool = True) -> None:
        """Give this base array a new value (a new version of its memory): its live views now read it too. A loop
        body or branch being traced notes the arrays it rebinds (`record=False` for numfn.trace.control's own)."""
        assert self.base is None
        trace: TraceRecord | None = current_record() if record else None
        if trace is not None and trace.rebinds is not None and id(self) not in trace.rebinds and \
                (trace.born is None or id(self) not in trace.born):
            trace.rebinds[id(self)] = (self, self.uop)   # a loop body writing into an array from outside it
        self.uop = uop
        alive = []
        for ref in self._views or ():
            view = ref()
            if view is None: continue
            view.uop = replay(uop, view.chain)
            alive.append(ref)
        self._views = alive or None
        if self._links and record:   # a branch's result that is this array's memory in some branches follows it
            Links.follow(self)

    def chain_shapes(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """For every op of this view's chain: (the shape it makes, the shape of its source)."""
        assert self.base is not None, "a base array has no chain"
        out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        u = self.base.uop
        for step in self.chain:
            nu = replay(u, (step,))
            assert nu.shape is not None and u.shape is not None   # views are tensor-level nodes
            out.append((nu.shape, u.shape))
            u = nu
        return out

    def contiguous(self) -> Tensor:
        """Materialize the array in its own buffer (a scheduling hint; the values do not change)."""
        return Tensor(UOp(Ops.CONTIGUOUS, self.uop.dtype, (self.uop,)), self.weak)


# NumPy's functions and ufuncs (the objects themselves) -> numfn's implementations. numfn.numpy fills it: every
# name it defines that NumPy's namespace (or np.linalg, np.fft, ...) also defines is registered, so np.sin(x) and
# np.linalg.solve(a, b) on traced arrays run numfn.numpy's versions.
NUMPY_IMPLEMENTATIONS: dict[Any, Any] = {}


# numfn.numpy's namespace by name (numfn.numpy fills it): how the tracer, below numfn.numpy, calls its functions
NUMFN_NUMPY: dict[str, Any] = {}


def numpy_function(name: str) -> Any:
    """numfn.numpy's function `name` (fnp.name, as the user's code calls it)."""
    return NUMFN_NUMPY[name]


def promote(*xs: Tensor) -> DType:
    """NumPy 2 result_type with weak Python scalars: the dtype arrays and scalars combine to."""
    strong = [t.uop.dtype for t in xs if not t.weak]
    kinds = [t.uop.dtype.kind for t in xs if t.weak]
    if not strong: return result_type(*(t.uop.dtype for t in xs))
    dt = result_type(*strong)
    rep = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}
    return dtypes.from_numpy(np.result_type(dt.np, *(rep[k] for k in kinds)))


class Links:
    """What happens to the memory a branch's result may share with other arrays (Tensor._links) when one of them
    is written: numfn.trace.branch_views, above this module, registers it when imported."""
    follow: Callable[[Tensor], None]              # an array was rebound: the results linked to it read its value
    write_through: Callable[..., None]            # a result was written: so are the arrays it is linked to


def tensor_method(name: str) -> Callable[[_F], _F]:
    """Register `fn(self, ...)` as the Tensor method `name` (numfn.numpy adds ndarray's methods this way, and
    numfn.trace.subscript `__getitem__` and `__setitem__`: this module imports neither)."""
    def register(fn: _F) -> _F:
        setattr(Tensor, name, fn)
        return fn
    return register


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
    """A traced Python int compared with an integer array: NumPy 2 compares the values, even when the int does
    not fit the array's dtype, so both are widened to 64 bits instead (uint64 against int64 compares exactly)."""
    params = [t.weak and t.uop.op is not Ops.CONST and t.uop.dtype.is_int for t in ts]
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


def weak_fits(t: Tensor, dt: DType) -> None:
    """NEP 50: a Python int converted to the integer type `dt` of the array it meets must fit it, or NumPy raises
    OverflowError. A constant is checked now; an argument by the dispatcher (its range: TraceRecord.int_limits);
    a value computed from Python ints (a loop index, n + 1) after the call, unless its bounds fit."""
    if not t.weak or not dt.is_int or t.uop.dtype.is_bool or t.uop.dtype is dt: return
    if t.uop.op is Ops.CONST: return check_scalar_fits(t.pyvalue, dt)
    if not t.uop.dtype.is_int: return
    lo, hi = t.uop.bounds
    if dt.min <= lo and hi <= dt.max: return
    if t.uop.op is Ops.PARAM: return record_int_limit(t.uop.arg[0], dt)
    if not tracing(): return
    v = t.uop.reshape(())
    out = v.alu(Ops.CMPLT, UOp.const(v.dtype, max(dt.min, v.dtype.min))).alu(
        Ops.OR, UOp.const(v.dtype, min(dt.max, v.dtype.max)).alu(Ops.CMPLT, v))
    add_check(Tensor(out), Tensor(v), lambda value: OverflowError(f"Python integer {value} out of bounds for "
                                                                 f"{dt.name}"))


def add_check(failed: TensorLike, payload: TensorLike, error: Callable[[int], BaseException]) -> None:
    """Raise `error(payload at the first failed position)` after a call where `failed` holds anywhere (see Check).
    Outside a trace (no record), nothing is checked: callers only trace."""
    record = current_record()
    if record is None: raise RuntimeError("add_check outside a trace")
    f, p = Tensor.lift(failed), Tensor.lift(payload)
    shape = broadcast_shapes(f.shape, p.shape)
    f = Tensor(Tensor(f.uop.cast(dtypes.bool))._broadcast(shape)).reshape(-1)
    p = Tensor(Tensor(p.uop.cast(dtypes.int64))._broadcast(shape)).reshape(-1)
    n = f.size
    if n == 0: f, p = Tensor(UOp.const(dtypes.bool, False)), Tensor(UOp.const(dtypes.int64, 0))
    elif n > 1:   # reduced in the program, in one pass: the first position that failed (n if none), its payload
        first = Tensor(f.uop.alu(Ops.WHERE, UOp.iota(n), UOp.const_like(dtypes.int64, n, (n,)))).min()
        f, p = first < n, gather(p, [first])
    check = Check(f.uop.reshape(()), p.uop.reshape(()), error)
    if not any(c.failed is check.failed and c.payload is check.payload for c in record.checks):   # once is enough
        record.checks.append(check)


def reduction_mask(where: TensorLike | None, shape: tuple[int, ...]) -> UOp | None:
    """The where= mask of a reduction as a bool graph of `shape`, or None when every element takes part (NumPy's
    default where=True). An array mask must be bool (NumPy casts it 'safe') and broadcast to `shape`."""
    if where is None or where is True: return None
    if isinstance(where, (bool, int, float)) and not isinstance(where, np.generic):   # Python scalars: truthiness
        return UOp.const_like(dtypes.bool, bool(where), shape)
    m = Tensor.lift(where)
    if not m.uop.dtype.is_bool:
        raise TypeError(f"Cannot cast array data from dtype('{m.uop.dtype.name}') to dtype('bool') according to the "
                        "rule 'safe' (the where= mask)")
    if broadcast_shapes(m.shape, shape) != shape:
        raise ValueError(f"could not broadcast where mask from shape {m.shape} into shape {shape}")
    return m._broadcast(shape)


def _weak_resolve(ufunc: str, ts, dtype: DType | None = None):
    # both operands are Python scalars: NumPy would compute with the default int64/float64
    dts = tuple(t.uop.dtype for t in ts)
    return resolve_ufunc(ufunc, dts, dtype)


def _operator(ufunc: str, op: Ops, a: object, b: object, swap: bool = False) -> Tensor:
    """A Python operator: NumPy's ufunc, or Python's own arithmetic between two Python scalars."""
    return Tensor._elementwise(ufunc, op, a, b, swap=swap, python=True)


# the Python operator of each ufunc an operator calls
_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "floor_divide": "//", "remainder": "%",
            "power": "**", "left_shift": "<<", "right_shift": ">>", "bitwise_and": "&", "bitwise_or": "|",
            "bitwise_xor": "^", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
            "equal": "==", "not_equal": "!="}


def _python_binary(sym: str, a: Tensor, b: Tensor) -> Tensor:
    """`a sym b` between two Python scalars, as Python computes it: by Python itself for two constants, else by
    numfn.trace.pyscalar (its checks added to the trace)."""
    if a.uop.op is Ops.CONST and b.uop.op is Ops.CONST:
        return Tensor.lift(pyscalar.OPERATORS[sym](a.pyvalue, b.pyvalue))
    for t, other in ((a, b), (b, a)):   # an int beyond int64 with a traced Python scalar
        if t.uop.op is Ops.CONST and isinstance(t.pyvalue, int) and not -2**63 <= t.pyvalue < 2**63:
            if sym in ("==", "!=", "<", "<=", ">", ">=") and other.uop.dtype.kind in "bi":
                # every int64 is below an int from 2**63 up, and above one below -2**63
                x, y = (0, t.pyvalue) if t is b else (t.pyvalue, 0)
                return Tensor(UOp.const_like(dtypes.bool, pyscalar.OPERATORS[sym](x, y), other.shape), weak=True)
            raise unsupported(f"Python int arithmetic with {t.pyvalue} (beyond 64 bits) and a traced Python scalar",
                              "numfn computes a compiled function's Python ints as 64-bit integers")
    shape = broadcast_shapes(a.shape, b.shape)
    out, checks = pyscalar.binary(sym, a._broadcast(shape), b._broadcast(shape), user_location())
    return _guarded(out, checks)


def _python_unary(sym: str, a: Tensor) -> Tensor:
    if a.uop.op is Ops.CONST: return Tensor.lift(pyscalar.UNARY[sym](a.pyvalue))
    return _guarded(*pyscalar.unary(sym, a.uop, user_location()))


def _guarded(out: UOp, checks: list) -> Tensor:
    for failed, payload, error in checks:
        if tracing(): add_check(Tensor(failed), Tensor(payload), error)
    return Tensor(out, weak=True)


def _power(base, exponent, python: bool = False) -> Tensor:
    """`base ** exponent` (`python`: the operator, Python's own power between Python scalars), NumPy's otherwise,
    with ndarray.__pow__'s fast paths."""
    b, e = Tensor.lift(base), Tensor.lift(exponent)
    if python and b.weak and e.weak: return _python_binary("**", b, e)
    if b.uop.dtype.is_bool and not b.weak and type(exponent) is int and exponent == 2:
        return NUMPY_IMPLEMENTATIONS[np.square](b)   # ndarray ** 2 takes NumPy's square fast path: int8 for bools
    if b.uop.dtype.is_complex and not b.weak and type(exponent) in (int, float):
        # NumPy's fast paths for complex arrays and Python int/float exponents (they round differently)
        fast = {(int, 2): np.square, (int, -1): np.reciprocal, (float, 0.5): np.sqrt}.get((type(exponent), exponent))
        if fast is not None: return NUMPY_IMPLEMENTATIONS[fast](b)
    t = Tensor._elementwise("power", Ops.POW, b, e)
    ev = e.uop.arg if e.uop.op is Ops.CONST else None
    if t.uop.dtype.is_int and isinstance(ev, int) and not isinstance(ev, bool) and ev < 0:
        raise ValueError(f"Integers to negative integer powers are not allowed (at {user_location()})")
    return t


def matmul(a: TensorLike, b: TensorLike) -> Tensor:
    """NumPy's matmul: 1-D operands are promoted to matrices and the added axis removed again; leading axes
    broadcast. The product is a multiply and a sum over the shared axis, which the scheduler fuses; a large float
    product is a BLAS GEMM call instead (numfn.extern.blas_product)."""
    dyn = a if isinstance(a, Tensor) and a.runtime_length else b if isinstance(b, Tensor) and b.runtime_length else None
    if dyn is not None: return dyn.runtime_length_matmul(a, b)
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
    from numfn.extern import blas_product
    res_uop = blas_product(a2.uop.cast(out), b2.uop.cast(out), batch)
    if res_uop is not None:   # a large float product: a BLAS GEMM call
        res = Tensor(res_uop)
        if a.ndim == 1: res = res.reshape(res.shape[:-2] + res.shape[-1:])
        if b.ndim == 1: res = res.reshape(res.shape[:-1])
        return res
    au = Tensor(a2.uop.cast(out)).broadcast_to(batch + (n, k)).reshape(batch + (n, 1, k))
    bu = Tensor(b2.uop.cast(out)).broadcast_to(batch + (k, m)).swapaxes(-1, -2).reshape(batch + (1, m, k))
    prod = Tensor(_product(au.uop.expand(batch + (n, m, k)), bu.uop.expand(batch + (n, m, k))))
    res = Tensor(prod.uop.reduce(Ops.ADD, (len(batch) + 2,)).reshape(batch + (n, m)))
    if a.ndim == 1: res = res.reshape(res.shape[:-2] + res.shape[-1:])
    if b.ndim == 1: res = res.reshape(res.shape[:-1])
    return res


def _product(a: UOp, b: UOp) -> UOp:
    """The elementwise products a matrix product sums. Complex ones are the textbook formula, each product rounded
    on its own (NumPy's dot and einsum loops; so z @ conj(z) has exactly real diagonal terms), not multiply's."""
    if not a.dtype.is_complex: return a.alu(Ops.MUL, b)
    from numfn.codegen.complex import exact_mul
    comp = a.dtype.component
    ar, ai, br, bi = a.cast(comp), a.alu(Ops.IMAG), b.cast(comp), b.alu(Ops.IMAG)
    return (exact_mul(ar, br) - exact_mul(ai, bi)).alu(Ops.COMPLEX, exact_mul(ar, bi) + exact_mul(ai, br))


def gather(x: Tensor, indices: Sequence, window: bool | tuple = False) -> Tensor:
    """x[i_0, ..., i_{n-1}] at every position of the indices' broadcast shape (the GATHER primitive): one integer
    index (array or int) per axis of x. Indices outside [0, n) are clamped into it, so native code never reads
    outside x: callers wrap negative indices and check bounds first where NumPy raises. Clamping costs nothing
    where the indices' bounds prove them in range (ranges, and index arithmetic on them). `window`: the gather
    reads a slice of run-time bounds (a writable view, numfn.trace.dynamic), not a diagonal (a read-only one); a
    tuple ("window", chains) marks the view a branch chose (numfn.trace.branch_views), with each branch's chain of
    movement ops from the base, so layout questions (ravel, reshape, flags) get the taken branch's answer."""
    x = Tensor.lift(x)
    if len(indices) != x.ndim: raise ValueError(f"gather needs {x.ndim} indices for a {x.ndim}-d array")
    if not indices: return x   # a 0-d array at no index: itself (a 0-d view's element mapped through a gather)
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
    return Tensor(UOp(Ops.GATHER, x.uop.dtype, (x.uop, *srcs), window if isinstance(window, tuple) else "window" if window else None))


def _same_shape(a: Tensor, b: Tensor) -> bool:
    """Whether two arrays have one shape (run-time lengths: the same length values)."""
    la, lb = getattr(a, "lengths", None), getattr(b, "lengths", None)
    if la is None and lb is None: return a.shape == b.shape
    return a.uop.shape == b.uop.shape and la is not None and lb is not None and \
        all(x is y for x, y in zip(la, lb))


def replay(u: UOp, chain: tuple) -> UOp:
    """A view's value from its base's: the chain's ops applied in turn (a GATHER's holds its arg and indices; CAST and
    IMAG are the parts of a complex array)."""
    for op, arg in chain:
        if op is Ops.GATHER: u = UOp(op, u.dtype, (u, *arg[1]), arg[0])
        elif op in (Ops.CAST, Ops.IMAG): u = UOp(op, u.dtype.component, (u,))
        else: u = UOp(op, u.dtype, (u,), arg)
    return u


def warn_complex_discarded() -> None:
    """NumPy's warning when a complex value is converted to a real type (the imaginary part is dropped)."""
    import warnings
    warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                  stacklevel=3)


def _check_complex(ufunc: str, op: Ops) -> None:
    from numfn.codegen.complex import COMPLEX_ALU
    if op not in COMPLEX_ALU: raise unsupported(f"numpy.{ufunc} of complex values")


def _holds_tensors(x) -> bool:
    return any(isinstance(e, Tensor) or (isinstance(e, (list, tuple)) and _holds_tensors(e)) for e in x)


def _strided(view: Tensor) -> bool:
    """Whether NumPy's strides can describe a view of a base: each of its axes advances the base's row-major offset
    by a constant step (else NumPy's reshape copies). A layout a branch chose answers as the branch taken."""
    from numfn.codegen.lower import view_offset
    assert view.base is not None

    def strided(base_shape, chain) -> bool:   # (a chain with a gather: a window of run-time position, strided too)
        return any(op is Ops.GATHER for op, _ in chain) or view_offset(base_shape, chain) is not None
    per_branch = branch_layouts(view)
    if per_branch is not None:
        return same_in_every_branch([strided(*b) for b in per_branch], "whether the reshape is a view or a copy")
    return strided(view.base.shape, view.chain)


__all__ = ["Tensor", "matmul", "gather", "broadcast_shapes", "constant_buffer", "NumfnError"]
