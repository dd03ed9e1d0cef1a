"""Derivative rules of the LAPACK routines numpy.linalg's functions call (registered into rules.EXTERN_JVP and
EXTERN_TRANSPOSE): gesv (solve, inv), getrf (det, slogdet), potrf (cholesky), syevd (eigh, eigvalsh), gesdd (svd,
svdvals, pinv), gelsd (lstsq), geqrf and orgqr (qr), geev (eigvals of real matrices; eig's eigenvectors: refused).

Matrices small enough for numfn's generated elimination (numfn.numpy.linalg_small) are ordinary traced ops with
ordinary rules; these rules are for the LAPACK calls. They are written on the matrices LAPACK sees: an EXTERN's
buffers are row-major arrays LAPACK reads column-major, so each matrix is the transpose of its buffer (`lapack_view`,
its own inverse). The formulas (A the matrix, d its tangent):

- gesv, X = A^-1 B: dX = A^-1 (dB - dA X), one more gesv with A. It is linear in B, so the tangent graph's
  gesv calls transpose to gesv with A^T: the cotangent of B is A^-T times X's;
- getrf, P A = L U: with F = L^-1 P dA U^-1 = U A^-1 dA U^-1, dL = L strict_lower(F), dU = upper(F) U (det and
  slogdet are computed from U's diagonal and the pivots, so their derivatives follow: d log|det| = tr(A^-1 dA));
- potrf, A = L L^T from one triangle: dL = L Phi(L^-1 dS L^-T), Phi the lower triangle with half its diagonal, dS
  the symmetric matrix the read triangle's tangent makes. (The derivative of the function NumPy computes, which
  reads one triangle; JAX's cholesky symmetrizes its input first, so its gradient is the symmetric part.)
- syevd, A = V diag(w) V^T from one triangle, eigenvalues distinct (as JAX): dw = diag(V^T dS V),
  dV = V (F o V^T dS V) with F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it. eigvalsh (no vectors) asks for
  them (an eigh of the same matrix).
- gesdd, A = U diag(s) Vt (reduced), singular values distinct (as JAX): `jvp_gesdd`; pinv is computed from it;
- gelsd, x = A+ b for A of full rank: the derivative of the pseudo-inverse (`jvp_gelsd`);
- geqrf and orgqr, A = Q R reduced, m >= n (as JAX): `jvp_geqrf` makes dR and dQ; orgqr's rule finds dQ by the
  tangent of the reflectors it reads (QR_Q_TANGENTS). qr's mode="raw" (the reflectors themselves) gets a zero
  tangent below the diagonal: not a derivative of the reflectors;
- geev, eigvals of a real matrix, distinct eigenvalues: dw = diag(V^-1 dA V) (`jvp_geev`).

The factors' other results (gesv's LU factors and pivots, work arrays, info) have no tangent: numpy.linalg never
reads gesv's factors. The triangular solves are gesv calls too (LAPACK's general solver on a triangular matrix:
O(n^3), as the factorization). Complex matrices are refused (rules.py).
"""
from __future__ import annotations

import weakref
from typing import cast

from numfn.autodiff.rules import EXTERN_JVP, EXTERN_TRANSPOSE, NotDifferentiable, Tangent, add_tangents, matmul, \
    matrix_transpose
from numfn.extern import extern
from numfn.ir.uop import Ops, UOp
from numfn.dtype import dtypes
from numfn.numpy.linalg import eigh, inv, pinv, qr, svd
from numfn.numpy.linalg_eig import eig
from numfn.numpy.linalg_lapack import lapack_int
from numfn.trace.tensor import Tensor

lapack_view = matrix_transpose   # a buffer <-> the matrix LAPACK sees (and back)


def _shape(u: UOp) -> tuple[int, ...]:
    assert u.shape is not None
    return u.shape


def solve_matrix(a: UOp, b: UOp) -> UOp:
    """a^-1 b for matrices a (..., n, n) and b (..., n, k) of one batch (LAPACK gesv; a is nonsingular: the primal
    call checked it)."""
    shape_a, shape_b = _shape(a), _shape(b)
    batch, n, k, dt = shape_a[:-2], shape_a[-1], shape_b[-1], a.dtype
    i = lapack_int()
    b = b if shape_b[:-2] == batch else b.expand(batch + shape_b[-2:])
    results = [((n, n), dt, 0, False), ((k, n), dt, 1, False), ((n,), i, -1, False), ((), i, -1, False)]
    x = extern("gesv", dt, batch, (n, k), [lapack_view(a), lapack_view(b)], results)[1]
    return lapack_view(x)


