"""numpy.linalg.eig and eigvals: the general (non-symmetric) eigensolver, LAPACK geev as NumPy calls it (right
eigenvectors only), on stacked inputs as NumPy's gufuncs take them.

Real input is solved by dgeev in float64, complex input by zgeev in complex128; single precision is computed in
double and cast back, as NumPy does. dgeev gives each eigenvalue's real and imaginary parts, and a complex conjugate
pair of eigenvectors (the eigenvalue with the positive imaginary part first) as two real columns, its real and its
imaginary part; they become the two complex columns v and conj(v) as NumPy's umath_linalg builds them. Eigenvectors
are LAPACK's (unit 2-norm, the largest component real), so they are NumPy's.

The one difference from NumPy, by necessity: for real input NumPy returns real arrays when every eigenvalue is real
and complex ones otherwise, a dtype that depends on the values, which a compiled function cannot have. numfn always
returns complex arrays for real input (complex64 for float32, complex128 otherwise), with NumPy's values: where
NumPy's result is real, numfn's imaginary parts are exactly zero, and `.real` of numfn's result is NumPy's.

Errors are NumPy's: LinAlgError("Array must not contain infs or NaNs") for non-finite input (LAPACK is then given a
zero matrix instead, never NaNs), LinAlgError("Eigenvalues did not converge") when geev does not converge.
"""
from __future__ import annotations

from numpy.linalg import LinAlgError
from numpy.linalg._linalg import EigResult

from numfn.dtype import DType, dtypes
from numfn.extern import workspace
from numfn.numpy import ufuncs as U
from numfn.numpy.linalg_lapack import F64, check_info, cm, is_empty, lapack, lapack_int, lapack_operands, \
    stacked_square, zeros
from numfn.trace.tensor import Tensor, add_check
from numfn.ir.uop import Ops

__all__ = ["eig", "eigvals"]


def _complex_result(rt: DType) -> DType:
    """NumPy's dtype of eig's results for input of result type rt (see the module docstring)."""
    return dtypes.complex64 if rt in (dtypes.float32, dtypes.complex64) else dtypes.complex128


def _finite_or_zero(a: Tensor) -> Tensor:
    """a, checked finite (NumPy's _assert_finite, raised after the call); a matrix with a NaN or an infinity is
    replaced by zeros, so LAPACK never iterates on one."""
    finite = U.isfinite(a).all(axis=(-2, -1))
    add_check(~finite, 0, lambda _: LinAlgError("Array must not contain infs or NaNs"))
    return U.where(finite[..., None, None], a, zeros((), a.uop.dtype))


def _pairs_to_complex(vr: Tensor, wi: Tensor) -> Tensor:
    """dgeev's real eigenvector columns (..., n, n) as complex ones: a column whose eigenvalue is real is itself; a
    pair (wi > 0, then wi < 0) stored as (re, im) becomes re + i im and re - i im."""
    pad = ((0, 0),) * (vr.ndim - 1)
    following = Tensor(vr[..., 1:].uop.pad(pad + ((0, 1),)))    # column j + 1 at j
    preceding = Tensor(vr[..., :-1].uop.pad(pad + ((1, 0),)))   # column j - 1 at j
    first, second = (wi > 0)[..., None, :], (wi < 0)[..., None, :]
    re = U.where(second, preceding, vr)
    im = U.where(first, following, U.where(second, -vr, 0.0))
    return Tensor(re.uop.alu(Ops.COMPLEX, im.uop))


def _geev(a: Tensor, vectors: bool) -> tuple[Tensor, Tensor | None]:
    """Eigenvalues (complex128) and, with `vectors`, right eigenvectors (columns, complex128) of a (..., n, n),
    float64 or complex128."""
    n, batch, dt = a.shape[-1], a.shape[:-2], a.uop.dtype
    c128 = dtypes.complex128
    if is_empty(batch, n): return zeros(batch + (n,), c128), (zeros(batch + (n, n), c128) if vectors else None)
    a = _finite_or_zero(a)
    jobvr, ldvr = ("V", n) if vectors else ("N", 1)
    i = lapack_int()
    vr_result = ((n, n), dt, -1, False) if vectors else ((1,), dt, -1, True)
    if dt.is_complex:
        lwork, _ = workspace("geev", dt, ["N", jobvr, n, None, max(1, n), None, None, 1, None, ldvr, "work", -1,
                                          "rwork", "int"])
        _, w, vr, _, _, info = lapack("geev_complex", batch, (n, jobvr, ldvr, lwork), [cm(a)],
                                      [((n, n), dt, 0, False), ((n,), dt, -1, False), vr_result,
                                       ((lwork,), dt, -1, True), ((2 * n,), F64, -1, True), ((), i, -1, False)], dt)
        check_info(info, "Eigenvalues did not converge")
        return w, (cm(vr) if vectors else None)
    lwork, _ = workspace("geev", F64, ["N", jobvr, n, None, max(1, n), None, None, None, 1, None, ldvr, "work", -1,
                                       "int"])
    _, wr, wi, vr, _, info = lapack("geev", batch, (n, jobvr, ldvr, lwork), [cm(a)],
                                    [((n, n), F64, 0, False), ((n,), F64, -1, False), ((n,), F64, -1, False),
                                     vr_result, ((lwork,), F64, -1, True), ((), i, -1, False)])
    check_info(info, "Eigenvalues did not converge")
    w = Tensor(wr.uop.alu(Ops.COMPLEX, wi.uop))
    return w, (_pairs_to_complex(cm(vr), wi) if vectors else None)


def eig(a) -> EigResult:
    """The eigenvalues and right eigenvectors (columns, unit norm) of a general square matrix (LAPACK geev), always
    complex (see the module docstring: NumPy's results for real input are real where every eigenvalue is)."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    w, v = _geev(a, True)
    assert v is not None
    ct = _complex_result(rt)
    return EigResult._make((w.astype(ct), v.astype(ct)))


def eigvals(a) -> Tensor:
    """The eigenvalues of a general square matrix (LAPACK geev), always complex (see eig)."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    return _geev(a, False)[0].astype(_complex_result(rt))
