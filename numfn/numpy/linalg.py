"""numfn.numpy.linalg: NumPy's linear algebra over traced arrays (np.linalg.* on traced arrays dispatches here).

Decompositions and solvers call LAPACK from the compiled program (numfn/extern.py), as NumPy does: in float64, or
complex128 for complex input (LAPACK's z routines), whatever the precision (NumPy computes float32 and complex64
inputs in double and casts the results back, and so does numfn), on stacked inputs broadcast the way NumPy's gufuncs
broadcast them, under vmap and svmap too. numfn/numpy/linalg_lapack.py has what the calls share: the operands'
types, the call, its error check, column-major views (LAPACK works on column-major matrices: a matrix handed to it is
the row-major buffer of its transpose, `cm`, which the kernel filling the routine's in-out buffer writes for free).
Errors NumPy raises for values (a singular matrix, a matrix that is not positive definite, no convergence) are
raised after the call with NumPy's LinAlgError and message, through numfn.trace.tensor.add_check. Stacks of small
real systems (solve, inv, det, slogdet up to 8x8) are the exception: generated code, LAPACK's elimination written
out (numfn/numpy/linalg_small.py). The general eigensolver (eig, eigvals) is numfn/numpy/linalg_eig.py. Everything
else (norms, products, cross, outer, trace) is composed from the tracer's primitives and fuses with its
surroundings; complex norms use NumPy's |x|^2 = (x.conj() * x).real.
"""
from __future__ import annotations

import math
import operator

import numpy as np
from numpy.linalg import LinAlgError
from numpy.linalg._linalg import EighResult, QRResult, SlogdetResult, SVDResult

from numfn.dtype import dtypes
from numfn.errors import RunTimeLengthError, unsupported
from numfn.extern import workspace, workspace_sizes
from numfn.numpy import ufuncs as U
from numfn.numpy.creation import arange
from numfn.numpy.indexing import take_along_axis
from numfn.numpy.linalg_eig import eig, eigvals
from numfn.numpy.linalg_lapack import (F64, check_info, cm, diagonals, full, identity, is_empty, lapack, lapack_int,
                                       lapack_operands, real_type, stacked_2d, stacked_square, tril, triu, zeros)
from numfn.numpy.linalg_small import small, small_lu, small_solve, stack_values
# the generated path's limits, where they always were (tests read them here)
from numfn.numpy.linalg_small import SMALL_ALWAYS_N as SMALL_ALWAYS_N, SMALL_BATCH as SMALL_BATCH, SMALL_N as SMALL_N
from numfn.numpy.manipulation import stack
from numfn.numpy.sorting import argsort, sort
from numfn.args import normalize_axis, refuse
from numfn.numpy._typing import ArrayLike
from numfn.numpy.extras import vander
from numfn.trace import dynamic
from numfn.trace.dynamic import HINT as RUN_TIME_LENGTH_HINT
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes, matmul as _matmul
from numfn.ir.uop import Ops, UOp

__all__ = ["LinAlgError", "solve", "inv", "det", "slogdet", "cholesky", "qr", "eig", "eigvals", "eigh", "eigvalsh",
           "svd", "svdvals", "lstsq", "pinv", "matrix_rank", "norm", "matrix_norm", "vector_norm", "cond",
           "matrix_power", "multi_dot", "cross", "outer", "trace", "diagonal", "matrix_transpose", "matmul",
           "tensorsolve", "tensorinv"]


# ---------------------------------------------------------------------------------------------------------------
# solving and inverting

def _gesv(a: Tensor, b_cm: Tensor, batch: tuple[int, ...], n: int, k: int) -> Tensor:
    """X (column-major: its buffer (..., k, n)) with a X = B, a (..., n, n) float64 or complex128, B given
    column-major."""
    dt = a.uop.dtype
    if is_empty(batch, n, k): return zeros(batch + (k, n), dt)
    a_cm = cm(a.broadcast_to(batch + (n, n)))
    i = lapack_int()
    _, x, _, info = lapack("gesv", batch, (n, k), [a_cm, b_cm], [((n, n), dt, 0, False), ((k, n), dt, 1, False),
                                                                  ((n,), i, -1, False), ((), i, -1, False)], dt)
    check_info(info, "Singular matrix")
    return x


def _solve(a: Tensor, b: Tensor, batch: tuple[int, ...], n: int, k: int) -> Tensor:
    """X (..., n, k) with a X = b, a (..., n, n) and b (..., n, k) of LAPACK's type (lapack_operands) broadcasting
    to `batch`; LinAlgError after the call where a matrix is singular. Small real matrices are solved by generated
    code, others by LAPACK."""
    if small(n, k, batch) and not is_empty(batch, n, k) and a.uop.dtype is F64:
        x, singular = small_solve(a.broadcast_to(batch + (n, n)).uop, b.broadcast_to(batch + (n, k)).uop)
        add_check(Tensor(singular), 0, lambda _: LinAlgError("Singular matrix"))
        return Tensor(x)
    return cm(_gesv(a, cm(b.broadcast_to(batch + (n, k))), batch, n, k))


