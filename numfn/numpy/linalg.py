"""numfn.numpy.linalg: NumPy's linear algebra over traced arrays (np.linalg.* on traced arrays dispatches here).

Decompositions and solvers call LAPACK from the compiled program (numfn/extern.py), as NumPy does: in float64
whatever the input (NumPy computes float32 inputs in double and casts the results back, and so does numfn), on
stacked inputs broadcast the way NumPy's gufuncs broadcast them, under vmap and svmap too. LAPACK works on
column-major matrices: a matrix handed to it is the row-major buffer of its transpose (`_cm`), which the kernel
filling the routine's in-out buffer writes for free. Errors NumPy raises for values (a singular matrix, a matrix
that is not positive definite, no convergence) are raised after the call with NumPy's LinAlgError and message,
through numfn.trace.tensor.add_check. Stacks of small systems (solve, inv, det, slogdet up to 8x8) are the exception:
generated code, LAPACK's elimination written out (see `_small_lu`). Everything else (norms, products, cross,
outer, trace) is composed from the tracer's primitives and fuses with its surroundings.
"""
from __future__ import annotations

import math
import operator

import numpy as np
from numpy.linalg import LinAlgError
from numpy.linalg._linalg import EighResult, QRResult, SlogdetResult, SVDResult

from numfn.dtype import DType, dtypes
from numfn.errors import unsupported
from numfn.extern import extern, workspace
from numfn.numpy import ufuncs as U
from numfn.numpy.creation import arange, eye
from numfn.numpy.manipulation import stack
from numfn.args import normalize_axis
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes, matmul as _matmul
from numfn.ir.uop import Ops, UOp

__all__ = ["LinAlgError", "solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
           "lstsq", "pinv", "matrix_rank", "norm", "matrix_norm", "vector_norm", "cond", "matrix_power",
           "multi_dot", "cross", "outer", "trace", "diagonal", "matrix_transpose", "matmul", "tensorsolve",
           "tensorinv"]

F64 = dtypes.float64


# ---------------------------------------------------------------------------------------------------------------
# helpers

def _float_operands(*arrays) -> tuple[list[Tensor], DType]:
    """The operands as float64 Tensors (what LAPACK computes in) and the result dtype NumPy gives: float32 when
    every operand is float32, else float64 (integers and bools included)."""
    ts = [Tensor(Tensor.lift(a).uop) for a in arrays]   # Python scalars are arrays here: strong
    for t in ts:
        if t.uop.dtype.kind not in "biuf": raise TypeError(f"array type {t.dtype} is unsupported in linalg")
    single = all(t.uop.dtype is dtypes.float32 for t in ts)
    return [t.astype(F64, copy=False) for t in ts], dtypes.float32 if single else F64


def _int() -> DType:
    """The dtype of LAPACK's integers (pivots, info); NumfnError when there is no LAPACK."""
    from numfn.runtime import blas
    iface = blas.interface()
    if iface is None:
        raise unsupported("numpy.linalg's decompositions without a BLAS/LAPACK library",
                          "install scipy-openblas64 (pip install scipy-openblas64), and unset NUMFN_BLAS")
    return dtypes.int64 if iface.int_bits == 64 else dtypes.int32


def _stacked_2d(a: Tensor) -> None:
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")


def _stacked_square(a: Tensor) -> None:
    _stacked_2d(a)
    if a.shape[-1] != a.shape[-2]: raise LinAlgError("Last 2 dimensions of the array must be square")


def _cm(x: Tensor) -> Tensor:
    """The transpose of the last two axes: a column-major matrix's row-major buffer, and back."""
    return x.swapaxes(-1, -2)


def _zeros(shape: tuple[int, ...], dt: DType = F64) -> Tensor:
    return Tensor(UOp.const_like(dt, 0, tuple(shape)))


def _full(shape: tuple[int, ...], value, dt: DType = F64) -> Tensor:
    return Tensor(UOp.const_like(dt, value, tuple(shape)))


def _eye(n: int, batch: tuple[int, ...] = (), dt: DType = F64) -> Tensor:
    return eye(n, dtype=dt.np).broadcast_to(batch + (n, n))


def _lapack(routine: str, batch: tuple[int, ...], params: tuple, inputs: list[Tensor], results: list) -> list[Tensor]:
    """The results of a LAPACK call (see numfn.extern.extern) as Tensors."""
    _int()
    return [Tensor(u) for u in extern(routine, F64, batch, params, [t.uop for t in inputs], results)]


