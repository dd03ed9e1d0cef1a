"""What numfn.numpy.linalg and numfn.numpy.linalg_eig share: operands in the type LAPACK computes in, LAPACK calls
and their error checks, and small tensor helpers (column-major views, triangles, identities, zeros).

LAPACK computes in float64, or complex128 where an operand is complex: NumPy computes float32 and complex64 inputs
in double precision and casts the results back, and so does numfn (`lapack_operands` gives both types). A complex
operand reaches LAPACK's z routines as its memory, interleaved parts as NumPy stores them (numfn/codegen/complex.py:
extern calls take and give the pair form), so calling a z routine is calling a d routine with a complex dtype.
LAPACK works on column-major matrices: a matrix handed to it is the row-major buffer of its transpose (`cm`).
"""
from __future__ import annotations

from numpy.linalg import LinAlgError

from numfn.dtype import DType, dtypes
from numfn.errors import unsupported
from numfn.extern import extern
from numfn.numpy import ufuncs as U
from numfn.numpy.creation import eye
from numfn.trace.tensor import Tensor, add_check
from numfn.ir.uop import UOp

__all__ = ["F64", "C128", "lapack_operands", "lapack_int", "stacked_2d", "stacked_square", "cm", "zeros", "full",
           "identity", "lapack", "check_info", "diagonals", "tril", "triu", "is_empty", "real_type"]

F64 = dtypes.float64
C128 = dtypes.complex128


def lapack_operands(*arrays) -> tuple[list[Tensor], DType]:
    """The operands as Tensors of the type LAPACK computes in (complex128 when any is complex, else float64) and the
    result dtype NumPy gives: single precision (float32, complex64) when every operand is, complex when any is
    (integers and bools count as float64). float16 is refused, as NumPy refuses it."""
    ts = [Tensor(Tensor.lift(a).uop) for a in arrays]   # Python scalars are arrays here: strong
    for t in ts:
        if t.uop.dtype.kind not in "biufc" or t.uop.dtype is dtypes.float16:
            raise TypeError(f"array type {t.uop.dtype.name} is unsupported in linalg")
    single = all(t.uop.dtype in (dtypes.float32, dtypes.complex64) for t in ts)
    complex_ = any(t.uop.dtype.is_complex for t in ts)
    computing = C128 if complex_ else F64
    result = (dtypes.complex64 if single else C128) if complex_ else (dtypes.float32 if single else F64)
    return [t.astype(computing, copy=False) for t in ts], result


def real_type(dt: DType) -> DType:
    """The real type of a result dtype: NumPy's singular values, eigenvalues of Hermitian matrices, norms."""
    return dt.component


def lapack_int() -> DType:
    """The dtype of LAPACK's integers (pivots, info); NumfnError when there is no LAPACK."""
    from numfn.runtime import blas
    iface = blas.interface()
    if iface is None:
        raise unsupported("numpy.linalg's decompositions without a BLAS/LAPACK library",
                          "install scipy-openblas64 (pip install scipy-openblas64), and unset NUMFN_BLAS")
    return dtypes.int64 if iface.int_bits == 64 else dtypes.int32


def stacked_2d(a: Tensor) -> None:
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")


def stacked_square(a: Tensor) -> None:
    stacked_2d(a)
    if a.shape[-1] != a.shape[-2]: raise LinAlgError("Last 2 dimensions of the array must be square")


def cm(x: Tensor) -> Tensor:
    """The transpose of the last two axes: a column-major matrix's row-major buffer, and back."""
    return x.swapaxes(-1, -2)


def zeros(shape: tuple[int, ...], dt: DType = F64) -> Tensor:
    return Tensor(UOp.const_like(dt, 0, tuple(shape)))


def full(shape: tuple[int, ...], value, dt: DType = F64) -> Tensor:
    return Tensor(UOp.const_like(dt, value, tuple(shape)))


def identity(n: int, batch: tuple[int, ...] = (), dt: DType = F64) -> Tensor:
    """A stack (of shape batch) of n x n identity matrices."""
    return eye(n, dtype=dt.np).broadcast_to(batch + (n, n))


def lapack(routine: str, batch: tuple[int, ...], params: tuple, inputs: list[Tensor], results: list,
           dtype: DType = F64) -> list[Tensor]:
    """The results of a LAPACK call in `dtype` (float64, or complex128: the z routine) as Tensors (see
    numfn.extern.extern)."""
    lapack_int()
    return [Tensor(u) for u in extern(routine, dtype, batch, params, [t.uop for t in inputs], results)]


def check_info(info: Tensor, message: str) -> None:
    """LAPACK's info > 0 becomes NumPy's LinAlgError(message) after the call."""
    add_check(info > 0, info, lambda _: LinAlgError(message))


def diagonals(x: Tensor) -> Tensor:
    """The main diagonals of a stack of square matrices (..., n, n) -> (..., n)."""
    n = x.shape[-1]
    return x.reshape(x.shape[:-2] + (n * n,))[..., ::n + 1]


def _tri_mask(n: int, m: int, k: int, lower: bool) -> Tensor:
    rows = Tensor(UOp.iota(n).reshape((n, 1)).expand((n, m)))
    cols = Tensor(UOp.iota(m).reshape((1, m)).expand((n, m)))
    return cols <= rows + k if lower else cols >= rows + k


def tril(x: Tensor) -> Tensor:
    return U.where(_tri_mask(x.shape[-2], x.shape[-1], 0, True), x, zeros((), x.uop.dtype))


def triu(x: Tensor) -> Tensor:
    return U.where(_tri_mask(x.shape[-2], x.shape[-1], 0, False), x, zeros((), x.uop.dtype))


def is_empty(batch: tuple[int, ...], *dims: int) -> bool:
    return 0 in batch or 0 in dims
