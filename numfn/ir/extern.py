"""Extern calls as the IR carries them: what an EXTERN node's argument says, and the routines it can name.

An extern call calls a native routine numfn does not generate (BLAS and LAPACK, numfn's own sorts). At the tensor
level it is one EXTERN node whose value is the tuple of the routine's results, and one RESULT node per result that
a graph uses (`RESULT(extern, i)` is result i). The EXTERN's argument, an `ExternCall`, says everything the call
needs: the routine, the dtype, the batch shape (the routine runs once per batch element: stacked inputs, vmap), its
integer parameters, and its results: shapes, dtypes, which input a result starts from (LAPACK overwrites its
inputs: such an "in-out" result is first filled with that input's value), and which results are scratch shared by
the whole batch (LAPACK's workspaces, planned like any other intermediate buffer).

`ROUTINES` describes each routine (a `Routine`): its library symbols, which operand strides it accepts, its operation
count, and the argument list of each of its calls, made of the argument kinds the renderers print (`Ptr`, `Int`,
`Char`, `Real`, grouped in a `Call`). Everything here is data about the IR and imports only numfn.dtype, so the
renderers (which print the calls), the scheduler (numfn/schedule/externs.py: an extern call as a step of a schedule)
and the tracer's constructors (numfn/extern.py) all import it from below.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable

from numfn.dtype import DType, dtypes


@dataclass(frozen=True)
class ExternCall:
    """What an EXTERN node computes: `routine` (a key of ROUTINES) in `dtype`, once per element of `batch`, with
    `params` (the routine's integers, characters and constants). `results`: (shape, dtype) per result, shapes
    including the batch axes except for `shared` results (scratch all batch elements reuse); `inout[i]`: the input
    whose value result i starts from, or -1. `library`: the identity of the library called (its version decides
    LAPACK's workspace sizes; the build of numfn's native extension for its own routines: part of the cache key
    through the graph); `int_bits`: its integer width."""
    routine: str
    dtype: DType
    batch: tuple[int, ...]
    params: tuple
    results: tuple[tuple[tuple[int, ...], DType], ...]
    inout: tuple[int, ...]
    shared: tuple[bool, ...]
    library: str
    int_bits: int

    @property
    def batch_size(self) -> int:
        return math.prod(self.batch)

    def batched(self, size: int) -> ExternCall:
        """This call with a leading batch axis of `size` (vmap's batching rule). A routine over rows (`Routine.rows`)
        takes the batch as more rows: one call, every result one axis longer."""
        results = tuple((shape if shared else (size,) + shape, dt)
                        for (shape, dt), shared in zip(self.results, self.shared))
        batch = self.batch if ROUTINES[self.routine].rows else (size,) + self.batch
        return ExternCall(self.routine, self.dtype, batch, self.params, results, self.inout, self.shared,
                          self.library, self.int_bits)

    @property
    def int_dtype(self) -> DType:
        return dtypes.int64 if self.int_bits == 64 else dtypes.int32

    def __repr__(self) -> str:
        batch = f" batch={self.batch}" if self.batch else ""
        return f"{self.routine}[{self.dtype.name}]{batch} params={self.params}"


# ---------------------------------------------------------------------------------------------------------------
# strides and matrix layouts

def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def matrix_layout(rows: int, cols: int, row_stride: int, col_stride: int, int_max: int) -> tuple[str, int] | None:
    """How BLAS reads a matrix stored with these strides as the transpose of a column-major matrix: ('N', ld) when
    its rows are contiguous (row-major: the column-major matrix is its transpose), ('T', ld) when its columns are
    (column-major: BLAS transposes it back); None when neither (or a leading dimension BLAS refuses)."""
    if cols == 1: col_stride = 1
    if rows == 1: row_stride = max(cols, 1)
    if col_stride == 1 and max(cols, 1) <= row_stride <= int_max: return "N", row_stride
    if row_stride == 1 and max(rows, 1) <= col_stride <= int_max: return "T", col_stride
    return None


def _layout(rows: int, cols: int, row_stride: int, col_stride: int, int_max: int) -> tuple[str, int]:
    """matrix_layout of an operand the routine accepted (so it has one)."""
    layout = matrix_layout(rows, cols, row_stride, col_stride, int_max)
    assert layout is not None
    return layout


# ---------------------------------------------------------------------------------------------------------------
# routines: their symbols and arguments

@dataclass(frozen=True)
class Operand:
    """A buffer as a routine sees it: program parameter `param`, offset and strides (elements) over its shape."""
    param: int
    offset: int
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Ptr:
    """A pointer argument: parameter `param` at `offset` + the batch index's components times `batch_strides`."""
    param: int
    offset: int
    batch_strides: tuple[int, ...]


@dataclass(frozen=True)
class Int:
    """An integer argument of the library's width, passed by reference (Fortran)."""
    value: int


@dataclass(frozen=True)
class Char:
    """A one-character argument, by reference; its hidden length (1) follows the other arguments."""
    value: str


@dataclass(frozen=True)
class Real:
    """A floating-point argument of the call's dtype, by reference."""
    value: float


@dataclass(frozen=True)
class Call:
    """One call of `symbol` (an index into the program's externs table) with `args`."""
    symbol: int
    args: tuple


@dataclass(frozen=True)
class Routine:
    """An extern routine: the library functions it calls (`names(call)`: Fortran names for BLAS/LAPACK, symbols of
    numfn's native extension for `library` "native"), whether input j may be passed with given core strides
    (`accepts`), the argument lists (`calls`) and its operation count (`flops`). `rows`: the routine works on any
    number of independent rows (the leading core axes of its operands and results), so vmap's batch is more rows
    of one call rather than a loop of calls."""
    names: Callable[[ExternCall], tuple[str, ...]]
    calls: Callable
    flops: Callable[[ExternCall], int]
    accepts: Callable = lambda call, j, shape, strides: strides == contiguous_strides(shape)
    library: str = "blas"
    rows: bool = False


def _prefix(call: ExternCall) -> str:
    return {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[call.dtype.name]


def _element_strides(call: ExternCall, shape, strides) -> tuple[int, ...] | None:
    """An operand's strides in elements of the call's dtype. A complex operand reaches the routine as its memory
    (codegen/complex.py: a real array with a trailing axis of the two parts), whose strides count real lanes: its
    complex strides are half of them, where the parts are adjacent and every element starts at an even lane."""
    if not call.dtype.is_complex: return tuple(strides)
    if shape[-1] != 2 or strides[-1] != 1 or any(s % 2 for s in strides[:-1]): return None
    return tuple(s // 2 for s in strides[:-1])


def _ptr(op: Operand, nbatch: int, shared: bool = False) -> Ptr:
    return Ptr(op.param, op.offset, (0,) * nbatch if shared else op.strides[:nbatch])


def _product_strides(call: ExternCall, a: Operand, b: Operand) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The core strides, in elements of the call's dtype, of a product's operands a (m, k) and b (k, n) (params
    m, n, k), which the routine's `accepts` took."""
    m, n, k = call.params
    nb = len(call.batch)
    sa = _element_strides(call, (m, k, 2), a.strides[nb:]) if call.dtype.is_complex else a.strides[nb:]
    sb = _element_strides(call, (k, n, 2), b.strides[nb:]) if call.dtype.is_complex else b.strides[nb:]
    assert sa is not None and sb is not None
    return tuple(sa), tuple(sb)


def _gemm_accepts(call: ExternCall, j: int, shape, strides) -> bool:
    m, n, k = call.params
    rows, cols = (m, k) if j == 0 else (k, n)
    strides = _element_strides(call, shape, strides)
    return strides is not None and matrix_layout(rows, cols, strides[0], strides[1],
                                                 2 ** (call.int_bits - 1) - 1) is not None


def _gemm_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    # row-major C = A B is column-major C^T = B^T A^T: B is the first operand, A the second
    m, n, k = call.params
    nb, imax = len(call.batch), 2 ** (call.int_bits - 1) - 1
    a, b = ins
    sa, sb = _product_strides(call, a, b)
    ta, lda = _layout(m, k, sa[0], sa[1], imax)
    tb, ldb = _layout(k, n, sb[0], sb[1], imax)
    return [Call(0, (Char(tb), Char(ta), Int(n), Int(m), Int(k), Real(1.0), _ptr(b, nb), Int(ldb), _ptr(a, nb),
                     Int(lda), Real(0.0), _ptr(outs[0], nb), Int(max(1, n))))]


def _gemv_accepts(call: ExternCall, j: int, shape, strides) -> bool:
    # a GEMM of one row or one column (params as GEMM's: a (m, k), b (k, n), m or n 1): the matrix operand as GEMM
    # takes it, the vector with a positive stride BLAS can step by
    m, n, k = call.params
    strides = _element_strides(call, shape, strides)
    if strides is None: return False
    imax = 2 ** (call.int_bits - 1) - 1
    if (j == 0) == (n == 1):   # the matrix
        rows, cols = (m, k) if j == 0 else (k, n)
        return matrix_layout(rows, cols, strides[0], strides[1], imax) is not None
    step = strides[0] if j == 1 else strides[1]
    return k == 1 or 1 <= step <= imax


def _gemv_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    # A @ x (n == 1) is y = A x; x @ B (m == 1) is y = B^T x. A row-major matrix is, to BLAS, the column-major
    # transpose ('N' layout): multiplying by it untransposed takes trans 'T', and the other way round
    m, n, k = call.params
    nb, imax = len(call.batch), 2 ** (call.int_bits - 1) - 1
    a, b = ins
    sa, sb = _product_strides(call, a, b)
    if n == 1:
        layout, ld = _layout(m, k, sa[0], sa[1], imax)
        trans, rows, cols = ("T", k, m) if layout == "N" else ("N", m, k)
        matrix, vector, step = a, b, sb[0]
    else:
        layout, ld = _layout(k, n, sb[0], sb[1], imax)
        trans, rows, cols = ("N", n, k) if layout == "N" else ("T", k, n)
        matrix, vector, step = b, a, sa[1]
    return [Call(0, (Char(trans), Int(rows), Int(cols), Real(1.0), _ptr(matrix, nb), Int(ld), _ptr(vector, nb),
                     Int(step if k > 1 else 1), Real(0.0), _ptr(outs[0], nb), Int(1)))]


def _syrk_accepts(call: ExternCall, j: int, shape, strides) -> bool:
    rows, cols = shape
    return matrix_layout(rows, cols, strides[0], strides[1], 2 ** (call.int_bits - 1) - 1) is not None


def _syrk_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    # row-major C = X X^T; BLAS sees X^T (row-major X) or X (column-major X) and writes the lower triangle of
    # column-major C, which is the upper triangle of the row-major result
    n, k = call.params
    nb, imax = len(call.batch), 2 ** (call.int_bits - 1) - 1
    (x,) = ins
    layout, ld = _layout(n, k, x.strides[nb], x.strides[nb + 1], imax)
    return [Call(0, (Char("L"), Char("T" if layout == "N" else "N"), Int(n), Int(k), Real(1.0), _ptr(x, nb), Int(ld),
                     Real(0.0), _ptr(outs[0], nb), Int(max(1, n))))]


def _lapack(name: str, args: Callable) -> Routine:
    """A LAPACK routine on column-major matrices: its buffers hold the transposes, row-major (see numfn.numpy.linalg).
    `args(call, P)` lists the arguments, P(i) being the pointer to result i (or input -1-i)."""
    def calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
        nb = len(call.batch)

        def P(i: int) -> Ptr:
            return _ptr(ins[-1 - i], nb) if i < 0 else _ptr(outs[i], nb, call.shared[i])
        return [Call(0, tuple(args(call, P)))]
    return Routine(lambda call: (_prefix(call) + name,), calls, lambda call: call.batch_size * _cube(call))


def _cube(call: ExternCall) -> int:
    dims = [p for p in call.params if isinstance(p, int) and not isinstance(p, bool)]
    return max(1, max(dims[:2], default=1)) ** 3


def _one(n: int) -> int:
    return max(1, n)


# numfn's own routines (numfn/runtime/csrc) are named NATIVE_PREFIX* (no BLAS/LAPACK symbol is): the externs table
# takes their addresses from numfn's native extension (numfn/extern.py)
NATIVE_PREFIX = "numfn_"

# numfn's sorts (numfn/runtime/csrc/sort.c), params (n, scratch per row): rows of n elements, any number of leading
# axes of rows. sort: results data (..., n) <- input 0, scratch; argsort: input keys, results index, scratch.
# select (below): np.partition of such rows around given positions.
_SORT_SUFFIX = {dtypes.bool: "u8", dtypes.uint8: "u8", dtypes.int8: "i8", dtypes.uint16: "u16", dtypes.int16: "i16",
                dtypes.float16: "f16", dtypes.uint32: "u32", dtypes.int32: "i32", dtypes.float32: "f32",
                dtypes.uint64: "u64", dtypes.int64: "i64", dtypes.float64: "f64"}


def _sort_routine(kind: str) -> Routine:
    def names(call: ExternCall) -> tuple[str, ...]:
        return (f"{NATIVE_PREFIX}{kind}_{_SORT_SUFFIX[call.dtype]}",)

    def calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
        n, room = call.params
        rows = math.prod(call.results[0][0][:-1])
        nb = len(call.batch)
        data = [_ptr(outs[0], nb)] if kind == "sort" else [_ptr(ins[0], nb), _ptr(outs[0], nb)]
        return [Call(0, (*data, _ptr(outs[1], nb), Int(rows), Int(n), Int(room)))]

    def flops(call: ExternCall) -> int:
        n = call.params[0]
        return call.batch_size * math.prod(call.results[0][0]) * max(1, n.bit_length())
    return Routine(names, calls, flops, library="native", rows=True)


def _select_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    n, nkth = call.params
    rows = math.prod(call.results[0][0][:-1])
    nb = len(call.batch)
    return [Call(0, (_ptr(outs[0], nb), _ptr(ins[1], nb), Int(rows), Int(n), Int(nkth)))]


# Python functions called from native code (numfn.debug.print and numfn.debug.callback; numfn/trace/callback.py):
# symbol CALLBACK_PREFIX + the call's key (params[0]), whose address (a ctypes trampoline made while tracing) the
# externs table takes from numfn.extern's registry of callbacks. Arguments: the result (a bool the callback sets to
# False: the call's token, which orders it among others), then every input, all by pointer.
CALLBACK_PREFIX = "pycallback:"


def is_effect(u) -> bool:
    """Whether node `u` is a call made for its effect (a Python callback): it runs where it was traced (never hoisted
    out of a loop or a branch whose values it does not read) and is never dropped."""
    return isinstance(u.arg, ExternCall) and u.arg.routine == "callback"


def _callback_calls(call: ExternCall, ins: list[Operand], outs: list[Operand]) -> list[Call]:
    nb = len(call.batch)
    return [Call(0, tuple(_ptr(op, nb) for op in (*outs, *ins)))]


ROUTINES: dict[str, Routine] = {
    # a Python callback, params (key,): inputs the arrays it receives (and the previous token), result a bool token
    "callback": Routine(lambda call: (CALLBACK_PREFIX + call.params[0],), _callback_calls,
                        lambda call: call.batch_size, library="python"),
    "sort": _sort_routine("sort"),
    "argsort": _sort_routine("argsort"),
    # np.partition, params (n, nkth): results data (..., n) <- input 0; input 1: the kth positions (nkth,), ascending
    "select": Routine(lambda call: (f"{NATIVE_PREFIX}select_{_SORT_SUFFIX[call.dtype]}",), _select_calls,
                      lambda call: 2 * call.batch_size * math.prod(call.results[0][0]), library="native", rows=True),
    "gemm": Routine(lambda call: (_prefix(call) + "gemm",), _gemm_calls,
                    lambda call: (8 if call.dtype.is_complex else 2) * call.batch_size * math.prod(call.params),
                    _gemm_accepts),
    # a matrix times a vector (params as gemm's, m or n 1): GEMM of one row or column is several times slower
    "gemv": Routine(lambda call: (_prefix(call) + "gemv",), _gemv_calls,
                    lambda call: (8 if call.dtype.is_complex else 2) * call.batch_size * math.prod(call.params),
                    _gemv_accepts),
    # X X^T (params n, k): one triangle of the symmetric result (the upper, row-major), half GEMM's work
    "syrk": Routine(lambda call: (_prefix(call) + "syrk",), _syrk_calls,
                    lambda call: call.batch_size * call.params[0] ** 2 * call.params[1], _syrk_accepts),
    # A X = B: results lu (n, n) <- input 0, x (nrhs, n) <- input 1, ipiv (n,), info
    "gesv": _lapack("gesv", lambda c, P: (Int(c.params[0]), Int(c.params[1]), P(0), Int(_one(c.params[0])), P(2),
                                          P(1), Int(_one(c.params[0])), P(3))),
    # LU: results lu (n, n) <- input 0, ipiv (n,), info
    "getrf": _lapack("getrf", lambda c, P: (Int(c.params[0]), Int(c.params[0]), P(0), Int(_one(c.params[0])), P(1),
                                            P(2))),
    # Cholesky, params (n, uplo): results c (n, n) <- input 0, info
    "potrf": _lapack("potrf", lambda c, P: (Char(c.params[1]), Int(c.params[0]), P(0), Int(_one(c.params[0])), P(1))),
    # symmetric eigensolver, params (n, jobz, lwork, liwork): results v (n, n) <- input 0, w (n,), work, iwork, info
    "syevd": _lapack("syevd", lambda c, P: (Char(c.params[1]), Char("L"), Int(c.params[0]), P(0),
                                            Int(_one(c.params[0])), P(1), P(2), Int(c.params[2]), P(3),
                                            Int(c.params[3]), P(4))),
    # SVD, params (m, n, jobz, ldu, ldvt, lwork): results a (n, m) <- input 0, s (k,), u, vt, work, iwork, info
    "gesdd": _lapack("gesdd", lambda c, P: (Char(c.params[2]), Int(c.params[0]), Int(c.params[1]), P(0),
                                            Int(_one(c.params[0])), P(1), P(2), Int(c.params[3]), P(3),
                                            Int(c.params[4]), P(4), Int(c.params[5]), P(5), P(6))),
    # QR, params (m, n, lwork): results qr (n, m) <- input 0, tau (k,), work, info
    "geqrf": _lapack("geqrf", lambda c, P: (Int(c.params[0]), Int(c.params[1]), P(0), Int(_one(c.params[0])), P(1),
                                            P(2), Int(c.params[2]), P(3))),
    # Q from QR's reflectors, params (m, q, k, lwork): inputs reflectors (q, m), tau (k,); results q (q, m) <- input
    # 0, work, info
    "orgqr": _lapack("orgqr", lambda c, P: (Int(c.params[0]), Int(c.params[1]), Int(c.params[2]), P(0),
                                            Int(_one(c.params[0])), P(-2), P(1), Int(c.params[3]), P(2))),
    # least squares, params (m, n, nrhs, rcond, lwork, liwork): inputs a (n, m), b (nrhs, max(m, n)); results
    # a (n, m) <- input 0, x (nrhs, max(m, n)) <- input 1, s (k,), rank, work, iwork, info
    "gelsd": _lapack("gelsd", lambda c, P: (Int(c.params[0]), Int(c.params[1]), Int(c.params[2]), P(0),
                                            Int(_one(c.params[0])), P(1), Int(_one(max(c.params[0], c.params[1]))),
                                            P(2), Real(c.params[3]), P(3), P(4), Int(c.params[4]), P(5), P(6))),
    # complex routines (z; c for complex64) whose arguments differ from the real ones': a real workspace (rwork)
    # besides the complex one, real eigenvalues and singular values
    # Hermitian eigensolver, params (n, jobz, lwork, lrwork, liwork): results v (n, n) <- input 0, w (n,) real, work,
    # rwork, iwork, info
    "heevd": _lapack("heevd", lambda c, P: (Char(c.params[1]), Char("L"), Int(c.params[0]), P(0),
                                            Int(_one(c.params[0])), P(1), P(2), Int(c.params[2]), P(3),
                                            Int(c.params[3]), P(4), Int(c.params[4]), P(5))),
    # complex SVD, params (m, n, jobz, ldu, ldvt, lwork): results a (n, m) <- input 0, s (k,) real, u, vt, work,
    # rwork, iwork, info
    "gesdd_complex": _lapack("gesdd", lambda c, P: (Char(c.params[2]), Int(c.params[0]), Int(c.params[1]), P(0),
                                                    Int(_one(c.params[0])), P(1), P(2), Int(c.params[3]), P(3),
                                                    Int(c.params[4]), P(4), Int(c.params[5]), P(5), P(6), P(7))),
    # complex Q from QR's reflectors: orgqr's arguments
    "ungqr": _lapack("ungqr", lambda c, P: (Int(c.params[0]), Int(c.params[1]), Int(c.params[2]), P(0),
                                            Int(_one(c.params[0])), P(-2), P(1), Int(c.params[3]), P(2))),
    # complex least squares, params (m, n, nrhs, lwork): inputs a (n, m), b (nrhs, max(m, n)), rcond (a float64
    # scalar, by reference: a Real argument of a complex call would be complex); results a (n, m) <- input 0,
    # x <- input 1, s (k,) real, rank, work, rwork, iwork, info
    "gelsd_complex": _lapack("gelsd", lambda c, P: (Int(c.params[0]), Int(c.params[1]), Int(c.params[2]), P(0),
                                                    Int(_one(c.params[0])), P(1),
                                                    Int(_one(max(c.params[0], c.params[1]))), P(2), P(-3), P(3),
                                                    P(4), Int(c.params[3]), P(5), P(6), P(7))),
    # general eigensolver (right eigenvectors only), params (n, jobvr, ldvr, lwork): results a (n, n) <- input 0,
    # wr (n,), wi (n,), vr (n, n) (jobvr "V"; else scratch), work, info. (vl is not referenced: jobvl "N")
    "geev": _lapack("geev", lambda c, P: (Char("N"), Char(c.params[1]), Int(c.params[0]), P(0), Int(_one(c.params[0])),
                                          P(1), P(2), P(3), Int(1), P(3), Int(c.params[2]), P(4), Int(c.params[3]),
                                          P(5))),
    # complex general eigensolver, params (n, jobvr, ldvr, lwork): results a (n, n) <- input 0, w (n,), vr, work,
    # rwork (2n,) real, info
    "geev_complex": _lapack("geev", lambda c, P: (Char("N"), Char(c.params[1]), Int(c.params[0]), P(0),
                                                  Int(_one(c.params[0])), P(1), P(2), Int(1), P(2), Int(c.params[2]),
                                                  P(3), Int(c.params[3]), P(4), P(5))),
}