def _check(info: Tensor, message: str) -> None:
    """LAPACK's info > 0 becomes NumPy's LinAlgError(message) after the call."""
    add_check(info > 0, info, lambda _: LinAlgError(message))


def _diag(x: Tensor) -> Tensor:
    """The main diagonals of a stack of square matrices (..., n, n) -> (..., n)."""
    n = x.shape[-1]
    return x.reshape(x.shape[:-2] + (n * n,))[..., ::n + 1]


def _tri_mask(n: int, m: int, k: int, lower: bool) -> Tensor:
    rows = Tensor(UOp.iota(n).reshape((n, 1)).expand((n, m)))
    cols = Tensor(UOp.iota(m).reshape((1, m)).expand((n, m)))
    return cols <= rows + k if lower else cols >= rows + k


def _tril(x: Tensor) -> Tensor:
    return U.where(_tri_mask(x.shape[-2], x.shape[-1], 0, True), x, 0.0)


def _triu(x: Tensor) -> Tensor:
    return U.where(_tri_mask(x.shape[-2], x.shape[-1], 0, False), x, 0.0)


def _empty(batch: tuple[int, ...], *dims: int) -> bool:
    return 0 in batch or 0 in dims


# ---------------------------------------------------------------------------------------------------------------
# small matrices: LU with partial pivoting written out as generated code
#
# A stack of small matrices (10^4 8x8 systems) would be one LAPACK call per matrix, about a microsecond each however
# little work a matrix is. Up to SMALL_N, numfn writes the factorization out instead: every entry of the matrix is a
# value of the batch's shape, and Gaussian elimination with partial pivoting on [A | B] is an unrolled sequence of
# elementwise operations on them, so the whole solve is one fused kernel looping over the batch (which LLVM
# vectorizes across matrices, and numfn threads). Pivots are LAPACK's (getrf's idamax): the first row of largest
# |a| at or below the diagonal, found by a tournament (ties go to the lower row, so the result is the same as
# a scan's, at logarithmic depth), whose winner carries its row along; the row it replaces moves to the winner's
# place. An exactly zero pivot is getrf's info > 0 (singular). The results are stacked along their own axes
# (`_stack`), loops the code generator unrolls, so each is computed once per matrix.

SMALL_N = 8           # square matrices up to this size are factored by generated code ...
SMALL_RHS = 16        # ... with up to this many right-hand sides (inv: n of them) ...
SMALL_BATCH = 16      # ... in stacks of at least this many: fewer are not worth the compile time (about a second
                      # for 8x8, where LAPACK costs about a microsecond a call) ...
SMALL_ALWAYS_N = 3    # ... except matrices up to this size, which compile as fast as the call (so a 3x3 solve under
                      # vmap, traced as one matrix, is generated code too)


def _small(n: int, k: int, batch: tuple[int, ...]) -> bool:
    return 1 <= n <= SMALL_N and k <= SMALL_RHS and (math.prod(batch) >= SMALL_BATCH or n <= SMALL_ALWAYS_N)


def _shape(u: UOp) -> tuple[int, ...]:
    """A tensor-level node's shape (only loop-level nodes have none)."""
    assert u.shape is not None, u
    return u.shape


def _entry(x: UOp, i: int, j: int) -> UOp:
    """x[..., i, j]: a value of the batch's shape."""
    shape = _shape(x)
    nb = len(shape) - 2
    bounds = tuple((0, s) for s in shape[:nb]) + ((i, i + 1), (j, j + 1))
    return x.shrink(bounds).reshape(shape[:nb])


def _stack(values: list[UOp], axis: int) -> UOp:
    """values (one shape) stacked along a new axis `axis`: selects on the position, a balanced tree (its depth
    counts towards the kernel's, see schedule.MAX_KERNEL_DEPTH); the code generator unrolls that axis' loop, and
    every copy's selects fold to one value."""
    shape = _shape(values[0])
    r = len(values)
    new = shape[:axis] + (r,) + shape[axis:]
    pos = UOp.iota(r).reshape(tuple(r if a == axis else 1 for a in range(len(new)))).expand(new)

    def tree(lo: int, hi: int) -> UOp:
        if hi - lo == 1: return values[lo].reshape(shape[:axis] + (1,) + shape[axis:]).expand(new)
        mid = (lo + hi) // 2
        return pos.alu(Ops.CMPLT, UOp.const_like(dtypes.int64, mid, new)).alu(Ops.WHERE, tree(lo, mid), tree(mid, hi))
    return tree(0, r)