def solve(a, b) -> Tensor:
    """x with a @ x = b. b is a stack of vectors only when it is 1-D (NumPy 2), else a stack of matrices."""
    (a, b), rt = lapack_operands(a, b)
    stacked_square(a)
    n = a.shape[-1]
    if b.ndim == 1:
        if b.shape[0] != n:
            raise ValueError("solve1: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                             f"(m,m),(m)->(m) (size {b.shape[0]} is different from {n})")
        batch = a.shape[:-2]
        return _solve(a, b.reshape((n, 1)), batch, n, 1)[..., 0].astype(rt)
    if b.shape[-2] != n:
        raise ValueError("solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(m,m),(m,n)->(m,n) (size {b.shape[-2]} is different from {n})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return _solve(a, b, batch, n, b.shape[-1]).astype(rt)


def inv(a) -> Tensor:
    """The inverse of a (stack of) square matrices: a solve against the identity, as NumPy does."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    n, batch = a.shape[-1], a.shape[:-2]
    return _solve(a, identity(n, batch, a.uop.dtype), batch, n, n).astype(rt)


def _inv_or_nan(a: Tensor) -> Tensor:
    """inv(a) with NaN matrices where a is singular (NumPy's inv under errstate(all='ignore'), which cond uses)."""
    n, batch, dt = a.shape[-1], a.shape[:-2], a.uop.dtype
    if is_empty(batch, n): return zeros(a.shape, dt)
    if small(n, n, batch) and dt is F64:
        inverse, singular = small_solve(a.uop, identity(n, batch).uop)
        return U.where(Tensor(singular).reshape(batch + (1, 1)), np.nan, Tensor(inverse))
    i = lapack_int()
    _, x, _, info = lapack("gesv", batch, (n, n), [cm(a), identity(n, batch, dt)],
                           [((n, n), dt, 0, False), ((n, n), dt, 1, False), ((n,), i, -1, False),
                            ((), i, -1, False)], dt)
    return U.where((info > 0).reshape(batch + (1, 1)), full((), np.nan, dt), cm(x))


def tensorsolve(a, b, axes=None) -> Tensor:
    """x with tensordot(a, x, b.ndim) = b (NumPy's tensorsolve)."""
    a, b = Tensor.lift(a), Tensor.lift(b)
    if axes is not None:
        order = [i for i in range(a.ndim) if i not in [normalize_axis(k, a.ndim) for k in axes]]
        order += [normalize_axis(k, a.ndim) for k in axes]
        a = a.transpose(order)
    old = a.shape[-(a.ndim - b.ndim):]
    prod = math.prod(old)
    if a.size != prod ** 2:
        raise LinAlgError("Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
                          "prod(a.shape[:b.ndim])")
    return solve(a.reshape((prod, prod)), b.reshape((prod,))).reshape(old)


def tensorinv(a, ind: int = 2) -> Tensor:
    """The inverse of a with respect to tensordot over its first `ind` axes (NumPy's tensorinv)."""
    a = Tensor.lift(a)
    if ind <= 0: raise ValueError("Invalid ind argument.")
    old = a.shape
    inv_shape = old[ind:] + old[:ind]
    prod = math.prod(old[ind:])
    return inv(a.reshape((prod, -1))).reshape(inv_shape)


# ---------------------------------------------------------------------------------------------------------------
# determinants

def _slogdet(a: Tensor) -> tuple[Tensor, Tensor]:
    """(sign, log|det|) of a (..., n, n) of LAPACK's type: the sign of a's type (complex: a point on the unit
    circle), the logarithm float64."""
    n, batch, dt = a.shape[-1], a.shape[:-2], a.uop.dtype
    if is_empty(batch, n): return full(batch, 1.0, dt), zeros(batch)
    if small(n, 0, batch) and dt is F64:   # generated elimination (see small_lu): U's diagonal, the swaps' parity
        _, pivots, odd, _ = small_lu(a.uop, None)
        both = Tensor(UOp(Ops.CONTIGUOUS, F64, (stack_values(pivots + [odd.cast(F64)], len(batch)),)))   # one kernel
        d, swaps = both[..., :n], both[..., n].astype(np.int64)
        singular = (d == 0).any(axis=-1)
    else:
        i = lapack_int()
        lu, ipiv, info = lapack("getrf", batch, (n,), [cm(a)],
                                [((n, n), dt, 0, False), ((n,), i, -1, False), ((), i, -1, False)], dt)
        d = diagonals(lu)
        swaps = (ipiv != arange(1, n + 1)).sum(axis=-1)
        singular = info > 0   # an exactly zero pivot: NumPy's sign 0 and log|det| -inf
    if dt.is_complex:   # NumPy: the product of the pivots' phases d / |d|, negated for an odd permutation
        magnitude = abs(d)
        phase = (d / U.where(singular[..., None], 1.0, magnitude)).prod(axis=-1)
        sign = U.where(swaps % 2 == 1, -phase, phase)
        return U.where(singular, zeros((), dt), sign), U.where(singular, -np.inf, U.log(magnitude).sum(axis=-1))
    negative = (d < 0).sum(axis=-1)
    sign = U.where((swaps + negative) % 2 == 1, -1.0, 1.0)
    return U.where(singular, 0.0, sign), U.where(singular, -np.inf, U.log(abs(d)).sum(axis=-1))


def slogdet(a) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant, from an LU factorization (LAPACK getrf). For
    complex a the sign is complex (of modulus 1, or 0) and the logarithm real."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    sign, logdet = _slogdet(a)
    return SlogdetResult(sign.astype(rt), logdet.astype(real_type(rt)))


def det(a) -> Tensor:
    """The determinant: sign * exp(log|det|) from the LU factorization, as NumPy computes it."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    sign, logdet = _slogdet(a)
    return (sign * U.exp(logdet)).astype(rt)


# ---------------------------------------------------------------------------------------------------------------
# decompositions

def cholesky(a, /, *, upper: bool = False) -> Tensor:
    """The lower (or with upper=True, upper) Cholesky factor, from the lower (upper) triangle of a."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    if upper: return cm(cholesky(cm(a))).astype(rt)
    n, batch = a.shape[-1], a.shape[:-2]
    if is_empty(batch, n): return zeros(a.shape, rt)
    # LAPACK sees a's buffer as a.T: the upper triangle of a.T is a's lower one, and the factor U = L.T it writes
    # there, column-major, is L in the buffer's lower triangle (no transposing copy either way)
    # (complex a: LAPACK's a.T = U^H U makes a = L L^H with L = U.T, the same factor; only the lower triangle is
    # read, where a.T is conj(a) for Hermitian a)
    dt = a.uop.dtype
    c, info = lapack("potrf", batch, (n, "U"), [a], [((n, n), dt, 0, False), ((), lapack_int(), -1, False)], dt)
    check_info(info, "Matrix is not positive definite")
    return tril(c).astype(rt)


def _syevd(a: Tensor, uplo: str, vectors: bool) -> tuple[Tensor, Tensor]:
    """Eigenvalues (float64) and eigenvectors (a's type) of the symmetric (Hermitian) matrices one triangle of a
    (float64 or complex128) gives: LAPACK syevd (heevd)."""
    uplo = uplo.upper() if isinstance(uplo, str) else uplo
    if uplo not in ("L", "U"): raise ValueError("UPLO argument must be 'L' or 'U'")
    n, batch, dt = a.shape[-1], a.shape[:-2], a.uop.dtype
    if is_empty(batch, n): return zeros(batch + (n,)), zeros(batch + (n, n), dt)
    jobz = "V" if vectors else "N"
    i = lapack_int()
    # LAPACK reads the lower triangle of the column-major matrix it is given: a's lower triangle is the lower
    # triangle of a.T's buffer; a's upper triangle, as the lower triangle of the Hermitian matrix it defines, is
    # that of conj(a)'s buffer (a's own for real a)
    given = cm(a) if uplo == "L" else a.conj() if dt.is_complex else a
    if dt.is_complex:
        lwork, liwork, lrwork = workspace_sizes("heevd", dt, [jobz, "L", n, None, max(1, n), None, "work", -1,
                                                              "rwork", -1, "iwork", -1, "int"])
        v, w, _, _, _, info = lapack("heevd", batch, (n, jobz, lwork, lrwork, liwork), [given],
                                     [((n, n), dt, 0, False), ((n,), F64, -1, False), ((lwork,), dt, -1, True),
                                      ((lrwork,), F64, -1, True), ((liwork,), i, -1, True), ((), i, -1, False)], dt)
    else:
        lwork, liwork = workspace("syevd", F64, [jobz, "L", n, None, max(1, n), None, "work", -1, "iwork", -1, "int"])
        v, w, _, _, info = lapack("syevd", batch, (n, jobz, lwork, liwork), [given],
                                  [((n, n), F64, 0, False), ((n,), F64, -1, False), ((lwork,), F64, -1, True),
                                   ((liwork,), i, -1, True), ((), i, -1, False)])
    check_info(info, "Eigenvalues did not converge")
    return w, cm(v)


def eigh(a, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, from its lower (UPLO='L') or upper
    triangle (LAPACK syevd, as NumPy)."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    w, v = _syevd(a, UPLO, True)
    return EighResult._make((w.astype(real_type(rt)), v.astype(rt)))


def eigvalsh(a, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of a symmetric matrix."""
    (a,), rt = lapack_operands(a)
    stacked_square(a)
    return _syevd(a, UPLO, False)[0].astype(real_type(rt))


def _gesdd(a: Tensor, full_matrices: bool, compute_uv: bool):
    """(u, s, vh) of a (float64 or complex128; u and vh None without compute_uv): LAPACK gesdd, s float64."""
    m, n = a.shape[-2:]
    k, batch, dt = min(m, n), a.shape[:-2], a.uop.dtype
    if is_empty(batch, k):
        u = identity(m, batch, dt) if full_matrices else zeros(batch + (m, k), dt)
        vt = identity(n, batch, dt) if full_matrices else zeros(batch + (k, n), dt)
        return u, zeros(batch + (k,)), vt
    jobz = "N" if not compute_uv else "A" if full_matrices else "S"
    ucols, vtrows = (m, n) if jobz == "A" else (k, k)
    ldu, ldvt = (max(1, m), max(1, vtrows)) if compute_uv else (1, 1)
    i = lapack_int()
    query = [jobz, m, n, None, max(1, m), None, None, ldu, None, ldvt, "work", -1] + (["rwork"] if dt.is_complex
                                                                                       else []) + ["iwork", "int"]
    lwork, _ = workspace("gesdd", dt, query)
    u_res = ((ucols, m), dt, -1, False) if compute_uv else ((1,), dt, -1, True)
    vt_res = ((n, vtrows), dt, -1, False) if compute_uv else ((1,), dt, -1, True)
    head = [((n, m), dt, 0, False), ((k,), F64, -1, False), u_res, vt_res, ((lwork,), dt, -1, True)]
    tail = [((8 * k,), i, -1, True), ((), i, -1, False)]
    if dt.is_complex:   # zgesdd's real workspace: LAPACK's bound (and NumPy's, which is larger for jobz "N")
        mx = max(m, n)
        lrwork = 7 * k if jobz == "N" else max(k * max(5 * k + 7, 2 * mx + 2 * k + 1), 5 * k * k + 5 * k)
        _, s, u, vt, _, _, _, info = lapack("gesdd_complex", batch, (m, n, jobz, ldu, ldvt, lwork), [cm(a)],
                                            head + [((lrwork,), F64, -1, True)] + tail, dt)
    else:
        _, s, u, vt, _, _, info = lapack("gesdd", batch, (m, n, jobz, ldu, ldvt, lwork), [cm(a)], head + tail)
    check_info(info, "SVD did not converge")
    return (cm(u) if compute_uv else None), s, (cm(vt) if compute_uv else None)


def _svd_hermitian(a: Tensor, compute_uv: bool):
    """NumPy's svd(hermitian=True) of a (LAPACK's type), from the eigendecomposition of the Hermitian matrix a's
    lower triangle gives: the eigenvalues' magnitudes, descending (a stable sort reversed, as NumPy's argsort of so
    few values), the eigenvectors as u and, with their eigenvalues' signs, as vh."""
    stacked_square(a)
    if not compute_uv: return None, sort(abs(_syevd(a, "L", False)[0]))[..., ::-1], None
    w, u = _syevd(a, "L", True)
    order = argsort(abs(w))[..., ::-1]
    w = take_along_axis(w, order, -1)
    u = take_along_axis(u, order[..., None, :], -1)
    return u, abs(w), cm(u * U.copysign(1.0, w)[..., None, :]).conj()   # (NumPy: no zero sign)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """The singular value decomposition a = u @ diag(s) @ vh (LAPACK gesdd, as NumPy), or the singular values; with
    hermitian=True NumPy's from eigh instead (a square a, only its lower triangle read)."""
    (a,), rt = lapack_operands(a)
    stacked_2d(a)
    u, s, vt = _svd_hermitian(a, compute_uv) if hermitian else _gesdd(a, full_matrices, compute_uv)
    if not compute_uv: return s.astype(real_type(rt))
    return SVDResult(u.astype(rt), s.astype(real_type(rt)), vt.astype(rt))


def svdvals(x, /) -> Tensor:
    """The singular values of x, descending."""
    return svd(x, compute_uv=False)


def qr(a, mode: str = "reduced"):
    """The QR decomposition (LAPACK geqrf, then orgqr for Q), in NumPy's modes: 'reduced', 'complete', 'r', 'raw'."""
    if mode not in ("reduced", "complete", "r", "raw"): raise ValueError(f"Unrecognized mode '{mode}'")
    (a,), rt = lapack_operands(a)
    stacked_2d(a)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    if is_empty(batch, k):
        if mode == "raw": return zeros(batch + (n, m), rt), zeros(batch + (k,), rt)
        r = zeros(batch + ((k if mode in ("reduced", "r") else m), n), rt)
        if mode == "r": return r
        q = zeros(batch + (m, k), rt) if mode == "reduced" else identity(m, batch, rt)
        return QRResult._make((q, r))
    i, dt = lapack_int(), a.uop.dtype
    lwork, _ = workspace("geqrf", dt, [m, n, None, max(1, m), None, "work", -1, "int"])
    h, tau, _, info = lapack("geqrf", batch, (m, n, lwork), [cm(a)],
                             [((n, m), dt, 0, False), ((k,), dt, -1, False), ((lwork,), dt, -1, True),
                              ((), i, -1, False)], dt)
    check_info(info, "Incorrect argument found while performing QR factorization")
    if mode == "raw": return h.astype(rt), tau.astype(rt)
    factored = cm(h)   # (m, n): R in its upper triangle, the reflectors below
    rows = k if mode in ("reduced", "r") else m
    r = triu(factored[..., :rows, :] if rows <= m else factored)
    if mode == "r": return r.astype(rt)
    q_cols = k if mode == "reduced" else m
    reflectors = h[..., :q_cols, :] if n >= q_cols else \
        Tensor(h.uop.pad(((0, 0),) * len(batch) + ((0, q_cols - n), (0, 0))))
    routine = "ungqr" if dt.is_complex else "orgqr"   # (complex: unitary Q, the same arguments)
    lwork2, _ = workspace(routine, dt, [m, q_cols, k, None, max(1, m), None, "work", -1, "int"])
    q, _, info2 = lapack(routine, batch, (m, q_cols, k, lwork2), [reflectors, tau],
                         [((q_cols, m), dt, 0, False), ((lwork2,), dt, -1, True), ((), i, -1, False)], dt)
    check_info(info2, "Incorrect argument found while performing QR factorization")
    if mode == "complete" and m > n:   # R has m rows: those below n are zero
        r = Tensor(r.uop.pad(((0, 0),) * len(batch) + ((0, m - r.shape[-2]), (0, 0)))) if r.shape[-2] < m else r
    return QRResult._make((cm(q).astype(rt), r.astype(rt)))


# ---------------------------------------------------------------------------------------------------------------
# least squares, pseudo-inverse, rank

def lstsq(a, b, rcond=None):
    """The least-squares solution of a @ x = b (LAPACK gelsd, as NumPy): (x, residuals, rank, singular values).
    Residuals have NumPy's data-dependent shape: (nrhs,) where m > n and a has full rank, else (0,); numfn
    computes the first and raises when a turns out rank-deficient (m > n)."""
    return solve_least_squares(a, b, rcond)


def solve_least_squares(a, b, rcond=None, residuals_used: bool = True):
    """lstsq; with `residuals_used=False` (numpy.polyfit without full=) a rank-deficient `a` is no error: the
    residuals are then NumPy's where a has full rank, and unused."""
    (a, b), rt = lapack_operands(a, b)
    vector = b.ndim == 1
    if vector: b = b.reshape(b.shape + (1,))
    for t in (a, b):
        if t.ndim != 2:
            raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be two-dimensional")
    m, n = a.shape
    m2, nrhs = b.shape
    if m != m2: raise LinAlgError("Incompatible dimensions")
    rcond = float(np.finfo(np.float64).eps * max(n, m)) if rcond is None else float(rcond)
    k, mx = min(m, n), max(m, n)
    real = real_type(rt)   # of the residuals and singular values
    if k == 0:   # nothing to factor: x = 0, rank 0, no singular values
        x = zeros((n, nrhs), rt)
        out = (x[:, 0] if vector else x), zeros((0,), real), Tensor(UOp.const(dtypes.int32, 0)), zeros((0,), real)
        return out
    dt = a.uop.dtype
    cols = max(nrhs, 1)   # LAPACK needs a right-hand side: NumPy adds one where there is none
    bb = b if nrhs else zeros((m, 1), dt)
    b_cm = cm(Tensor(bb.uop.pad(((0, mx - m), (0, 0))))) if mx > m else cm(bb)
    i = lapack_int()
    if dt.is_complex:   # zgelsd: a real workspace too, and rcond passed as a float64 buffer
        lwork, liwork, lrwork = workspace_sizes("gelsd", dt, [m, n, cols, None, max(1, m), None, max(1, mx), None,
                                                              rcond, "int", "work", -1, "rwork", "iwork", "int"])
        _, x, s, rank, _, _, _, info = lapack(
            "gelsd_complex", (), (m, n, cols, lwork), [cm(a), b_cm, full((), rcond)],
            [((n, m), dt, 0, False), ((cols, mx), dt, 1, False), ((k,), F64, -1, False), ((), i, -1, False),
             ((lwork,), dt, -1, True), ((lrwork,), F64, -1, True), ((liwork,), i, -1, True), ((), i, -1, False)], dt)
    else:
        lwork, liwork = workspace("gelsd", F64, [m, n, cols, None, max(1, m), None, max(1, mx), None, rcond, "int",
                                                 "work", -1, "iwork", "int"])
        _, x, s, rank, _, _, info = lapack(
            "gelsd", (), (m, n, cols, rcond, lwork, liwork), [cm(a), b_cm],
            [((n, m), F64, 0, False), ((cols, mx), F64, 1, False), ((k,), F64, -1, False), ((), i, -1, False),
             ((lwork,), F64, -1, True), ((liwork,), i, -1, True), ((), i, -1, False)])
    check_info(info, "SVD did not converge in Linear Least Squares")
    full_x = cm(x)[:, :nrhs]   # (mx, nrhs)
    sol = full_x[:n]
    if m > n:
        residuals = _squared_magnitudes(full_x[n:]).sum(axis=0).astype(real)
        if residuals_used: add_check(rank != n, rank, lambda r: unsupported(
            f"numpy.linalg.lstsq of a rank-deficient matrix (rank {r} < {n} columns)",
            "NumPy returns an empty residuals array then, an array whose shape depends on the values"))
    else:
        residuals = zeros((0,), real)
    return (sol[:, 0] if vector else sol).astype(rt), residuals, rank.astype(np.int32), s.astype(real)


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=None):
    """The Moore-Penrose pseudo-inverse, from the SVD with small singular values (below rcond times the largest)
    discarded, as NumPy computes it."""
    a = Tensor(Tensor.lift(a).uop)
    stacked_2d(a)
    if rcond is not None and rtol is not None: raise ValueError("`rtol` and `rcond` can't be both set.")
    if rcond is None: rcond = 1e-15 if rtol is None else rtol
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    # NumPy: an empty array of a's own dtype (before looking at the dtype: float16 too)
    if is_empty(batch, m, n): return zeros(batch + (n, m), a.uop.dtype)
    (a,), rt = lapack_operands(a)
    # NumPy: (vt^T diag(1/s) u^T) of conj(a)'s SVD, which is a's pinv
    u, s, vt = _svd_hermitian(a.conj(), True) if hermitian else _gesdd(a.conj(), False, True)
    cutoff = Tensor.lift(rcond).astype(F64)[..., None] * s.max(axis=-1, keepdims=True)
    large = s > cutoff
    sinv = U.where(large, 1.0 / U.where(large, s, 1.0), 0.0)
    return _matmul(cm(vt), sinv[..., None] * cm(u)).astype(rt)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):  # noqa: N803 - NumPy's name
    """The number of singular values above the tolerance (default: the largest times max(m, n) times eps)."""
    if rtol is not None and tol is not None: raise ValueError("`tol` and `rtol` can't be both set.")
    A = Tensor(Tensor.lift(A).uop)
    if A.ndim < 2: return (A != 0).max().astype(np.int64) if A.size else Tensor(UOp.const(dtypes.int64, 0))
    s = svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None: rtol = max(A.shape[-2:]) * np.finfo(s.dtype).eps
        else: rtol = Tensor.lift(rtol)[..., None]
        largest = s.max(axis=-1, keepdims=True) if s.shape[-1] else zeros(s.shape[:-1] + (1,), s.uop.dtype)
        tol = largest * rtol
    else:
        tol = Tensor.lift(tol)[..., None]
    return (s > tol).sum(axis=-1).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# norms and condition numbers

def _squared_magnitudes(x: Tensor) -> Tensor:
    """|x|^2 elementwise, real, as NumPy's norms compute it: (x.conj() * x).real for complex x."""
    return (x.conj() * x).real if x.uop.dtype.is_complex else x * x


def _vector_norm(x: Tensor, ord, axis: tuple[int, ...], keepdims: bool) -> Tensor:
    if ord is None or ord == 2: return U.sqrt(_squared_magnitudes(x).sum(axis=axis, keepdims=keepdims))
    if isinstance(ord, str): raise ValueError(f"Invalid norm order '{ord}' for vectors")
    a = abs(x)
    if ord == np.inf: return a.max(axis=axis, keepdims=keepdims, initial=0)   # (NumPy's: 0 for no elements)
    if ord == -np.inf: return a.min(axis=axis, keepdims=keepdims)
    if ord == 0: return (x != 0).astype(a.dtype).sum(axis=axis, keepdims=keepdims)
    if ord == 1: return a.sum(axis=axis, keepdims=keepdims)
    p = float(ord)
    return U.power(U.power(a, p).sum(axis=axis, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x: Tensor, ord, row: int, col: int, keepdims: bool) -> Tensor:
    if ord in (2, -2, "nuc"):
        rest = [i for i in range(x.ndim) if i not in (row, col)]
        s = svd(x.transpose(rest + [row, col]), compute_uv=False)
        # (NumPy's maximum starts from 0, so the 2-norm of an empty matrix is 0; the minimum raises)
        r = s.max(axis=-1, initial=0) if ord == 2 else s.min(axis=-1) if ord == -2 else s.sum(axis=-1)
    elif ord in (None, "fro", "f"):
        r = U.sqrt(_squared_magnitudes(x).sum(axis=(row, col)))
    elif ord in (1, -1, np.inf, -np.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = abs(x).sum(axis=inner)
        outer_after = outer - 1 if outer > inner else outer
        r = sums.max(axis=outer_after, initial=0) if ord in (1, np.inf) else sums.min(axis=outer_after)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        r = r.reshape(tuple(shape))
    return r


def norm(x, ord=None, axis=None, keepdims: bool = False) -> Tensor:
    """NumPy's norm: vector norms over one axis, matrix norms over two (2, -2 and 'nuc' from the singular values),
    the 2-norm of the flattened array by default."""
    x = Tensor(Tensor.lift(x).uop)
    if not x.uop.dtype.is_inexact: x = x.astype(F64)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            # NumPy: x.dot(x), for complex x x.real.dot(x.real) + x.imag.dot(x.imag)
            r = U.sqrt((x.real * x.real).sum() + (x.imag * x.imag).sum()) if x.uop.dtype.is_complex \
                else U.sqrt((x * x).sum())
            return r.reshape((1,) * x.ndim) if keepdims else r
        axes = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        try:
            axes = (operator.index(axis),)
        except TypeError:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from None
    else:
        axes = axis
    if len(axes) == 1:
        return _vector_norm(x, ord, (normalize_axis(axes[0], x.ndim),), keepdims)
    if len(axes) == 2:
        row, col = normalize_axis(axes[0], x.ndim), normalize_axis(axes[1], x.ndim)
        if row == col: raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, row, col, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _zero_filled(x, ord, axis, name: str) -> Tensor:
    """An array some of whose axes have a run-time length (a window `A[k:, k]`, `x[mask]`) at its static bound, its
    positions past the lengths zeros: what a norm of it sees, for the norms zeros do not change (those that sum
    magnitudes or take their maximum). Norms that take a minimum or negative powers, and norms that keep an axis of
    run-time length, are refused."""
    runtime = [a for a, ln in enumerate(x.lengths) if ln is not None]
    axes = range(x.ndim) if axis is None else [normalize_axis(a, x.ndim) for a in
                                               (axis if isinstance(axis, tuple) else (axis,))]
    zeros_change_nothing = ord is None or ord in ("fro", "f", "nuc", np.inf) or (
        isinstance(ord, (int, float)) and not isinstance(ord, bool) and ord >= 0)
    if not zeros_change_nothing or not set(runtime) <= set(axes):
        raise unsupported(f"numpy.linalg.{name} (ord={ord!r}, axis={axis!r}) on an array whose length is only known "
                          "at run time (x[mask], nonzero, a slice with traced bounds)", RUN_TIME_LENGTH_HINT,
                          RunTimeLengthError)
    return U.where(x.valid(), x.compact(), 0)


# numfn.trace.dynamic (below this module) knows these through its table of numfn.numpy functions
dynamic.NUMPY["linalg.norm"] = lambda x, ord=None, axis=None, keepdims=False: norm(
    _zero_filled(x, ord, axis, "norm"), ord, axis, keepdims)
dynamic.NUMPY["linalg.vector_norm"] = lambda x, /, *, axis=None, keepdims=False, ord=2: vector_norm(
    _zero_filled(x, ord, axis, "vector_norm"), axis=axis, keepdims=keepdims, ord=ord)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Tensor:
    """The matrix norm over the last two axes (array API)."""
    x = Tensor.lift(x)
    stacked_2d(x)
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Tensor:
    """The vector norm over `axis` (all axes, flattened, by default) (array API)."""
    x = Tensor(Tensor.lift(x).uop)
    if axis is None:
        r = norm(x.reshape(-1), ord=ord, axis=0)
        return r.reshape((1,) * x.ndim) if keepdims else r
    if isinstance(axis, tuple) and len(axis) != 1:
        axes = tuple(normalize_axis(a, x.ndim) for a in axis)
        rest = [i for i in range(x.ndim) if i not in axes]
        flat = x.transpose(rest + list(axes)).reshape(tuple(x.shape[i] for i in rest) + (-1,))
        r = norm(flat, ord=ord, axis=-1)
        if keepdims: r = r.reshape(tuple(1 if i in axes else x.shape[i] for i in range(x.ndim)))
        return r
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def cond(x, p=None) -> Tensor:
    """The condition number: the ratio of extreme singular values (p None, 2, -2), else norm(x) * norm(inv(x)),
    with NumPy's infinity for singular matrices."""
    x = Tensor(Tensor.lift(x).uop)
    stacked_2d(x)
    if x.shape[-1] == 0 or x.shape[-2] == 0: raise LinAlgError("cond is not defined on empty arrays")
    (x64,), rt = lapack_operands(x)
    if p is None or p in (2, -2):
        s = svd(x64, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        stacked_square(x64)
        r = norm(x64, p, axis=(-2, -1)) * norm(_inv_or_nan(x64), p, axis=(-2, -1))
    has_nan = U.isnan(x64).max(axis=(-2, -1))
    return U.where(U.isnan(r) & ~has_nan, np.inf, r).astype(real_type(rt))


# ---------------------------------------------------------------------------------------------------------------
# products and the rest

def matmul(x1, x2, /) -> Tensor:
    """The matrix product (np.linalg.matmul: np.matmul)."""
    return _matmul(x1, x2)


def matrix_power(a, n) -> Tensor:
    """a raised to the integer power n by repeated squaring (n < 0: of the inverse), as NumPy does."""
    a = Tensor(Tensor.lift(a).uop)
    stacked_square(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0: return identity(a.shape[-1], a.shape[:-2], a.uop.dtype)
    if n < 0:
        a, n = inv(a), -n
    result: Tensor | None = None
    z: Tensor | None = None
    while n > 0:
        z = a if z is None else _matmul(z, z)
        n, bit = divmod(n, 2)
        if bit: result = z if result is None else _matmul(result, z)
    assert result is not None   # (n > 0: some bit is set)
    return result


def multi_dot(arrays, *, out=None) -> Tensor:
    """The product of a chain of matrices in the cheapest order (dynamic programming over the shapes), with
    NumPy's treatment of 1-D first and last arguments."""
    if out is not None: raise unsupported("the out= argument of numpy.linalg.multi_dot")
    ts = [Tensor(Tensor.lift(a).uop) for a in arrays]
    if len(ts) < 2: raise ValueError("Expecting at least two arrays.")
    if len(ts) == 2:
        from numfn.numpy.products import dot
        return dot(ts[0], ts[1])
    first, last = ts[0].ndim, ts[-1].ndim
    if first == 1: ts[0] = ts[0].reshape((1, -1))
    if last == 1: ts[-1] = ts[-1].reshape((-1, 1))
    for t in ts:
        if t.ndim != 2: raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be two-dimensional")
    dims = [t.shape[0] for t in ts] + [ts[-1].shape[1]]
    count = len(ts)
    cost: list[list[float]] = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]: cost[i][j], split[i][j] = c, s

    def chain(i: int, j: int) -> Tensor:
        if i == j: return ts[i]
        return _matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j))
    r = chain(0, count - 1)
    if first == 1 and last == 1: return r[0, 0]
    if first == 1: return r[0]
    if last == 1: return r[:, 0]
    return r


def outer(x1, x2, /) -> Tensor:
    """The outer product of two vectors (np.linalg.outer: 1-D arguments only)."""
    a, b = Tensor.lift(x1), Tensor.lift(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={a.ndim} and x2.ndim={b.ndim}.")
    return a.reshape((-1, 1)) * b.reshape((1, -1))


def cross(x1, x2, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-element vectors along `axis` (np.linalg.cross), broadcasting the others."""
    a, b = Tensor.lift(x1), Tensor.lift(x2)
    for t in (a, b):
        if t.ndim == 0: raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
    da, db = a.shape[normalize_axis(axis, a.ndim)], b.shape[normalize_axis(axis, b.ndim)]
    if da != 3 or db != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they are {da} and {db} "
                         "dimensional instead.")
    a, b = a.swapaxes(axis, -1), b.swapaxes(axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    # NumPy puts the result's vector axis where `axis` says, counted in the broadcast result
    return c.swapaxes(-1, normalize_axis(axis, c.ndim)) if c.ndim > 1 else c


def diagonal(x, /, *, offset: int = 0) -> Tensor:
    """The diagonals (offset above the main one) of the last two axes."""
    x = Tensor.lift(x)
    stacked_2d(x)
    n, m = x.shape[-2:]
    rows = range(max(0, -offset), min(n, m - offset)) if -n < offset < m else range(0)
    count = len(rows)
    if count == 0: return zeros(x.shape[:-2] + (0,), x.uop.dtype)
    start = rows[0] * m + rows[0] + offset
    flat = x.reshape(x.shape[:-2] + (n * m,))
    return flat[..., start:start + (count - 1) * (m + 1) + 1:m + 1]


def trace(x, /, *, offset: int = 0, dtype=None) -> Tensor:
    """The sum along the diagonals of the last two axes, in the dtype sum gives (np.linalg.trace)."""
    return diagonal(x, offset=offset).sum(axis=-1, dtype=dtype)


def matrix_transpose(x, /) -> Tensor:
    """The transpose of the last two axes."""
    x = Tensor.lift(x)
    if x.ndim < 2: raise ValueError("Input array must be at least 2-dimensional")
    return x.swapaxes(-1, -2)


def polyfit(x: ArrayLike, y: ArrayLike, deg: int, rcond: float | None = None, full: bool = False,
            w: ArrayLike | None = None, cov: bool = False):
    """numpy.polyfit: the least-squares polynomial of degree `deg` through (x, y) (highest power first; one per
    column of a 2-D y), as NumPy computes it: the Vandermonde matrix's columns scaled to unit norm, lstsq, the scale
    undone. `full=True` also gives the residuals, the rank, the singular values and rcond. (NumPy's RankWarning
    for a rank-deficient fit is not raised: the rank is known when the program runs.)"""
    refuse("numpy.polyfit", cov=cov or None)
    order = int(deg) + 1
    xt, yt = Tensor(Tensor.lift(x).uop) + 0.0, Tensor(Tensor.lift(y).uop) + 0.0
    if deg < 0: raise ValueError("expected deg >= 0")
    if xt.ndim != 1: raise TypeError("expected 1D vector for x")
    if xt.size == 0: raise TypeError("expected non-empty vector for x")
    if yt.ndim < 1 or yt.ndim > 2: raise TypeError("expected 1D or 2D array for y")
    if xt.shape[0] != yt.shape[0]: raise TypeError("expected x and y to have same length")
    if rcond is None: rcond = len(xt) * np.finfo(xt.dtype).eps   # (a NumPy scalar of x's type, as NumPy's)
    lhs, rhs = vander(xt, order), yt
    if w is not None:
        wt = Tensor(Tensor.lift(w).uop) + 0.0
        if wt.ndim != 1: raise TypeError("expected a 1-d array for weights")
        if wt.shape[0] != yt.shape[0]: raise TypeError("expected w and y to have the same length")
        lhs = lhs * wt[:, None]
        rhs = rhs * (wt if rhs.ndim == 1 else wt[:, None])
    scale = (lhs * lhs).sum(axis=0) ** 0.5
    c, resids, rank, s = solve_least_squares(lhs / scale, rhs, rcond, residuals_used=full)
    c = (c.T / scale).T
    return (c, resids, rank, s, rcond) if full else c
