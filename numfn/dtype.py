"""Data types: the scalar types numfn computes with, their NumPy mapping and NumPy 2 promotion rules."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    """A scalar type. `kind` is 'b' (bool), 'i' (signed), 'u' (unsigned), 'f' (float) or 'c' (complex).

    DTypes are singletons (one object per type), so identity comparison is equality. float16 is a storage type:
    its values live in memory and registers as their 16 bits (cname/lname are uint16_t/i16), and every operation
    on them computes in float32 and rounds back (codegen/decompose.py), as NumPy's float16 loops do. complex64 and
    complex128 exist at the tensor level only: codegen/complex.py rewrites every complex value into its real and
    imaginary parts (a complex buffer is its memory: pairs of float32/float64), so kernels and renderers never see
    them (their cname/lname would not compile).

    Example:
        assert numfn.dtypes.from_numpy(np.dtype(np.float32)) is numfn.dtypes.float32
        assert numfn.dtypes.float32.itemsize == 4 and numfn.dtypes.float32.kind == "f"
    """
    name: str
    itemsize: int
    kind: str
    cname: str   # C99 spelling
    lname: str   # LLVM IR spelling

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.name)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_inexact(self) -> bool:
        """Float or complex: the types NumPy's math functions compute in."""
        return self.kind in "fc"

    @property
    def component(self) -> DType:
        """The real type of a complex type's parts (float32 for complex64); a real type itself."""
        return _COMPONENT.get(self.name, self)

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def bits(self) -> int:
        return 1 if self.kind == "b" else self.itemsize * 8

    @property
    def min(self):
        if self.kind == "b": return False
        if self.kind in "fc": return -float("inf")
        return 0 if self.kind == "u" else -(1 << (self.bits - 1))   # np.iinfo's, without its 30 us a call

    @property
    def max(self):
        if self.kind == "b": return True
        if self.kind in "fc": return float("inf")
        return (1 << (self.bits - (self.kind == "i"))) - 1

    def __repr__(self) -> str:
        return f"dtypes.{self.name}"

    def __reduce__(self):  # pickle as the singleton
        return (dtypes.from_name, (self.name,))


class dtypes:
    """The supported dtypes, as class attributes (`dtypes.float32`); `dtypes.from_numpy(np.dtype)` maps NumPy's
    types onto them (TypeError for a type numfn does not support).

    Example:
        assert numfn.dtypes.from_numpy(np.dtype("complex128")) is numfn.dtypes.complex128
    """
    bool = DType("bool", 1, "b", "_Bool", "i1")
    int8 = DType("int8", 1, "i", "int8_t", "i8")
    int16 = DType("int16", 2, "i", "int16_t", "i16")
    int32 = DType("int32", 4, "i", "int32_t", "i32")
    int64 = DType("int64", 8, "i", "int64_t", "i64")
    uint8 = DType("uint8", 1, "u", "uint8_t", "i8")
    uint16 = DType("uint16", 2, "u", "uint16_t", "i16")
    uint32 = DType("uint32", 4, "u", "uint32_t", "i32")
    uint64 = DType("uint64", 8, "u", "uint64_t", "i64")
    float16 = DType("float16", 2, "f", "uint16_t", "i16")
    float32 = DType("float32", 4, "f", "float", "float")
    float64 = DType("float64", 8, "f", "double", "double")
    complex64 = DType("complex64", 8, "c", "complex64_is_lowered_to_floats", "complex64_is_lowered_to_floats")
    complex128 = DType("complex128", 16, "c", "complex128_is_lowered_to_floats", "complex128_is_lowered_to_floats")
    void = DType("void", 0, "v", "void", "void")
    # index arithmetic is 64-bit everywhere: a 64-bit CPU pays nothing for it and no array can overflow it
    index = int64

    all: tuple[DType, ...] = ()

    @staticmethod
    def from_name(name: str) -> DType:
        return _BY_NAME[name]

    @staticmethod
    def from_numpy(dt: Any) -> DType:
        """The numfn dtype of a NumPy dtype (or anything np.dtype accepts); TypeError if unsupported."""
        found = _BY_NUMPY.get(dt) if isinstance(dt, np.dtype) else None   # (dtype.name costs 10 us)
        if found is not None: return found
        dt = np.dtype(dt)
        found = _BY_NAME.get(dt.name)
        if found is None or dt.byteorder not in "=|":
            raise TypeError(f"numfn does not support dtype {dt} (supported: {', '.join(d.name for d in dtypes.all)})")
        return found


dtypes.all = (dtypes.bool, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
              dtypes.uint32, dtypes.uint64, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64,
              dtypes.complex128)