def _pivot_key(x: UOp) -> UOp:
    """What the pivot search maximizes: |x|, and -1 for NaN (OpenBLAS's idamax passes over NaNs)."""
    a = x.alu(Ops.ABS)
    return a.alu(Ops.CMPNE, a).alu(Ops.WHERE, UOp.const_like(F64, -1.0, _shape(x)), a)


# below this a pivot's reciprocal may overflow: the column is scaled by a power of two first (exactly)
_SFMIN = float(np.finfo(np.float64).tiny)
_SCALE = 2.0 ** 600


def _reciprocal(p: UOp) -> tuple[UOp, UOp]:
    """(s, 1 / (p s)) with s a power of two: 1 where |p| >= the smallest normal number, else large enough that
    p s is normal. Multipliers a / p are then (a s) (1 / (p s)): one division per column, as LAPACK's getf2 scales
    a column by the pivot's reciprocal (and divides only below that bound)."""
    shape = _shape(p)
    tiny = p.alu(Ops.ABS).alu(Ops.CMPLT, UOp.const_like(F64, _SFMIN, shape))
    s = tiny.alu(Ops.WHERE, UOp.const_like(F64, _SCALE, shape), UOp.const_like(F64, 1.0, shape))
    return s, UOp.const_like(F64, 1.0, shape).alu(Ops.FDIV, p * s)


def _small_lu(a: UOp, b: UOp | None) -> tuple[list[list[UOp]], list[UOp], UOp, list[tuple[UOp, UOp]]]:
    """Gaussian elimination with partial pivoting of [a | b] (a: (..., n, n), b: (..., n, k) or None, float64, one
    batch shape): the rows of [U | L^-1 P b] (entries left of the diagonal dropped), U's diagonal (the pivots),
    whether the number of row interchanges is odd, and each pivot's (scale, reciprocal) (see _reciprocal)."""
    n = _shape(a)[-1]
    batch = _shape(a)[:-2]
    rhs = [] if b is None else [[_entry(b, i, j) for j in range(_shape(b)[-1])] for i in range(n)]
    rows = [[_entry(a, i, j) for j in range(n)] + (rhs[i] if rhs else []) for i in range(n)]
    odd = UOp.const_like(dtypes.bool, False, batch)
    done: list[list[UOp]] = []
    reciprocals: list[tuple[UOp, UOp]] = []
    for c in range(n):
        # the tournament: (row index, |pivot candidate|, the row's entries from column c on), in row order
        players = [(UOp.const_like(dtypes.int64, i, batch), _pivot_key(rows[i][c]), rows[i][c:]) for i in range(c, n)]
        while len(players) > 1:
            nxt = []
            for left, right in zip(players[::2], players[1::2]):
                wins = left[1].alu(Ops.CMPLT, right[1])   # strictly larger: ties keep the earlier row
                nxt.append((wins.alu(Ops.WHERE, right[0], left[0]), wins.alu(Ops.WHERE, right[1], left[1]),
                            [wins.alu(Ops.WHERE, r, l) for l, r in zip(left[2], right[2])]))
            if len(players) % 2: nxt.append(players[-1])
            players = nxt
        winner, _, pivot_row = players[0]
        # the pivot row's old place takes row c
        for i in range(c + 1, n):
            here = winner.alu(Ops.CMPEQ, UOp.const_like(dtypes.int64, i, batch))
            rows[i] = rows[i][:c] + [here.alu(Ops.WHERE, x, y) for x, y in zip(rows[c][c:], rows[i][c:])]
        odd = odd.alu(Ops.XOR, winner.alu(Ops.CMPNE, UOp.const_like(dtypes.int64, c, batch)))
        scale, r = _reciprocal(pivot_row[0])
        for i in range(c + 1, n):
            factor = rows[i][c] * scale * r
            rows[i] = rows[i][:c + 1] + [x - factor * p for x, p in zip(rows[i][c + 1:], pivot_row[1:])]
        done.append(pivot_row)
        reciprocals.append((scale, r))
    return done, [r[0] for r in done], odd, reciprocals


