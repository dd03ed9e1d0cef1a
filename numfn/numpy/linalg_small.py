"""Stacks of small matrices: LU with partial pivoting written out as generated code, for numfn.numpy.linalg.

Interface: `small(n, k, batch)` says whether a stack of n x n systems with k right-hand sides takes this path
(`small_batch(n)`: the fewest matrices it takes);
`small_lu` factors (the rows of U, its diagonal, the interchanges' parity), `small_solve` solves (and says where a
matrix is singular); `stack_values` stacks values of one shape along a new axis the code generator unrolls. Every
value is float64 (complex systems go to LAPACK).
"""
from __future__ import annotations

import math

import numpy as np

from numfn.dtype import dtypes
from numfn.ir.uop import Ops, UOp

__all__ = ["SMALL_N", "SMALL_RHS", "SMALL_BATCH", "SMALL_BATCH_PER_N3", "SMALL_ALWAYS_N", "small", "small_batch",
           "small_lu", "small_solve", "stack_values"]

F64 = dtypes.float64

# A stack of small matrices (10^4 8x8 systems) would be one LAPACK call per matrix, about a microsecond each however
# little work a matrix is. Up to SMALL_N, numfn writes the factorization out instead: every entry of the matrix is a
# value of the batch's shape, and Gaussian elimination with partial pivoting on [A | B] is an unrolled sequence of
# elementwise operations on them, so the whole solve is one fused kernel looping over the batch (which LLVM
# vectorizes across matrices, and numfn threads). Pivots are LAPACK's (getrf's idamax): the first row of largest
# |a| at or below the diagonal, found by a tournament (ties go to the lower row, so the result is the same as
# a scan's, at logarithmic depth), whose winner carries its row along; the row it replaces moves to the winner's
# place. An exactly zero pivot is getrf's info > 0 (singular). The results are stacked along their own axes
# (`stack_values`), loops the code generator unrolls, so each is computed once per matrix.

SMALL_N = 8           # square matrices up to this size are factored by generated code ...
SMALL_RHS = 16        # ... with up to this many right-hand sides (inv: n of them) ...
SMALL_BATCH = 16      # ... in stacks of at least this many, and at least SMALL_BATCH_PER_N3 * n**3 ...
SMALL_BATCH_PER_N3 = 5
SMALL_ALWAYS_N = 3    # ... except matrices up to this size, which compile as fast as the call (so a 3x3 solve under
                      # vmap, traced as one matrix, is generated code too)

# Why the stack must grow like n^3 (measured on a 2-core x86-64 machine, float64, LLVM, one thread; solve with one
# right-hand side, inv and det of stacks of 16384): the unrolled elimination is about n^3 / 3 operations, and
# compiling it costs about 8 ms * n^3 more than the LAPACK loop's program (n = 3: 0.1-0.25 s; 4: 0.1-1.7 s; 5: 1.3-2.5
# s; 6: 1.7-2.9 s; 7: 1.6-3.7 s; 8: 4 s), while a call saves about 1.5 us per matrix (LAPACK 0.6-4.7 us a matrix,
# generated code 0.02-0.8 us; n = 8 solve: 2.5 vs 0.5 us, inv: 4.9 vs 1.5 us). One call of a stack of 16 8x8 systems
# thus saves about 30 us for 4 s of compiling. The generated code is chosen where it pays back its extra compile time
# within about a thousand calls (the disk cache keeps a compiled program across processes): stacks of at least
# 8e-3 n^3 / (1.5e-6 * 1000) ~ 5 n^3 matrices (4x4: 320, 6x6: 1080, 8x8: 2560; 10^4 8x8 systems still are).


def small_batch(n: int) -> int:
    """The fewest n x n matrices in a stack that the generated elimination factors (1: any stack).

    Args:
        n: the matrices' size (at most SMALL_N takes this path at all).

    Returns:
        1 up to SMALL_ALWAYS_N, else the larger of SMALL_BATCH and SMALL_BATCH_PER_N3 * n**3.

    Example:
        from numfn.numpy.linalg_small import small_batch
        assert small_batch(3) == 1 and small_batch(8) == 2560
    """
    return 1 if n <= SMALL_ALWAYS_N else max(SMALL_BATCH, SMALL_BATCH_PER_N3 * n ** 3)


def small(n: int, k: int, batch: tuple[int, ...]) -> bool:
    return 1 <= n <= SMALL_N and k <= SMALL_RHS and math.prod(batch) >= small_batch(n)


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


def stack_values(values: list[UOp], axis: int) -> UOp:
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


def small_lu(a: UOp, b: UOp | None) -> tuple[list[list[UOp]], list[UOp], UOp, list[tuple[UOp, UOp]]]:
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


def small_solve(a: UOp, b: UOp) -> tuple[UOp, UOp]:
    """x with a x = b for small a (..., n, n) and b (..., n, k) of one batch shape, float64 (see small_lu), and
    where a is singular (an exactly zero pivot, LAPACK's info > 0)."""
    n, k = _shape(a)[-1], _shape(b)[-1]
    batch = _shape(a)[:-2]
    rows, pivots, _, reciprocals = small_lu(a, b)
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
    both = UOp(Ops.CONTIGUOUS, F64, (stack_values([stack_values(xi + [flag], nb) for xi in x], nb),))
    x_view = both.shrink(tuple((0, s) for s in batch) + ((0, n), (0, k)))
    flag_view = _entry(both, 0, k).alu(Ops.CMPNE, zero)
    return x_view, flag_view