def _mask(shape: tuple[int, ...], keep) -> UOp:
    """A bool mask of a stack of (n, m) matrices: keep(rows, cols) at every element."""
    n, m = shape[-2], shape[-1]
    rows = UOp.iota(max(n, 1)).shrink(((0, n),)).reshape((n, 1)).expand((n, m))
    cols = UOp.iota(max(m, 1)).shrink(((0, m),)).reshape((1, m)).expand((n, m))
    mask = keep(rows, cols)
    return mask.reshape((1,) * (len(shape) - 2) + (n, m)).expand(shape)


def _where(mask: UOp, x: UOp) -> UOp:
    return mask.alu(Ops.WHERE, x, UOp.const_like(x.dtype, 0, _shape(x)))


def lower(x: UOp, strict: bool = False) -> UOp:
    return _where(_mask(_shape(x), lambda r, c: c.alu(Ops.CMPLT, r) if strict else c.alu(Ops.CMPLE, r)), x)


def upper(x: UOp, strict: bool = False) -> UOp:
    return _where(_mask(_shape(x), lambda r, c: r.alu(Ops.CMPLT, c) if strict else r.alu(Ops.CMPLE, c)), x)


def diagonal_mask(shape: tuple[int, ...]) -> UOp:
    return _mask(shape, lambda r, c: r.alu(Ops.CMPEQ, c))


def identity_like(x: UOp) -> UOp:
    shape = _shape(x)
    return diagonal_mask(shape).alu(Ops.WHERE, UOp.const_like(x.dtype, 1, shape), UOp.const_like(x.dtype, 0, shape))


def _mm(a: UOp, b: UOp) -> UOp:
    return matmul(a, b, _shape(a)[:-2])


def _result(node: UOp, k: int) -> UOp:
    return UOp(Ops.RESULT, node.arg.results[k][1], (node,), k)


def symmetric_from_lower(x: UOp) -> UOp:
    """The symmetric matrix whose lower triangle is x's."""
    return lower(x).alu(Ops.ADD, matrix_transpose(lower(x, strict=True)))


# ---------------------------------------------------------------------------------------------------------------
# the rules