def _small_solve(a: UOp, b: UOp) -> tuple[UOp, UOp]:
    """x with a x = b for small a (..., n, n) and b (..., n, k) of one batch shape, float64 (see _small_lu), and
    where a is singular (an exactly zero pivot, LAPACK's info > 0)."""
    n, k = _shape(a)[-1], _shape(b)[-1]
    batch = _shape(a)[:-2]
    rows, pivots, _, reciprocals = _small_lu(a, b)
    x: list[list[UOp]] = [[] for _ in range(n)]
    for i in range(n - 1, -1, -1):   # back substitution: row i holds U[i, i:] then (L^-1 P b)[i]
        u = rows[i]
        scale, r = reciprocals[i]
        for j in range(k):
            s = u[n - i + j]
            for m in range(i + 1, n): s = s - u[m - i] * x[m][j]
            x[i].append(s * scale * r)
    zero = UOp.const_like(F64, 0.0, batch)
    singular = pivots[0].alu(Ops.CMPEQ, zero)
    for p in pivots[1:]: singular = singular.alu(Ops.OR, p.alu(Ops.CMPEQ, zero))
    # one kernel computes both: x and the flag stored side by side (a column after x's), then read apart; the
    # check reading the flag on its own would make the scheduler store the elimination's values for both
    flag = singular.cast(F64)
    nb = len(batch)
    both = UOp(Ops.CONTIGUOUS, F64, (_stack([_stack(xi + [flag], nb) for xi in x], nb),))
    x_view = both.shrink(tuple((0, s) for s in batch) + ((0, n), (0, k)))
    flag_view = _entry(both, 0, k).alu(Ops.CMPNE, zero)
    return x_view, flag_view


# ---------------------------------------------------------------------------------------------------------------
# solving and inverting

def _gesv(a: Tensor, b_cm: Tensor, batch: tuple[int, ...], n: int, k: int) -> Tensor:
    """X (column-major: its buffer (..., k, n)) with a X = B, a (..., n, n) float64, B given column-major."""
    if _empty(batch, n, k): return _zeros(batch + (k, n))
    a_cm = _cm(a.broadcast_to(batch + (n, n)))
    i = _int()
    _, x, _, info = _lapack("gesv", batch, (n, k), [a_cm, b_cm], [((n, n), F64, 0, False), ((k, n), F64, 1, False),
                                                                  ((n,), i, -1, False), ((), i, -1, False)])
    _check(info, "Singular matrix")
    return x


def _solve(a: Tensor, b: Tensor, batch: tuple[int, ...], n: int, k: int) -> Tensor:
    """X (..., n, k) with a X = b, a (..., n, n) and b (..., n, k) float64 broadcasting to `batch`; LinAlgError
    after the call where a matrix is singular. Small matrices are solved by generated code, others by LAPACK."""
    if _small(n, k, batch) and not _empty(batch, n, k):
        x, singular = _small_solve(a.broadcast_to(batch + (n, n)).uop, b.broadcast_to(batch + (n, k)).uop)
        add_check(Tensor(singular), 0, lambda _: LinAlgError("Singular matrix"))
        return Tensor(x)
    return _cm(_gesv(a, _cm(b.broadcast_to(batch + (n, k))), batch, n, k))


def solve(a, b) -> Tensor:
    """x with a @ x = b. b is a stack of vectors only when it is 1-D (NumPy 2), else a stack of matrices."""
    (a, b), rt = _float_operands(a, b)
    _stacked_square(a)
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
    (a,), rt = _float_operands(a)
    _stacked_square(a)
    n, batch = a.shape[-1], a.shape[:-2]
    return _solve(a, _eye(n, batch), batch, n, n).astype(rt)


def _inv_or_nan(a: Tensor) -> Tensor:
    """inv(a) with NaN matrices where a is singular (NumPy's inv under errstate(all='ignore'), which cond uses)."""
    n, batch = a.shape[-1], a.shape[:-2]
    if _empty(batch, n): return _zeros(a.shape)
    if _small(n, n, batch):
        inverse, singular = _small_solve(a.uop, _eye(n, batch).uop)
        return U.where(Tensor(singular).reshape(batch + (1, 1)), np.nan, Tensor(inverse))
    i = _int()
    _, x, _, info = _lapack("gesv", batch, (n, n), [_cm(a), _eye(n, batch)],
                            [((n, n), F64, 0, False), ((n, n), F64, 1, False), ((n,), i, -1, False),
                             ((), i, -1, False)])
    return U.where((info > 0).reshape(batch + (1, 1)), np.nan, _cm(x))


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