_BY_NAME = {d.name: d for d in dtypes.all}
_BY_NUMPY = {np.dtype(d.name): d for d in dtypes.all}   # native byte order only: '>i4' is not np.dtype('int32')
_COMPONENT = {"complex64": dtypes.float32, "complex128": dtypes.float64}

# A Python scalar's "weak" type (NEP 50): it adopts the dtype of the array it meets where the kind allows.
PyScalar = (bool, int, float, complex)


def scalar_dtype(value) -> DType:
    """The dtype NumPy gives a Python scalar on its own (np.asarray(value).dtype)."""
    if isinstance(value, (bool, np.bool_)): return dtypes.bool
    if isinstance(value, (int, np.integer)): return dtypes.from_numpy(np.asarray(value).dtype)
    if isinstance(value, np.floating): return dtypes.from_numpy(value.dtype)
    if isinstance(value, float): return dtypes.float64
    if isinstance(value, np.complexfloating): return dtypes.from_numpy(value.dtype)
    if isinstance(value, complex): return dtypes.complex128
    raise TypeError(f"not a scalar: {value!r}")


def resolve_ufunc(ufunc_name: str, operands: tuple, dtype: DType | None = None) -> tuple[tuple[DType, ...], DType]:
    """Ask NumPy how `ufunc` types its operands: returns (operand dtypes to compute in, result dtype).

    `operands` holds DTypes, or the Python types bool/int/float for weak scalars (NEP 50); `dtype` is the ufunc's
    dtype= argument (the loop's output type). Raises TypeError worded by NumPy when the ufunc has no loop for
    these types (for example `bool - bool` or `float & float`), or when dtype= would need an unsafe cast.
    """
    cast, outs = resolve_loop(ufunc_name, operands, dtype)
    return cast, outs[0]


@functools.cache
def resolve_loop(ufunc_name: str, operands: tuple, dtype: DType | None = None) -> tuple[tuple[DType, ...],
                                                                                        tuple[DType, ...]]:
    """resolve_ufunc for ufuncs with several outputs (frexp, modf, divmod): (operand dtypes, result dtypes)."""
    ufunc = getattr(np, ufunc_name)
    npin = tuple(o if isinstance(o, type) else o.np for o in operands)
    kwargs = {} if dtype is None else {"signature": (None,) * ufunc.nin + (dtype.np,) * ufunc.nout}
    resolved = ufunc.resolve_dtypes(npin + (None,) * ufunc.nout, **kwargs)
    cast = tuple(_from_np_result(d, ufunc_name) for d in resolved[:ufunc.nin])
    return cast, tuple(_from_np_result(d, ufunc_name) for d in resolved[ufunc.nin:])


def _from_np_result(dt: np.dtype, what: str) -> DType:
    return dtypes.from_numpy(dt)


@functools.cache
def result_type(*dts: DType) -> DType:
    """np.result_type over array dtypes (no weak scalars): the dtype several arrays promote to."""
    return dtypes.from_numpy(np.result_type(*(d.np for d in dts)))


@functools.cache
def reduce_dtype(op: str, dt: DType) -> DType:
    """The dtype NumPy gives sum/prod/cumsum of `dt`: small ints widen to the platform integer."""
    if op in ("max", "min"): return dt
    return dtypes.from_numpy(getattr(np, op)(np.zeros(1, dt.np)).dtype)


def float_assignment_error(value: float | int, dt: DType) -> BaseException | None:
    """NumPy writes a float scalar into an integer array through Python's int(): NaN (ValueError), infinity and a
    value out of the dtype's range (OverflowError) raise (so does an integer scalar into a signed array). The error
    NumPy raises for `value` written into `dt`, in NumPy's words (asked of NumPy itself), or None where the write
    is fine."""
    if not dt.is_int: return None
    try:
        np.zeros(1, dt.np)[0] = value
    except (OverflowError, ValueError) as e:
        return type(e)(str(e))
    return None


def check_scalar_fits(value, dt: DType, what: str = "") -> None:
    """NEP 50: a Python int must fit the integer dtype it is combined with, or NumPy raises OverflowError: its own
    error, worded as NumPy words it ("Python integer 300 out of bounds for int8", or "Python int too large to
    convert to C long" for an int beyond 64 bits). `what` is unused (NumPy's message names no operand)."""
    if isinstance(value, bool) or not isinstance(value, int) or not dt.is_int: return
    if dt.min <= value <= dt.max: return
    try:
        np.array(value, dt.np)   # NumPy's conversion raises its own error for this value and dtype
    except OverflowError as e:
        raise OverflowError(str(e)) from None
    raise OverflowError(f"Python integer {value} out of bounds for {dt.name}")