def jvp_gesv(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    a, x = lapack_view(primals[0]), lapack_view(_result(node, 1))
    ta, tb = tangents[0], tangents[1]
    rhs = add_tangents(None if tb is None else lapack_view(tb),
                       None if ta is None else _mm(lapack_view(ta), x).alu(Ops.NEG))
    return [None, None if rhs is None else lapack_view(solve_matrix(a, rhs)), None, None]


def transpose_gesv(node: UOp, ct: UOp, linear: tuple[bool, ...], result: int) -> tuple[Tangent, ...]:
    """X = A^-1 B, linear in B: B's cotangent A^-T (X's)."""
    assert result == 1 and not linear[0], "a tangent graph solves with a primal matrix for a tangent right-hand side"
    a = lapack_view(node.src[0])
    return (None, lapack_view(solve_matrix(matrix_transpose(a), lapack_view(ct))))


def jvp_getrf(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    (ta,) = tangents
    if ta is None: return [None, None, None]
    a, lu = lapack_view(primals[0]), lapack_view(_result(node, 0))
    l_factor = lower(lu, strict=True).alu(Ops.ADD, identity_like(lu))
    u_factor = upper(lu)
    h = _mm(u_factor, solve_matrix(a, lapack_view(ta)))                          # U A^-1 dA = L^-1 P dA
    f = matrix_transpose(solve_matrix(matrix_transpose(u_factor), matrix_transpose(h)))   # h U^-1
    dlu = _mm(l_factor, lower(f, strict=True)).alu(Ops.ADD, _mm(upper(f), u_factor))
    return [lapack_view(dlu), None, None]


def jvp_potrf(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """LAPACK factors its matrix's upper triangle, A = U^T U with U = L^T, and leaves the strict lower triangle as it
    was (its tangent passes through)."""
    (ta,) = tangents
    if ta is None: return [None, None]
    c, da = lapack_view(_result(node, 0)), lapack_view(ta)
    l_factor = matrix_transpose(upper(c))
    ds = matrix_transpose(symmetric_from_lower(matrix_transpose(da)))            # from the upper triangle
    z = solve_matrix(l_factor, matrix_transpose(solve_matrix(l_factor, ds)))      # L^-1 dS L^-T
    half = UOp.const_like(z.dtype, 0.5, _shape(z))
    phi = lower(z, strict=True).alu(Ops.ADD, _where(diagonal_mask(_shape(z)), z.alu(Ops.MUL, half)))
    dl = _mm(l_factor, phi)
    dc = upper(matrix_transpose(dl)).alu(Ops.ADD, lower(da, strict=True))
    return [lapack_view(dc), None]


def jvp_syevd(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """LAPACK reads its matrix's lower triangle."""
    (ta,) = tangents
    nres = len(node.arg.results)
    if ta is None: return [None] * nres
    a = lapack_view(primals[0])
    shape = _shape(a)
    batch, n = shape[:-2], shape[-1]
    if node.arg.params[1] == "V":
        v, w = lapack_view(_result(node, 0)), _result(node, 1)
    else:   # eigvalsh: the eigenvectors from an eigh of the same matrix
        v, w = cast(Tensor, eigh(Tensor(a), "L")[1]).uop, _result(node, 1)
    ds = symmetric_from_lower(lapack_view(ta))
    m = _mm(matrix_transpose(v), _mm(ds, v))
    diag = diagonal_mask(shape)
    zeros = UOp.const_like(m.dtype, 0, shape)
    dw = diag.alu(Ops.WHERE, m, zeros).reduce(Ops.ADD, (len(shape) - 1,)).reshape(batch + (n,))
    gaps = w.reshape(batch + (1, n)).expand(shape).alu(Ops.SUB, w.reshape(batch + (n, 1)).expand(shape))
    ones = UOp.const_like(m.dtype, 1, shape)
    f = diag.alu(Ops.WHERE, zeros, ones.alu(Ops.FDIV, diag.alu(Ops.WHERE, ones, gaps)))
    dv = _mm(v, f.alu(Ops.MUL, m))
    out: list[Tangent] = [lapack_view(dv) if node.arg.params[1] == "V" else None, dw]
    return out + [None] * (nres - 2)


EXTERN_JVP.update({"gesv": jvp_gesv, "getrf": jvp_getrf, "potrf": jvp_potrf, "syevd": jvp_syevd})
EXTERN_TRANSPOSE.update({"gesv": transpose_gesv})


def _diagonal(x: UOp) -> UOp:
    """The diagonals of a stack of square matrices."""
    shape = _shape(x)
    zeros = UOp.const_like(x.dtype, 0, shape)
    return diagonal_mask(shape).alu(Ops.WHERE, x, zeros).reduce(Ops.ADD, (len(shape) - 1,)).reshape(shape[:-1])


def jvp_gesdd(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """A = U diag(s) Vt (reduced: U m x k, Vt k x n, k = min(m, n)), singular values distinct, as JAX's rule:
    dS = U^T dA V, ds = diag(dS), dU = U (F o (dS S + S dS^T)) (+ (I - U U^T) dA V S^-1 where m > n),
    dV = V (F o (S dS + dS^T S)) (+ (I - V Vt) dA^T U S^-1 where n > m), F_ij = 1 / (s_j^2 - s_i^2) off the
    diagonal. The full U or Vt of a non-square matrix (full_matrices=True) is not determined by A: refused, as in
    JAX. Without U and Vt (svdvals), ds comes from an SVD of the same matrix."""
    (ta,) = tangents
    nres = len(node.arg.results)
    if ta is None: return [None] * nres
    m, n, jobz = node.arg.params[:3]
    a, da = lapack_view(primals[0]), lapack_view(ta)
    if jobz == "A" and m != n:
        raise NotDifferentiable("the derivative of numpy.linalg.svd with full_matrices=True of a non-square matrix "
                                "(its extra singular vectors are not determined): pass full_matrices=False")
    if jobz == "N":
        found = svd(Tensor(a), full_matrices=False)
        u, s, vt = found[0].uop, _result(node, 1), found[2].uop
    else:
        u, s, vt = lapack_view(_result(node, 2)), _result(node, 1), lapack_view(_result(node, 3))
    v = matrix_transpose(vt)
    batch, k = _shape(s)[:-1], _shape(s)[-1]
    square = batch + (k, k)
    ds_full = _mm(matrix_transpose(u), _mm(da, v))
    ds = _diagonal(ds_full)
    if jobz == "N": return [None, ds] + [None] * (nres - 2)
    s_row = s.reshape(batch + (1, k)).expand(square)       # s_j at (i, j)
    s_col = s.reshape(batch + (k, 1)).expand(square)       # s_i at (i, j)
    diffs = s_row.alu(Ops.ADD, s_col).alu(Ops.MUL, s_row.alu(Ops.SUB, s_col))
    zero, one = UOp.const_like(s.dtype, 0, square), UOp.const_like(s.dtype, 1, square)
    same = diffs.alu(Ops.CMPEQ, zero)
    f = same.alu(Ops.WHERE, zero, one.alu(Ops.FDIV, same.alu(Ops.WHERE, one, diffs)))
    dss, sds = ds_full.alu(Ops.MUL, s_row), s_col.alu(Ops.MUL, ds_full)
    du = _mm(u, f.alu(Ops.MUL, dss.alu(Ops.ADD, matrix_transpose(dss))))
    dv = _mm(v, f.alu(Ops.MUL, sds.alu(Ops.ADD, matrix_transpose(sds))))
    if m > n:
        dav = _mm(da, v)
        rest = dav.alu(Ops.SUB, _mm(u, _mm(matrix_transpose(u), dav)))
        du = du.alu(Ops.ADD, rest.alu(Ops.FDIV, s.reshape(batch + (1, k)).expand(_shape(rest))))
    if n > m:
        dau = _mm(matrix_transpose(da), u)
        rest = dau.alu(Ops.SUB, _mm(v, _mm(vt, dau)))
        dv = dv.alu(Ops.ADD, rest.alu(Ops.FDIV, s.reshape(batch + (1, k)).expand(_shape(rest))))
    return [None, ds, lapack_view(du), lapack_view(matrix_transpose(dv))] + [None] * (nres - 4)


def jvp_gelsd(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """lstsq, x = A+ b for A of full rank (m x n; constant rank, as the derivative of the pseudo-inverse needs):
    dx = A+ (db - dA x) + A+ A+^T dA^T r + (I - A+ A) dA^T A+^T x, r = b - A x. LAPACK's solution buffer holds x in
    its first n rows and, where m > n, components of the residual below (numpy's residuals are their sums of
    squares): their tangent is chosen along them, c (r^T dr) / |c|^2, which makes the residuals' derivative
    2 r^T dr exact. The singular values' tangents are diag(U^T dA V) (an SVD of the same matrix)."""
    ta, tb = tangents[0], tangents[1]
    nres = len(node.arg.results)
    if ta is None and tb is None: return [None] * nres
    m, n = node.arg.params[:2]
    a = lapack_view(primals[0])
    full_b, full_x = lapack_view(primals[1]), lapack_view(_result(node, 1))   # (max(m, n), nrhs)
    nrhs = _shape(full_x)[-1]
    b, x = full_b.shrink(((0, m), (0, nrhs))), full_x.shrink(((0, n), (0, nrhs)))
    a_plus = cast(Tensor, pinv(Tensor(a))).uop                                      # (n, m)
    r = b.alu(Ops.SUB, _mm(a, x))
    db = None if tb is None else lapack_view(tb).shrink(((0, m), (0, nrhs)))
    dx: Tangent = None if db is None else _mm(a_plus, db)
    ds: Tangent = None
    if ta is not None:
        da = lapack_view(ta)
        dat = matrix_transpose(da)
        proj = identity_like(_mm(a_plus, a)).alu(Ops.SUB, _mm(a_plus, a))       # I - A+ A
        dx = add_tangents(dx, add_tangents(
            _mm(a_plus, _mm(da, x)).alu(Ops.NEG),
            _mm(a_plus, _mm(matrix_transpose(a_plus), _mm(dat, r))).alu(Ops.ADD,
                                                                       _mm(proj, _mm(dat, _mm(matrix_transpose(
                                                                           a_plus), x))))))
        u, vt = (cast(Tensor, t).uop for t in (svd(Tensor(a), full_matrices=False)[0],
                                               svd(Tensor(a), full_matrices=False)[2]))
        ds = _diagonal(_mm(matrix_transpose(u), _mm(da, matrix_transpose(vt))))
    assert dx is not None
    dfull = dx
    if m > n:   # the residual rows: along c, scaled so that d|c|^2 = 2 r^T dr
        dr = add_tangents(db, _mm(a, dx).alu(Ops.NEG))
        if ta is not None: dr = cast(UOp, dr).alu(Ops.SUB, _mm(lapack_view(ta), x))
        c = full_x.shrink(((n, m), (0, nrhs)))
        along = r.alu(Ops.MUL, cast(UOp, dr)).reduce(Ops.ADD, (0,))                # (1, nrhs)
        norm = c.alu(Ops.MUL, c).reduce(Ops.ADD, (0,))
        zero = UOp.const_like(norm.dtype, 0, _shape(norm))
        empty = norm.alu(Ops.CMPEQ, zero)
        scale = empty.alu(Ops.WHERE, zero, along.alu(Ops.FDIV, empty.alu(
            Ops.WHERE, UOp.const_like(norm.dtype, 1, _shape(norm)), norm)))
        dfull = dx.pad(((0, m - n), (0, 0))).alu(Ops.ADD, c.alu(Ops.MUL, scale.expand(_shape(c))).pad(
            ((n, 0), (0, 0))))
    return [None, lapack_view(dfull), ds] + [None] * (nres - 3)


# qr: geqrf's tangent of its factored matrix carries dR (its upper triangle, what numpy.linalg.qr reads as R); the
# tangent of Q, which orgqr computes from the reflectors below it, is kept here by that tangent (weak: it lives as
# long as the tangent graph), for orgqr's rule to find through the movement ops between them
QR_Q_TANGENTS: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()
_MOVEMENT = (Ops.RESHAPE, Ops.PERMUTE, Ops.SHRINK, Ops.CONTIGUOUS, Ops.EXPAND)


def jvp_geqrf(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """A = Q R (reduced, m >= n), as JAX's rule: C = dA R^-1, with O the skew-symmetric matrix of Q^T C's strict
    lower triangle, dR = (Q^T C - O) R and dQ = Q (O - Q^T C) + C. Wide matrices (m < n) are refused, as in JAX."""
    (ta,) = tangents
    nres = len(node.arg.results)
    if ta is None: return [None] * nres
    m, n = node.arg.params[:2]
    if m < n:
        raise NotDifferentiable("the derivative of numpy.linalg.qr of a wide matrix (more columns than rows), as in "
                                "JAX: factor its transpose, or a square part")
    a, da = lapack_view(primals[0]), lapack_view(ta)
    q, r = (cast(Tensor, t).uop for t in qr(Tensor(a)))
    batch = _shape(a)[:-2]
    c = matrix_transpose(solve_matrix(matrix_transpose(r), matrix_transpose(da)))   # dA R^-1
    qtc = _mm(matrix_transpose(q), c)
    low = lower(qtc, strict=True)
    skew = low.alu(Ops.SUB, matrix_transpose(low))
    dr = upper(_mm(qtc.alu(Ops.SUB, skew), r))
    dq = _mm(q, skew.alu(Ops.SUB, qtc)).alu(Ops.ADD, c)
    dh = lapack_view(dr.pad(((0, 0),) * len(batch) + ((0, m - n), (0, 0))) if m > n else dr)
    QR_Q_TANGENTS[dh] = dq
    return [dh] + [None] * (nres - 1)


def jvp_orgqr(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """Q from geqrf's reflectors: its tangent is the one geqrf's rule made (reduced Q of an m >= n matrix)."""
    t = tangents[0]
    nres = len(node.arg.results)
    if t is None: return [None] * nres
    while t not in QR_Q_TANGENTS and t.op in _MOVEMENT: t = t.src[0]
    dq = QR_Q_TANGENTS.get(t)
    if dq is None or _shape(lapack_view(_result(node, 0))) != _shape(dq):
        raise NotDifferentiable("the derivative of numpy.linalg.qr's Q in mode='complete' of a tall matrix (its "
                                "extra columns are not determined), as in JAX: use mode='reduced'")
    return [lapack_view(dq)] + [None] * (nres - 1)


def jvp_geev(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> list[Tangent]:
    """The eigenvalues of a real general matrix (eigvals; dgeev without vectors), distinct: with A = V diag(w) V^-1,
    dw = diag(V^-1 dA V) (complex; wr and wi get its real and imaginary parts). The eigenvectors' derivative depends
    on LAPACK's normalization (unit norm, the largest component real): refused."""
    (ta,) = tangents
    nres = len(node.arg.results)
    if ta is None: return [None] * nres
    if node.arg.params[1] == "V":
        raise NotDifferentiable("the derivative of numpy.linalg.eig (its eigenvectors): use numpy.linalg.eigvals "
                                "for the eigenvalues' derivative")
    a, da = lapack_view(primals[0]), lapack_view(ta)
    v = cast(Tensor, eig(Tensor(a))[1]).uop
    c128 = dtypes.complex128
    m = _mm(inv(Tensor(v)).uop, _mm(da.cast(c128), v))
    dw = _diagonal(m)
    return [None, dw.cast(dtypes.float64), dw.alu(Ops.IMAG)] + [None] * (nres - 3)


EXTERN_JVP.update({"gesdd": jvp_gesdd, "gelsd": jvp_gelsd, "geqrf": jvp_geqrf, "orgqr": jvp_orgqr, "geev": jvp_geev})