def _slogdet64(a: Tensor) -> tuple[Tensor, Tensor]:
    n, batch = a.shape[-1], a.shape[:-2]
    if _empty(batch, n): return _full(batch, 1.0), _zeros(batch)
    if _small(n, 0, batch):   # generated elimination (see _small_lu): U's diagonal and the interchanges' parity
        _, pivots, odd, _ = _small_lu(a.uop, None)
        both = Tensor(UOp(Ops.CONTIGUOUS, F64, (_stack(pivots + [odd.cast(F64)], len(batch)),)))   # one kernel
        d, swaps = both[..., :n], both[..., n].astype(np.int64)
        singular = (d == 0).any(axis=-1)
    else:
        i = _int()
        lu, ipiv, info = _lapack("getrf", batch, (n,), [_cm(a)],
                                 [((n, n), F64, 0, False), ((n,), i, -1, False), ((), i, -1, False)])
        d = _diag(lu)
        swaps = (ipiv != arange(1, n + 1)).sum(axis=-1)
        singular = info > 0   # an exactly zero pivot: NumPy's sign 0 and log|det| -inf
    negative = (d < 0).sum(axis=-1)
    sign = U.where((swaps + negative) % 2 == 1, -1.0, 1.0)
    return U.where(singular, 0.0, sign), U.where(singular, -np.inf, U.log(abs(d)).sum(axis=-1))


def slogdet(a) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant, from an LU factorization (LAPACK getrf)."""
    (a,), rt = _float_operands(a)
    _stacked_square(a)
    sign, logdet = _slogdet64(a)
    return SlogdetResult(sign.astype(rt), logdet.astype(rt))


def det(a) -> Tensor:
    """The determinant: sign * exp(log|det|) from the LU factorization, as NumPy computes it."""
    (a,), rt = _float_operands(a)
    _stacked_square(a)
    sign, logdet = _slogdet64(a)
    return (sign * U.exp(logdet)).astype(rt)


# ---------------------------------------------------------------------------------------------------------------
# decompositions

def cholesky(a, /, *, upper: bool = False) -> Tensor:
    """The lower (or with upper=True, upper) Cholesky factor, from the lower (upper) triangle of a."""
    (a,), rt = _float_operands(a)
    _stacked_square(a)
    if upper: return _cm(cholesky(_cm(a))).astype(rt)
    n, batch = a.shape[-1], a.shape[:-2]
    if _empty(batch, n): return _zeros(a.shape, rt)
    # LAPACK sees a's buffer as a.T: the upper triangle of a.T is a's lower one, and the factor U = L.T it writes
    # there, column-major, is L in the buffer's lower triangle (no transposing copy either way)
    c, info = _lapack("potrf", batch, (n, "U"), [a], [((n, n), F64, 0, False), ((), _int(), -1, False)])
    _check(info, "Matrix is not positive definite")
    return _tril(c).astype(rt)


def _syevd(a: Tensor, uplo: str, vectors: bool) -> tuple[Tensor, Tensor]:
    uplo = uplo.upper() if isinstance(uplo, str) else uplo
    if uplo not in ("L", "U"): raise ValueError("UPLO argument must be 'L' or 'U'")
    n, batch = a.shape[-1], a.shape[:-2]
    if _empty(batch, n): return _zeros(batch + (n,)), _zeros(batch + (n, n))
    jobz = "V" if vectors else "N"
    i = _int()
    lwork, liwork = workspace("syevd", F64, [jobz, "L", n, None, max(1, n), None, "work", -1, "iwork", -1, "int"])
    i = _int()
    # LAPACK reads the lower triangle of the column-major matrix it is given: a's lower triangle is the lower
    # triangle of a.T's buffer (for UPLO='U', a's own buffer)
    v, w, _, _, info = _lapack("syevd", batch, (n, jobz, lwork, liwork), [_cm(a) if uplo == "L" else a],
                               [((n, n), F64, 0, False), ((n,), F64, -1, False), ((lwork,), F64, -1, True),
                                ((liwork,), i, -1, True), ((), i, -1, False)])
    _check(info, "Eigenvalues did not converge")
    return w, _cm(v)


def eigh(a, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, from its lower (UPLO='L') or upper
    triangle (LAPACK syevd, as NumPy)."""
    (a,), rt = _float_operands(a)
    _stacked_square(a)
    w, v = _syevd(a, UPLO, True)
    return EighResult._make((w.astype(rt), v.astype(rt)))


def eigvalsh(a, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of a symmetric matrix."""
    (a,), rt = _float_operands(a)
    _stacked_square(a)
    return _syevd(a, UPLO, False)[0].astype(rt)


def _gesdd(a: Tensor, full_matrices: bool, compute_uv: bool):
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    if _empty(batch, k):
        u = _eye(m, batch) if full_matrices else _zeros(batch + (m, k))
        vt = _eye(n, batch) if full_matrices else _zeros(batch + (k, n))
        return u, _zeros(batch + (k,)), vt
    jobz = "N" if not compute_uv else "A" if full_matrices else "S"
    ucols, vtrows = (m, n) if jobz == "A" else (k, k)
    ldu, ldvt = (max(1, m), max(1, vtrows)) if compute_uv else (1, 1)
    i = _int()
    lwork, _ = workspace("gesdd", F64, [jobz, m, n, None, max(1, m), None, None, ldu, None, ldvt, "work", -1, "iwork",
                                        "int"])
    i = _int()
    u_res = ((ucols, m), F64, -1, False) if compute_uv else ((1,), F64, -1, True)
    vt_res = ((n, vtrows), F64, -1, False) if compute_uv else ((1,), F64, -1, True)
    _, s, u, vt, _, _, info = _lapack("gesdd", batch, (m, n, jobz, ldu, ldvt, lwork), [_cm(a)],
                                      [((n, m), F64, 0, False), ((k,), F64, -1, False), u_res, vt_res,
                                       ((lwork,), F64, -1, True), ((8 * k,), i, -1, True), ((), i, -1, False)])
    _check(info, "SVD did not converge")
    return (_cm(u) if compute_uv else None), s, (_cm(vt) if compute_uv else None)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """The singular value decomposition a = u @ diag(s) @ vh (LAPACK gesdd, as NumPy), or the singular values."""
    (a,), rt = _float_operands(a)
    _stacked_2d(a)
    if hermitian and compute_uv:
        raise unsupported("numpy.linalg.svd with hermitian=True and compute_uv=True",
                          "NumPy orders an eigendecomposition's vectors by sorting; use hermitian=False")
    u, s, vt = _gesdd(a, full_matrices, compute_uv)
    if not compute_uv: return s.astype(rt)
    return SVDResult(u.astype(rt), s.astype(rt), vt.astype(rt))


def svdvals(x, /) -> Tensor:
    """The singular values of x, descending."""
    return svd(x, compute_uv=False)


def qr(a, mode: str = "reduced"):
    """The QR decomposition (LAPACK geqrf, then orgqr for Q), in NumPy's modes: 'reduced', 'complete', 'r', 'raw'."""
    if mode not in ("reduced", "complete", "r", "raw"): raise ValueError(f"Unrecognized mode '{mode}'")
    (a,), rt = _float_operands(a)
    _stacked_2d(a)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    if _empty(batch, k):
        if mode == "raw": return _zeros(batch + (n, m), rt), _zeros(batch + (k,), rt)
        r = _zeros(batch + ((k if mode in ("reduced", "r") else m), n), rt)
        if mode == "r": return r
        q = _zeros(batch + (m, k), rt) if mode == "reduced" else _eye(m, batch, rt)
        return QRResult._make((q, r))
    i = _int()
    lwork, _ = workspace("geqrf", F64, [m, n, None, max(1, m), None, "work", -1, "int"])
    h, tau, _, info = _lapack("geqrf", batch, (m, n, lwork), [_cm(a)],
                              [((n, m), F64, 0, False), ((k,), F64, -1, False), ((lwork,), F64, -1, True),
                               ((), i, -1, False)])
    _check(info, "Incorrect argument found while performing QR factorization")
    if mode == "raw": return h.astype(rt), tau.astype(rt)
    full = _cm(h)   # (m, n): R in its upper triangle, the reflectors below
    rows = k if mode in ("reduced", "r") else m
    r = _triu(full[..., :rows, :] if rows <= m else full)
    if mode == "r": return r.astype(rt)
    q_cols = k if mode == "reduced" else m
    reflectors = h[..., :q_cols, :] if n >= q_cols else \
        Tensor(h.uop.pad(((0, 0),) * len(batch) + ((0, q_cols - n), (0, 0))))
    lwork2, _ = workspace("orgqr", F64, [m, q_cols, k, None, max(1, m), None, "work", -1, "int"])
    q, _, info2 = _lapack("orgqr", batch, (m, q_cols, k, lwork2), [reflectors, tau],
                          [((q_cols, m), F64, 0, False), ((lwork2,), F64, -1, True), ((), i, -1, False)])
    _check(info2, "Incorrect argument found while performing QR factorization")
    if mode == "complete" and m > n:   # R has m rows: those below n are zero
        r = Tensor(r.uop.pad(((0, 0),) * len(batch) + ((0, m - r.shape[-2]), (0, 0)))) if r.shape[-2] < m else r
    return QRResult._make((_cm(q).astype(rt), r.astype(rt)))


# ---------------------------------------------------------------------------------------------------------------
# least squares, pseudo-inverse, rank

def lstsq(a, b, rcond=None):
    """The least-squares solution of a @ x = b (LAPACK gelsd, as NumPy): (x, residuals, rank, singular values).
    Residuals have NumPy's data-dependent shape: (nrhs,) where m > n and a has full rank, else (0,); numfn
    computes the first and raises when a turns out rank-deficient (m > n)."""
    (a, b), rt = _float_operands(a, b)
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
    if k == 0:   # nothing to factor: x = 0, rank 0, no singular values
        x = _zeros((n, nrhs), rt)
        out = (x[:, 0] if vector else x), _zeros((0,), rt), Tensor(UOp.const(dtypes.int32, 0)), _zeros((0,), rt)
        return out
    cols = max(nrhs, 1)   # LAPACK needs a right-hand side: NumPy adds one where there is none
    bb = b if nrhs else _zeros((m, 1))
    b_cm = _cm(Tensor(bb.uop.pad(((0, mx - m), (0, 0))))) if mx > m else _cm(bb)
    i = _int()
    lwork, liwork = workspace("gelsd", F64, [m, n, cols, None, max(1, m), None, max(1, mx), None, rcond, "int", "work",
                                             -1, "iwork", "int"])
    _, x, s, rank, _, _, info = _lapack(
        "gelsd", (), (m, n, cols, rcond, lwork, liwork), [_cm(a), b_cm],
        [((n, m), F64, 0, False), ((cols, mx), F64, 1, False), ((k,), F64, -1, False), ((), i, -1, False),
         ((lwork,), F64, -1, True), ((liwork,), i, -1, True), ((), i, -1, False)])
    _check(info, "SVD did not converge in Linear Least Squares")
    full = _cm(x)[:, :nrhs]   # (mx, nrhs)
    sol = full[:n]
    if m > n:
        residuals = (full[n:] * full[n:]).sum(axis=0).astype(rt)
        add_check(rank != n, rank, lambda r: unsupported(
            f"numpy.linalg.lstsq of a rank-deficient matrix (rank {r} < {n} columns)",
            "NumPy returns an empty residuals array then, an array whose shape depends on the values"))
    else:
        residuals = _zeros((0,), rt)
    return (sol[:, 0] if vector else sol).astype(rt), residuals, rank.astype(np.int32), s.astype(rt)


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=None):
    """The Moore-Penrose pseudo-inverse, from the SVD with small singular values (below rcond times the largest)
    discarded, as NumPy computes it."""
    given = Tensor.lift(a).uop.dtype
    (a,), rt = _float_operands(a)
    _stacked_2d(a)
    if rcond is not None and rtol is not None: raise ValueError("`rtol` and `rcond` can't be both set.")
    if rcond is None: rcond = 1e-15 if rtol is None else rtol
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    if _empty(batch, m, n): return _zeros(batch + (n, m), given)   # NumPy: an empty array of a's own dtype
    u, s, vt = _gesdd(a, False, True)
    cutoff = Tensor.lift(rcond).astype(F64)[..., None] * s.max(axis=-1, keepdims=True)
    large = s > cutoff
    sinv = U.where(large, 1.0 / U.where(large, s, 1.0), 0.0)
    return _matmul(_cm(vt), sinv[..., None] * _cm(u)).astype(rt)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):  # noqa: N803 - NumPy's name
    """The number of singular values above the tolerance (default: the largest times max(m, n) times eps)."""
    if rtol is not None and tol is not None: raise ValueError("`tol` and `rtol` can't be both set.")
    A = Tensor(Tensor.lift(A).uop)
    if A.ndim < 2: return (A != 0).max().astype(np.int64) if A.size else Tensor(UOp.const(dtypes.int64, 0))
    s = svd(A, compute_uv=False)
    if tol is None:
        if rtol is None: rtol = max(A.shape[-2:]) * np.finfo(s.dtype).eps
        else: rtol = Tensor.lift(rtol)[..., None]
        largest = s.max(axis=-1, keepdims=True) if s.shape[-1] else _zeros(s.shape[:-1] + (1,), s.uop.dtype)
        tol = largest * rtol
    else:
        tol = Tensor.lift(tol)[..., None]
    return (s > tol).sum(axis=-1).astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------
# norms and condition numbers

def _vector_norm(x: Tensor, ord, axis: tuple[int, ...], keepdims: bool) -> Tensor:
    if ord is None or ord == 2: return U.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
    if isinstance(ord, str): raise ValueError(f"Invalid norm order '{ord}' for vectors")
    a = abs(x)
    if ord == np.inf: return a.max(axis=axis, keepdims=keepdims)
    if ord == -np.inf: return a.min(axis=axis, keepdims=keepdims)
    if ord == 0: return (x != 0).astype(x.dtype).sum(axis=axis, keepdims=keepdims)
    if ord == 1: return a.sum(axis=axis, keepdims=keepdims)
    p = float(ord)
    return U.power(U.power(a, p).sum(axis=axis, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x: Tensor, ord, row: int, col: int, keepdims: bool) -> Tensor:
    if ord in (2, -2, "nuc"):
        rest = [i for i in range(x.ndim) if i not in (row, col)]
        s = svd(x.transpose(rest + [row, col]), compute_uv=False)
        r = s.max(axis=-1) if ord == 2 else s.min(axis=-1) if ord == -2 else s.sum(axis=-1)
    elif ord in (None, "fro", "f"):
        r = U.sqrt((x * x).sum(axis=(row, col)))
    elif ord in (1, -1, np.inf, -np.inf):
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = abs(x).sum(axis=inner)
        outer_after = outer - 1 if outer > inner else outer
        r = sums.max(axis=outer_after) if ord in (1, np.inf) else sums.min(axis=outer_after)
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
    if not x.uop.dtype.is_float: x = x.astype(F64)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            r = U.sqrt((x * x).sum())
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


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Tensor:
    """The matrix norm over the last two axes (array API)."""
    x = Tensor.lift(x)
    _stacked_2d(x)
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
    _stacked_2d(x)
    if x.shape[-1] == 0 or x.shape[-2] == 0: raise LinAlgError("cond is not defined on empty arrays")
    (x64,), rt = _float_operands(x)
    if p is None or p in (2, -2):
        s = svd(x64, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        _stacked_square(x64)
        r = norm(x64, p, axis=(-2, -1)) * norm(_inv_or_nan(x64), p, axis=(-2, -1))
    has_nan = U.isnan(x64).max(axis=(-2, -1))
    return U.where(U.isnan(r) & ~has_nan, np.inf, r).astype(rt)


# ---------------------------------------------------------------------------------------------------------------
# products and the rest

def matmul(x1, x2, /) -> Tensor:
    """The matrix product (np.linalg.matmul: np.matmul)."""
    return _matmul(x1, x2)


def matrix_power(a, n) -> Tensor:
    """a raised to the integer power n by repeated squaring (n < 0: of the inverse), as NumPy does."""
    a = Tensor(Tensor.lift(a).uop)
    _stacked_square(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0: return _eye(a.shape[-1], a.shape[:-2], a.uop.dtype)
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
    _stacked_2d(x)
    n, m = x.shape[-2:]
    rows = range(max(0, -offset), min(n, m - offset)) if -n < offset < m else range(0)
    count = len(rows)
    if count == 0: return _zeros(x.shape[:-2] + (0,), x.uop.dtype)
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

